"""The cost guard's handler, and a refused campaign's results: every target failed with the reason."""

import json

import boto3
import pytest
from moto import mock_aws

from functions.cost_guard.handler import handler
from pgarena.analysis.aggregate import aggregate
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.local.endpoints import LambdaContext
from pgarena.model import layout
from pgarena.model.errors import ErrorInfo
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES


def plan_two_targets(**cost_policy):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"][1] = {**data["targets"][0], "name": "b"}
    for target in data["targets"]:
        target["hourly_cost_usd"] = 50.0
    data["cost"] = cost_policy
    return plan_campaign(parse_campaign(data), "cid")


@pytest.fixture
def aws(monkeypatch, aws_credentials):
    for name, value in {
        "AWS_REGION": "us-east-1",
        "RESULTS_BUCKET": "results",
        "RESULTS_TABLE": "t",
        "WORKER_CPU_UNITS": "2048",
        "WORKER_MEMORY_MIB": "4096",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        create_results_table(boto3.client("dynamodb"), "t")
        boto3.client("s3").create_bucket(Bucket="results")
        yield ResultStore("results", "t")


def invoke(plan):
    """The guard reads the plan Validate And Plan kept, answers the state machine `allowed`, and keeps the
    whole decision for Aggregate And Rank: here, the decision it kept."""
    store = ResultStore("results", "t")
    CampaignState(store).put_plan(plan, "e1")
    answer = handler({"campaign_id": plan.campaign_id}, LambdaContext(function_name="pgarena-cost-guard"))
    decision = store.get_json(layout.cost_key(plan.campaign_id))
    assert answer == {"allowed": decision["allowed"]}
    return decision


def test_handler_refuses_over_the_cap_with_a_json_decision(aws):
    # Given a campaign whose two $50/h targets exceed a $1 cap
    decision = invoke(plan_two_targets(cap_usd=1.0))

    # Then the state machine gets allowed=false, the estimate and the reason
    assert decision["allowed"] is False and decision["booked"] is False
    assert decision["estimate"]["total_usd"] > 1.0
    assert decision["reason"].startswith(f"estimated ${decision['estimate']['total_usd']:.2f} exceeds the campaign cap $1.00")


def test_handler_prices_the_worker_size_from_its_environment(aws):
    decision = invoke(plan_two_targets())
    assert decision["allowed"] is True
    assert (decision["estimate"]["worker_vcpu"], decision["estimate"]["worker_memory_gb"]) == (2.0, 4.0)


def test_refused_campaign_lists_every_target_failed_with_the_reason():
    # Given a plan the cost guard refused
    plan = plan_two_targets(cap_usd=1.0)
    refusal = ErrorInfo(kind="cost_cap_refused", message="estimated $3.20 exceeds the campaign cap $1.00")

    # When aggregated with no outcomes (no target ran)
    results = aggregate(plan, [], [], "t0", "t1", refusal=refusal)

    # Then every target failed with the refusal, every step is marked not run, and nothing is ranked
    assert [(t.name, t.status, t.error) for t in results.targets] == [("a", "failed", refusal), ("b", "failed", refusal)]
    assert {w.error.kind for t in results.targets for w in t.workloads} == {"not_run"}
    assert results.ranking == []
