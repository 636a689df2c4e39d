"""One way to finish a campaign: finalize settles the ledger, releases leases and publishes results,
whether the state machine reached Aggregate And Rank or was stopped (cancel, abort)."""

import json
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.leases import LeaseStore
from pgarena.aws.ledger import Ledger
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.campaign.cost_guard import check_cost, month_of
from pgarena.campaign.finalize import CampaignEnd, StoppedExecution, finalize, finalize_stopped
from pgarena.campaign.leases import Request, holder_id, lease_key
from pgarena.campaign.ports import EndPorts
from pgarena.model.history import HISTORY
from pgarena.model.ledger import WorkerPricing
from pgarena.model.results import CampaignResults, now_iso
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.report import REPORT_FILES
from tests.conftest import FIXTURES

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def aws(aws_credentials):
    with mock_aws():
        dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
        create_results_table(dynamodb, "t")
        s3.create_bucket(Bucket="results")
        yield dynamodb, ResultStore("results", "t", s3=s3, dynamodb=dynamodb)


class GivenHistory:
    """The Executions port's history read, of executions whose events are given as Step Functions writes them."""

    def __init__(self, events):
        self.events = HISTORY.validate_python([{"id": i, "type": "Given", **e} for i, e in enumerate(events, 1)])
        self.read: list[str] = []

    def history(self, execution_arn):
        self.read.append(execution_arn)
        return self.events


def execution(name, ending, started_at=None):
    return StoppedExecution(f"arn:aws:states:us-east-1:123456789012:execution:campaign:{name}", ending, started_at or now_iso())


def stopped(aws, history, ending, execution_name, started_at=None):
    """finalize_stopped on the table's adapters, without a ledger (nothing was booked)."""
    dynamodb, store = aws
    ports = EndPorts(store, leases=LeaseStore(dynamodb, "t"))
    finalized = finalize_stopped(
        execution(execution_name, ending, started_at), CampaignState(store), GivenHistory(history), ports
    )
    return finalized.results if finalized is not None else None


def plan():
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]  # the endpoint target: AWS plans have no embedded ones
    data["targets"][0]["hourly_cost_usd"] = 2.0
    data["cost"] = {"monthly_cap_usd": 100.0}
    return plan_campaign(parse_campaign(data), "cid")


def booked(dynamodb, p):
    """The cost guard's decision for `p`, booked in the month's ledger as Check Cost Cap does."""
    ledger = Ledger(dynamodb, "t", clock=lambda: NOW)
    decision = check_cost(p, ledger, WorkerPricing(cpu_units=1024, memory_mib=2048, default_region="us-east-1"))
    assert decision.booked and ledger.entry(decision.month, p.campaign_id).status == "booked"
    return ledger, decision


def test_a_stopped_campaign_settles_its_estimate_releases_its_leases_and_publishes(aws):
    dynamodb, store = aws
    p = plan()
    ledger, decision = booked(dynamodb, p)
    leases = LeaseStore(dynamodb, "t")
    target = p.targets[0]
    assert leases.acquire(lease_key(target.endpoint), Request(holder_id("cid", target.name)), 4, 10, 600)
    # What its states kept: the plan (execution e1's) and the cost decision
    state = CampaignState(store)
    state.put_plan(p, "e1")
    state.put_cost(decision)
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    history = [{"executionStartedEventDetails": {"input": json.dumps({"campaign_id": "cid", "matrix": data})}}]

    executions = GivenHistory(history)
    finalized = finalize_stopped(
        execution("e1", "cancelled"), CampaignState(store), executions, EndPorts(store, ledger=ledger, leases=leases)
    )
    results = finalized.results

    # The execution's history was read through the Executions port
    assert executions.read == ["arn:aws:states:us-east-1:123456789012:execution:campaign:e1"]
    assert finalized.results_key == "cid/results.json" and set(finalized.reports) == set(REPORT_FILES)

    # The month carries what ran (the target's hourly cost for the seconds it took), no longer the estimate
    entry = ledger.entry(month_of(NOW), "cid")
    assert entry.status == "settled" and entry.actual_usd < decision.estimate.total_usd
    assert results.cost is not None and results.cost.actual_usd == entry.actual_usd
    assert leases.read(lease_key(target.endpoint)).holders == []
    kept = CampaignResults.model_validate(store.get_json("cid/results.json"))
    assert kept.status == "cancelled" and {t.name for t in kept.targets} == {t.name for t in p.targets}
    assert all(w.error.kind == "cancelled" for t in kept.targets for w in [*t.loads, *t.workloads])
    assert set(store.keys("cid/")) >= {f"cid/{name}" for name in ("results.json", *REPORT_FILES)}


