"""The cost guard through the real state machine in the local runtime: caps hold before any worker starts."""

import json
import time

import pytest

from functions.start_campaign.handler import handler as start_campaign
from pgarena.aws.ledger import Ledger
from pgarena.campaign.cost_guard import month_of
from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.endpoints import LambdaContext
from pgarena.local.runtime import BUCKET, TABLE, Execution, LocalRuntime
from pgarena.planning.campaign import parse_campaign
from tests.ports import refused_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server():
    pg = EmbeddedProcess("costcap", {})
    yield pg.start()
    pg.stop()


@pytest.fixture
def runtime(tmp_path):
    # A runtime per test: each starts with an empty ledger, as a fresh account would.
    with LocalRuntime(tmp_path / "results") as rt:
        yield rt


def matrix(name, endpoint, hourly_cost_usd, **cost):
    return {
        "campaign": name,
        "targets": [
            {
                "name": "small",
                "provider": "self-hosted",
                "hourly_cost_usd": hourly_cost_usd,
                "endpoint": {"host": endpoint.host, "port": endpoint.port, "user": "postgres", "sslmode": "disable"},
            },
            {
                "name": "large",
                "provider": "self-hosted",
                "hourly_cost_usd": hourly_cost_usd * 4,
                "endpoint": {"host": endpoint.host, "port": endpoint.port, "user": "postgres", "sslmode": "disable"},
            },
        ],
        "connections": {"monitor_interval_s": 0.5},
        "workloads": [
            {
                "name": "sel",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": 2, "jobs": 1, "duration_s": 2, "builtin": "select-only", "progress_s": 1},
            }
        ],
        "cost": cost,
    }


def unreachable():
    """An endpoint nobody listens on: a refused campaign must never try it."""
    return type("Endpoint", (), {"host": "127.0.0.1", "port": refused_port()})()


def states_entered(runtime, execution):
    history = runtime.sfn.get_execution_history(executionArn=execution.arn, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]


def raw_objects(runtime, campaign_id):
    listing = runtime.s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{campaign_id}/raw/")
    return [item["Key"] for item in listing.get("Contents", [])]


def assert_refused_before_any_worker(runtime, execution, run, workers_before, reason):
    assert run.status == "SUCCEEDED", run.error
    # Every target is listed failed with the guard's reason
    assert [(t.name, t.status, t.error.kind) for t in run.results.targets] == [
        ("small", "failed", "cost_cap_refused"),
        ("large", "failed", "cost_cap_refused"),
    ]
    assert all(reason in t.error.message for t in run.results.targets)
    assert run.results.ranking == [] and run.results.cost.refused is not None
    # No target was touched and no worker started: no preflight, no task, no raw output
    entered = states_entered(runtime, execution)
    assert "Refuse Campaign" in entered and "Benchmark Targets" not in entered and "Preflight Target" not in entered
    assert len(runtime.workers.processes) == workers_before
    assert raw_objects(runtime, execution.campaign_id) == []
    assert not (run.results_dir / "raw").exists()


def test_over_cap_campaign_is_refused_before_any_worker_starts(runtime):
    # Given a campaign whose targets alone cost more than its $0.01 cap
    campaign = parse_campaign(matrix("overcap", unreachable(), hourly_cost_usd=10.0, cap_usd=0.01))
    workers_before = len(runtime.workers.processes)

    # When it runs through the state machine
    execution = runtime.start(campaign)
    run = runtime.wait(execution)

    # Then it ends with results.json, every target refused with the estimate in the message
    estimate = run.results.cost.estimated_usd
    assert estimate > 0.01
    assert_refused_before_any_worker(
        runtime, execution, run, workers_before, f"estimated ${estimate:.2f} exceeds the campaign cap $0.01"
    )
    # And the ledger keeps the refusal without counting it
    ledger = Ledger(runtime.dynamodb, TABLE)
    month = run.results.cost.month
    assert ledger.entry(month, execution.campaign_id).status == "refused"
    assert ledger.total(month) == 0.0


def test_monthly_cap_blocks_a_scheduled_campaign_once_the_month_is_spent(runtime, monkeypatch):
    # Given a month whose $100 budget an earlier scheduled campaign already holds
    ledger = Ledger(runtime.dynamodb, TABLE)
    month = month_of(time.time())
    assert ledger.book(month, "nightly-earlier", 99.99, monthly_cap_usd=100.0, schedule="nightly").booked

    # And tonight's matrix, under its own campaign cap, kept in S3 for the schedule
    key = "matrices/nightly.json"
    body = matrix("nightly", unreachable(), hourly_cost_usd=1.0, cap_usd=5.0, monthly_cap_usd=100.0)
    runtime.s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(body).encode())
    workers_before = len(runtime.workers.processes)

    # When the scheduler fires: start_campaign reads the matrix and starts the execution
    monkeypatch.setenv("STATE_MACHINE_ARN", runtime.machine_arn)
    started = start_campaign(
        {"schedule": "nightly", "matrix_s3_key": key, "scheduled_time": "2026-11-26T02:00:00Z"},
        LambdaContext(function_name="pgarena-start-campaign"),
    )
    campaign_id = "nightly-20261126T020000Z"
    execution = Execution(campaign_id, started["execution_arn"], runtime.out_dir / campaign_id, time.monotonic())
    run = runtime.wait(execution)

    # Then the monthly cap refuses it before any worker starts, and the month's total is unchanged
    assert_refused_before_any_worker(runtime, execution, run, workers_before, "past the monthly cap $100.00")
    entry = ledger.entry(month, campaign_id)
    assert (entry.status, entry.schedule) == ("refused", "nightly")
    assert ledger.total(month) == pytest.approx(99.99)


def test_campaign_under_its_caps_runs_and_the_ledger_gets_estimate_and_actual(runtime, server):
    # Given a campaign well under its caps, against a real server
    campaign = parse_campaign(matrix("undercap", server, hourly_cost_usd=0.5, cap_usd=5.0, monthly_cap_usd=100.0))

    # When it runs
    execution = runtime.start(campaign)
    run = runtime.wait(execution)

    # Then both targets ran, each on one warm worker (whether both are ranked is not this test's subject: on a
    # loaded machine a 2 s run can stall or its round trips drift apart, and is then rightly left unranked)
    assert run.status == "SUCCEEDED", run.error
    assert [t.status for t in run.results.targets] == ["succeeded", "succeeded"], [t.error for t in run.results.targets]
    assert all(t.workloads[0].tps > 0 for t in run.results.targets)
    assert len(runtime.workers.processes) == 2  # one warm worker per target and phase
    # And the ledger holds the estimate booked at the start and the actual recorded at the end
    cost = run.results.cost
    entry = Ledger(runtime.dynamodb, TABLE).entry(cost.month, execution.campaign_id)
    assert (entry.status, entry.estimated_usd, entry.actual_usd) == ("settled", cost.estimated_usd, cost.actual_usd)
    assert 0 < cost.actual_usd < cost.estimated_usd <= 5.0  # 2 s runs cost less than the model's expectation
    # And the actual counts the workers the steps recorded: one per target here, as the estimate's slots
    recorded = {s.worker.worker_id for s in runtime.store.summaries(execution.campaign_id)}
    assert cost.actual_workers == len(recorded) == 2
    assert Ledger(runtime.dynamodb, TABLE).total(cost.month) == pytest.approx(cost.actual_usd)
