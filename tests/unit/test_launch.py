import json

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from pgarena.aws.launch import (
    LAUNCH_ATTEMPTS,
    LAUNCH_BACKOFF_CAP_S,
    EcsLauncher,
    capacity_failures,
    client_token,
    run_task_request,
)
from pgarena.aws.settings import LauncherEnv
from pgarena.model.plan import Step
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES, ROOT

ENV = LauncherEnv(
    RESULTS_BUCKET="b",
    RESULTS_TABLE="t",
    CLUSTER_ARN="arn:cluster",
    TASK_DEFINITION_ARN="arn:td",
    WORKER_SUBNETS="subnet-1, subnet-2",
    WORKER_SECURITY_GROUPS="sg-1",
)


def step(placement=None) -> Step:
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    if placement:
        data["targets"][0]["placement"] = placement
    return plan_campaign(parse_campaign(data), "cid").targets[0].steps[1]


def environment(request) -> dict:
    return {e["name"]: e["value"] for e in request["overrides"]["containerOverrides"][0]["environment"]}


def test_worker_gets_the_step_and_token_by_environment():
    request = run_task_request(step(), "token-1", ENV)
    env = environment(request)
    assert Step.model_validate_json(env["PGARENA_STEP"]).step_id == "a/tpcb/c4-r1"
    assert env["PGARENA_TASK_TOKEN"] == "token-1"
    assert request["taskDefinition"] == "arn:td" and request["launchType"] == "FARGATE"


def test_default_subnets_from_the_stack():
    request = run_task_request(step(), "t", ENV)
    assert request["networkConfiguration"]["awsvpcConfiguration"]["subnets"] == ["subnet-1", "subnet-2"]


def test_target_placement_wins_so_load_comes_from_next_to_the_database():
    request = run_task_request(step({"subnets": ["subnet-db"], "security_groups": ["sg-db"]}), "t", ENV)
    vpc = request["networkConfiguration"]["awsvpcConfiguration"]
    assert (vpc["subnets"], vpc["securityGroups"], vpc["assignPublicIp"]) == (["subnet-db"], ["sg-db"], "DISABLED")


def test_a_retried_launch_reuses_its_client_token_and_a_new_attempt_gets_another():
    s = step()
    first, retried = run_task_request(s, "token-1", ENV), run_task_request(s, "token-1", ENV)
    assert first["clientToken"] == retried["clientToken"] == client_token(s, "token-1")
    assert len(first["clientToken"]) <= 64  # ECS's limit
    assert run_task_request(s, "token-2", ENV)["clientToken"] != first["clientToken"]


def test_spot_uses_the_capacity_provider_instead_of_a_launch_type():
    spot = ENV.model_copy(update={"capacity_provider": "FARGATE_SPOT"})
    request = run_task_request(step(), "token-1", spot)
    assert request["capacityProviderStrategy"] == [{"capacityProvider": "FARGATE_SPOT", "weight": 1}]
    assert "launchType" not in request


# --- retries on throttling and capacity ---------------------------------------------------------------------

CAPACITY = {
    "arn": "arn:td",
    "reason": "Capacity is unavailable at this time. Please try again later or in a different availability zone",
}


def _ecs_stub():
    # botocore's own retries off: what is tested is the launcher's
    ecs = boto3.client(
        "ecs",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )
    return ecs, Stubber(ecs)


def test_a_launch_out_of_capacity_is_asked_again_with_a_new_token_after_a_jittered_backoff():
    # Given ECS out of capacity once, throttled once, then starting the task
    s = step()
    ecs, stub = _ecs_stub()
    stub.add_response("run_task", {"tasks": [], "failures": [CAPACITY]})
    stub.add_client_error("run_task", service_error_code="ThrottlingException", http_status_code=400)
    stub.add_response("run_task", {"tasks": [{"taskArn": "arn:task/1"}], "failures": []})
    slept: list[float] = []

    # When launching
    with stub:
        arn, failures = EcsLauncher(ecs, ENV, sleep=slept.append).launch(s, "token-1")

    # Then the task started, after two waits within their caps
    assert (arn, failures) == ("arn:task/1", [])
    assert len(slept) == 2 and all(0 <= w <= LAUNCH_BACKOFF_CAP_S for w in slept)


def test_each_capacity_retry_has_its_own_client_token_and_a_throttled_one_keeps_it():
    s = step()
    assert client_token(s, "t", 0) == client_token(s, "t") != client_token(s, "t", 1)
    assert run_task_request(s, "t", ENV, attempt=2)["clientToken"] == client_token(s, "t", 2)


def test_a_launch_still_out_of_capacity_returns_the_failures_for_the_state_machine_to_retry():
    s = step()
    ecs, stub = _ecs_stub()
    for _ in range(LAUNCH_ATTEMPTS):
        stub.add_response("run_task", {"tasks": [], "failures": [CAPACITY]})
    with stub:
        arn, failures = EcsLauncher(ecs, ENV, sleep=lambda s: None).launch(s, "token-1")
    assert arn is None and failures == [CAPACITY]


def test_a_refused_launch_is_not_retried_here():
    s = step()
    ecs, stub = _ecs_stub()
    stub.add_response("run_task", {"tasks": [], "failures": [{"arn": "arn:td", "reason": "MISSING"}]})
    with stub:
        arn, failures = EcsLauncher(ecs, ENV, sleep=lambda s: pytest.fail("no wait expected")).launch(s, "token-1")
    assert arn is None and failures[0]["reason"] == "MISSING"


@pytest.mark.parametrize(
    ("reason", "transient"),
    [
        (CAPACITY["reason"], True),
        ("RESOURCE:CPU", True),
        ("You've reached the limit on the number of vCPUs you can run concurrently", True),
        ("MISSING", False),
        ("ATTRIBUTE", False),
    ],
)
def test_capacity_reasons_are_told_from_refusals(reason, transient):
    assert capacity_failures([{"reason": reason}]) is transient


def test_every_lambda_task_retries_throttling_with_full_jitter_and_the_launch_longest():
    asl = json.loads((ROOT / "statemachines" / "campaign.asl.json").read_text())

    def retriers(node):
        if isinstance(node, dict):
            for name, state in node.get("States", {}).items():
                for retrier in state.get("Retry", []):
                    yield name, retrier
            for value in node.values():
                yield from retriers(value)
        elif isinstance(node, list):
            for item in node:
                yield from retriers(item)

    throttled = [(n, r) for n, r in retriers(asl) if "Lambda.TooManyRequestsException" in r["ErrorEquals"]]
    assert {n for n, _ in throttled} >= {"Validate And Plan", "Preflight Target", "Run Worker Task", "Aggregate And Rank"}
    for _, retrier in throttled:
        assert retrier["JitterStrategy"] == "FULL" and retrier["MaxAttempts"] >= 6 and retrier["MaxDelaySeconds"] >= 30
    # LaunchFailed comes after launch_worker's own retries on capacity: three more, up to 20 s apart
    (launch,) = [r for n, r in retriers(asl) if n == "Run Worker Task" and "LaunchFailed" in r["ErrorEquals"]]
    assert (launch["MaxAttempts"], launch["MaxDelaySeconds"], launch["JitterStrategy"]) == (3, 20, "FULL")
