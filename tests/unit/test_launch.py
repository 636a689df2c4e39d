import json

from pgarena.aws.launch import client_token, run_task_request
from pgarena.aws.settings import LauncherEnv
from pgarena.model.plan import Step
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES

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
