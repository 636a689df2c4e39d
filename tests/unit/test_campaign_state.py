"""What the states keep out of the execution's state (pgarena.aws.campaign_state): the plan, preflight's
steps and the outcome items, and the outcomes rebuilt from them as the state machine's Maps used to return them."""

import json

import boto3
import pytest
from moto import mock_aws

from pgarena.aws import access
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.items import marshal
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.campaign.claim import claim
from pgarena.campaign.outcomes import target_outcomes
from pgarena.model import layout
from pgarena.model.budget import ConnectionFacts
from pgarena.model.errors import CampaignExists
from pgarena.model.matrix import ConnectionPolicy
from pgarena.model.plan import PlannedTarget, PreflightResult
from pgarena.model.results import ServerInfo
from pgarena.planning.budget import compute_budget
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.planning.shards import shard
from tests.conftest import FIXTURES


def preflight_result(target: PlannedTarget) -> PreflightResult:
    """What preflight answers for a target whose server has room for every step."""
    facts = ConnectionFacts(max_connections=100, role="u", database="d", role_is_superuser=True)
    budget = compute_budget(facts, ConnectionPolicy(safety_margin=0))
    server = ServerInfo(
        version="PostgreSQL 16",
        version_num=160000,
        max_connections=100,
        facts=facts,
        budget=budget,
        allowed=90,
        connections_needed=4,
    )
    return PreflightResult(server=server, steps=[shard(step) for step in target.steps])


def sharded_plan(targets=("a", "b", "c")):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    endpoint = data["targets"][0]
    data["targets"] = [{**endpoint, "name": name} for name in targets]
    data["workloads"][0]["run"] |= {"clients": 4, "workers": 2, "duration_s": 5, "percentiles": True}
    data["workloads"][0]["run"].pop("transactions", None)
    return plan_campaign(parse_campaign(data), "cid")


def failure(error: str) -> str:
    return json.dumps({"Error": error, "Cause": json.dumps({"errorMessage": f"{error} happened"})})


def test_outcomes_are_rebuilt_from_preflight_and_the_recorded_items():
    # Given a finished target with one failed shard, a target failed at preflight, and one stopped mid-way
    plan = sharded_plan()
    phase = plan.phases[0]
    index = {t.name: i for i, t in enumerate(phase.targets)}
    preflights = {(1, index[n]): preflight_result(phase.targets[index[n]]) for n in ("a", "c")}
    items = {
        layout.outcome_target_sk(1, index["a"]): {},
        layout.outcome_shard_sk(1, index["a"], 1, 1): {"failure": failure("WorkerCrashed")},
        layout.outcome_target_sk(1, index["b"]): {"failure": failure("BudgetRefused")},
        layout.outcome_shard_sk(1, index["c"], 1, 0): {"failure": failure("States.HeartbeatTimeout")},
    }

    # When the outcomes are rebuilt
    outcomes = {o.name: o for o in target_outcomes(plan, preflights, items)}

    # Then a's shards succeeded but the recorded one; b failed with no steps; c has only its recorded failure
    a = outcomes["a"]
    assert a.failure is None and a.phase == 1 and a.server is not None
    assert [(s.step_id, s.status) for s in a.steps] == [
        ("a/tpcb/init", "succeeded"),
        ("a/tpcb/c4-r1/s0", "succeeded"),
        ("a/tpcb/c4-r1/s1", "failed"),
    ]
    assert a.steps[2].failure["Error"] == "WorkerCrashed"
    assert outcomes["b"].failure["Error"] == "BudgetRefused" and outcomes["b"].steps == [] and outcomes["b"].server is None
    assert [(s.step_id, s.status) for s in outcomes["c"].steps] == [("c/tpcb/c4-r1/s0", "failed")]
    assert outcomes["c"].failure is None


def test_a_target_never_reached_has_no_outcome():
    plan = sharded_plan(("a",))
    assert target_outcomes(plan, {}, {}) == []


@pytest.fixture
def state(aws_credentials):
    with mock_aws():
        s3, dynamodb = boto3.client("s3"), boto3.client("dynamodb")
        s3.create_bucket(Bucket="results")
        create_results_table(dynamodb, "t")
        yield CampaignState(ResultStore("results", "t", s3=s3, dynamodb=dynamodb))


def test_the_plan_is_claimed_by_its_execution_and_read_back(state):
    # Given a campaign planned by execution e1
    plan = sharded_plan()
    claim(state.store, state, "cid", "e1", "fix")
    state.put_plan(plan, "e1")

    # When e1's Validate is retried, and when e2 asks for the same id
    claim(state.store, state, "cid", "e1", "fix")
    with pytest.raises(CampaignExists, match=r"campaign id 'cid' is already used \(s3://results/cid/state/plan.json\): fix"):
        claim(state.store, state, "cid", "e2", "fix")

    # Then the plan reads back whole, by its owner
    assert state.plan("cid") == plan and state.plan_owner("cid") == "e1"


def test_two_executions_given_one_new_id_at_once_cannot_both_take_it(state):
    # Given two executions that both found the id free (no file, no item: the check before the claim)
    assert state.store.campaign_traces("cid") == []
    # When both claim it, e1 first (a check-then-put let both through)
    claim(state.store, state, "cid", "e1", "fix")
    # Then e2 is refused, naming the execution that holds the id; e1's retried Validate is not
    with pytest.raises(CampaignExists, match=r"campaign id 'cid' is already used \(claimed by execution e1\): fix"):
        claim(state.store, state, "cid", "e2", "fix")
    claim(state.store, state, "cid", "e1", "fix")
    assert state.claim_id("cid", "e2") == "e1" and state.claim_id("cid", "e1") is None


def test_an_outcome_item_makes_the_id_in_use(state):
    state.store.dynamodb.put_item(TableName="t", Item=marshal({"pk": access.OUTCOMES.pk("cid"), "sk": "x"}))
    with pytest.raises(CampaignExists, match="target and worker outcomes"):
        claim(state.store, state, "cid", "e1", "fix")


def test_what_the_states_kept_is_read_back_for_aggregate(state):
    # Given the plan, one preflight's answer and the state machine's items
    plan = sharded_plan()
    state.put_plan(plan, "e1")
    state.put_preflight("cid", 1, 0, preflight_result(plan.phases[0].targets[0]))
    state.store.dynamodb.put_item(
        TableName="t", Item=marshal({"pk": access.OUTCOMES.pk("cid"), "sk": layout.outcome_target_sk(1, 0)})
    )

    # When read back
    recorded_plan, cost, preflights = state.recorded("cid")
    outcomes = state.outcomes(recorded_plan, preflights)

    # Then the first target finished, every shard succeeded; the others were never reached
    assert cost is None and list(preflights) == [(1, 0)]
    (outcome,) = outcomes
    assert outcome.name == plan.phases[0].targets[0].name and {s.status for s in outcome.steps} == {"succeeded"}
