import json

from pgarena.aws.launch import run_task_request
from pgarena.aws.settings import LauncherEnv
from pgarena.model.matrix import parse_campaign
from pgarena.model.plan import Step
from pgarena.planning.plan import plan_campaign
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