def test_an_execution_refused_for_another_campaigns_id_leaves_that_campaign_alone(aws):
    # Given campaign "cid" planned by execution e1, and execution e2 that asked for the same id
    _, store = aws
    CampaignState(store).put_plan(plan(), "e1")
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    history = [{"executionStartedEventDetails": {"input": json.dumps({"campaign_id": "cid", "matrix": data})}}]

    # When e2 fails and is finalized / Then nothing is written under the id
    assert stopped(aws, history, "failed", "e2") is None
    assert store.keys("cid/") == ["cid/state/plan.json"]


def test_a_stopped_execution_without_a_plan_leaves_nothing_to_finalize(aws):
    _, store = aws
    invalid = {"executionStartedEventDetails": {"input": json.dumps({"campaign_id": "cid", "matrix": {"targets": []}})}}
    assert stopped(aws, [invalid], "failed", "x", started_at="s") is None
    assert store.keys("") == []


def test_an_execution_stopped_before_validate_answered_lists_its_targets_from_its_input(aws):
    _, store = aws
    p = plan()
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    started = {"executionStartedEventDetails": {"input": json.dumps({"campaign_id": "cid", "matrix": data})}}
    results = stopped(aws, [started], "failed", "x")
    assert results.status == "failed" and [t.name for t in results.targets] == [t.name for t in p.targets]
    assert CampaignResults.model_validate(store.get_json("cid/results.json")).status == "failed"


def test_a_bare_matrix_execution_stopped_before_validate_is_finalized_under_its_execution_name(aws):
    # Given an execution started with a bare matrix, stopped before Validate And Plan answered
    _, store = aws
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    started = {"executionStartedEventDetails": {"input": json.dumps(data)}}

    # When finalize_stopped ends it
    results = stopped(aws, [started], "cancelled", "run-7")

    # Then its campaign is the execution's name
    assert results.campaign_id == "run-7" and store.get_json("run-7/results.json")["status"] == "cancelled"


@pytest.mark.parametrize("refused_at", ["Campaign Id In Use", None])
def test_an_execution_whose_campaign_id_is_in_use_never_touches_that_campaigns_results(aws, refused_at):
    # Given another campaign's results under "cid", and an execution asking for "cid" that Validate refused
    # (or that was stopped before Validate answered)
    _, store = aws
    store.put_json("cid/results.json", {"campaign_id": "cid", "theirs": True})
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    history = [{"executionStartedEventDetails": {"input": json.dumps({"campaign_id": "cid", "matrix": data})}}]
    if refused_at:
        history.append({"stateEnteredEventDetails": {"name": refused_at, "input": "{}"}})

    # When finalize_stopped sees it fail
    results = stopped(aws, history, "failed", "x")

    # Then nothing is finalized and the other campaign's results stay as they were
    assert results is None and store.get_json("cid/results.json") == {"campaign_id": "cid", "theirs": True}


def test_results_json_is_kept_when_a_report_cannot_be_built(aws, monkeypatch):
    _, store = aws
    monkeypatch.setattr("pgarena.report.build_report", lambda results: 1 / 0)
    finalized = finalize(CampaignEnd(plan(), [], "s"), EndPorts(store))
    results, key = finalized.results, finalized.results_key
    assert finalized.reports == [] and key == "cid/results.json"
    assert CampaignResults.model_validate(store.get_json(key)).campaign_id == results.campaign_id == "cid"
