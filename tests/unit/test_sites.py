"""Worker sites: a target's placement.region chooses where its workers launch, and a region the stack has
no site for is refused before anything starts."""

import json
import re

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from pgarena.aws.deployment import SITE_CLUSTER_NAME, SITE_TASK_FAMILY, site_parameter_name
from pgarena.aws.launch import EcsLauncher, run_task_request
from pgarena.aws.settings import LauncherEnv, SitesEnv
from pgarena.aws.sites import WorkerSite, ssm_site_reader
from pgarena.campaign.claim import claim_and_plan
from pgarena.cli import app
from pgarena.model.errors import ErrorKind, InvalidMatrix, PgarenaError
from pgarena.model.plan import Step
from pgarena.model.sites import SiteMap, site_problems
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES
from tests.unit.test_campaign_use_cases import MemoryRecords, MemoryStore

HOME = "us-east-1"
FAR = "eu-west-1"
ENV = LauncherEnv(
    RESULTS_BUCKET="b",
    RESULTS_TABLE="t",
    CLUSTER_ARN="arn:home-cluster",
    TASK_DEFINITION_ARN="arn:home-td",
    WORKER_SUBNETS="subnet-home",
    WORKER_SECURITY_GROUPS="sg-home",
    AWS_REGION=HOME,
    WORKER_SITE_REGIONS=FAR,
    WORKER_TASK_ROLE_ARN="arn:aws:iam::123456789012:role/home-task",
)
FAR_SITE = WorkerSite(
    region=FAR,
    cluster_arn=f"arn:aws:ecs:{FAR}:123456789012:cluster/{SITE_CLUSTER_NAME}",
    task_definition_arn=f"arn:aws:ecs:{FAR}:123456789012:task-definition/{SITE_TASK_FAMILY}:1",
    subnets=["subnet-far"],
    security_groups=["sg-far"],
)


def matrix(*placements: dict | None) -> dict:
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    target = data["targets"][0]
    data["targets"] = []
    for index, placement in enumerate(placements):
        data["targets"].append({**target, "name": f"t{index}", **({"placement": placement} if placement else {})})
    return data


def first_step(placement: dict | None) -> Step:
    return plan_campaign(parse_campaign(matrix(placement)), "cid").targets[0].steps[1]


def environment(request: dict) -> dict:
    return {e["name"]: e["value"] for e in request["overrides"]["containerOverrides"][0]["environment"]}


def test_a_placement_with_no_site_is_refused_naming_the_field_and_the_fix():
    # Given a stack with a site in eu-west-1 besides its home, and targets home, far and nowhere
    campaign = parse_campaign(matrix(None, {"region": FAR}, {"region": "ap-south-1"}, {"region": HOME}))

    # When the placements are checked
    problems = site_problems(campaign, SiteMap(home_region=HOME, regions=frozenset({FAR})))

    # Then only the target in a region without a site is refused, by its JSON path, with both fixes
    assert [p.path for p in problems] == ["$.targets[2].placement.region"]
    message = problems[0].message
    assert "'ap-south-1'" in message and "us-east-1 (home), eu-west-1" in message
    assert '{"region": "ap-south-1"} to pgarena:sites' in message and "npx aws-cdk@2 deploy --all" in message
    assert "remove placement.region" in message


def test_validate_and_plan_refuses_a_region_without_a_site_before_keeping_anything():
    # Given Validate And Plan's environment in a stack without sites
    sites = SitesEnv(RESULTS_BUCKET="b", RESULTS_TABLE="t", AWS_REGION=HOME).sites
    store = MemoryStore()

    # When a matrix places a target in eu-west-1
    with pytest.raises(InvalidMatrix, match=r"targets\[0\]\.placement\.region: t0: the stack has no worker site in 'eu-west-1'"):
        claim_and_plan(matrix({"region": FAR}), "e1", store, MemoryRecords(store), sites)

    # Then nothing was claimed or planned, and the same target placed at home is planned
    assert store.objects == {}
    assert claim_and_plan(matrix({"region": HOME}), "e2", store, MemoryRecords(store), sites).campaign_id == "e2"


def test_a_far_target_is_launched_in_its_site_as_the_home_task_role_reporting_home():
    # Given a step placed in the far region's site
    request = run_task_request(first_step({"region": FAR}), "token", ENV, FAR_SITE)

    # Then the request names that site's cluster, task definition and network, the home task role,
    # and tells the worker where its results go
    vpc = request["networkConfiguration"]["awsvpcConfiguration"]
    assert (request["cluster"], request["taskDefinition"]) == (FAR_SITE.cluster_arn, FAR_SITE.task_definition_arn)
    assert (vpc["subnets"], vpc["securityGroups"]) == (["subnet-far"], ["sg-far"])
    assert request["overrides"]["taskRoleArn"] == ENV.task_role_arn
    assert environment(request)["RESULTS_REGION"] == HOME


def test_a_home_target_keeps_the_home_task_definition_s_own_role():
    request = run_task_request(first_step({"region": HOME}), "token", ENV)
    assert request["cluster"] == "arn:home-cluster" and "taskRoleArn" not in request["overrides"]
    assert environment(request)["RESULTS_REGION"] == HOME


@pytest.fixture
def two_regions():
    """moto with the home cluster and a far site deployed as the CDK app deploys it (parameter included),
    each with its own region's subnet and security group (moto refuses another region's, as ECS does)."""
    with mock_aws():
        clusters, networks = {}, {}
        for region, name in ((HOME, "home"), (FAR, SITE_CLUSTER_NAME)):
            ec2 = boto3.client("ec2", region_name=region)
            vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
            # As the CDK app's VPC has them (moto's ECS also needs them to describe a task's network interface)
            ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
            subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
            group = ec2.create_security_group(GroupName="workers", Description="workers", VpcId=vpc)["GroupId"]
            networks[region] = {"subnets": [subnet], "security_groups": [group]}
            ecs = boto3.client("ecs", region_name=region)
            cluster = ecs.create_cluster(clusterName=name)["cluster"]["clusterArn"]
            definition = ecs.register_task_definition(
                family=SITE_TASK_FAMILY,
                requiresCompatibilities=["FARGATE"],
                networkMode="awsvpc",
                cpu="1024",
                memory="2048",
                containerDefinitions=[{"name": "worker", "image": "worker:latest", "memory": 2048}],
            )["taskDefinition"]["taskDefinitionArn"]
            clusters[region] = (cluster, definition)
        far_cluster, far_definition = clusters[FAR]
        site = FAR_SITE.model_copy(update={"cluster_arn": far_cluster, "task_definition_arn": far_definition, **networks[FAR]})
        boto3.client("ssm", region_name=FAR).put_parameter(
            Name=site_parameter_name(FAR), Value=site.model_dump_json(), Type="String"
        )
        home_cluster, home_definition = clusters[HOME]
        yield ENV.model_copy(
            update={
                "cluster_arn": home_cluster,
                "task_definition_arn": home_definition,
                "subnets": ",".join(networks[HOME]["subnets"]),
                "security_groups": ",".join(networks[HOME]["security_groups"]),
            }
        )


def _launcher(env: LauncherEnv) -> EcsLauncher:
    return EcsLauncher(
        boto3.client("ecs", region_name=HOME),
        env,
        ecs_in=lambda region: boto3.client("ecs", region_name=region),
        site_in=ssm_site_reader(lambda region: boto3.client("ssm", region_name=region)),
    )


def test_the_launcher_calls_ecs_in_the_target_s_region(two_regions):
    # Given a stack with a site in eu-west-1
    launcher = _launcher(two_regions)

    # When a home target and a far target are launched
    home_task, home_failures = launcher.launch(first_step(None), "t1")
    far_task, far_failures = launcher.launch(first_step({"region": FAR}), "t2")

    # Then each task runs in its own region's cluster
    assert not home_failures and not far_failures
    assert home_task is not None and f":{HOME}:" in home_task
    assert far_task is not None and f":{FAR}:" in far_task
    far_tasks = boto3.client("ecs", region_name=FAR).list_tasks(cluster=SITE_CLUSTER_NAME)["taskArns"]
    assert far_tasks == [far_task]


def test_a_site_whose_stack_is_missing_fails_the_launch_with_the_deploy_command(two_regions):
    # Given a stack that names us-west-2 as a site whose stack was never deployed
    launcher = _launcher(two_regions.model_copy(update={"site_regions": f"{FAR},us-west-2"}))

    # When a target placed there is launched, the launch fails naming the missing parameter and the fix
    missing = re.escape(site_parameter_name("us-west-2"))
    with pytest.raises(PgarenaError, match=rf"{missing} is missing there.*deploy --all") as error:
        launcher.launch(first_step({"region": "us-west-2"}), "t1")
    assert error.value.kind == ErrorKind.LAUNCH_FAILED


def test_a_region_the_stack_no_longer_serves_is_an_invalid_matrix_not_a_retry(two_regions):
    launcher = _launcher(two_regions.model_copy(update={"site_regions": ""}))
    with pytest.raises(PgarenaError, match="no worker site there") as error:
        launcher.launch(first_step({"region": FAR}), "t1")
    assert error.value.kind == ErrorKind.INVALID_MATRIX


def _deploy_stack(outputs: dict[str, str]) -> None:
    template = {
        "Resources": {"Marker": {"Type": "AWS::SSM::Parameter", "Properties": {"Name": "m", "Type": "String", "Value": "x"}}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation", region_name=HOME).create_stack(StackName="Pgarena", TemplateBody=json.dumps(template))


def _far_matrix_file(tmp_path) -> str:
    path = tmp_path / "far.json"
    path.write_text(json.dumps(matrix(None, {"region": FAR})))
    return str(path)


def test_validate_with_the_stack_refuses_a_region_it_has_no_site_for(aws_credentials, tmp_path):
    # Given a deployed stack with no worker site, and a matrix placing a target in eu-west-1
    with mock_aws():
        _deploy_stack({"StateMachineArn": "arn:sm", "ResultsBucketName": "b"})

        # When the matrix is validated against the stack
        result = CliRunner().invoke(app, ["validate", _far_matrix_file(tmp_path), "--stack", "Pgarena", "--region", HOME])

    # Then it is refused, naming the field, the region and the fix
    assert result.exit_code == 1
    assert "$.targets[1].placement.region" in result.stderr and "pgarena:sites" in result.stderr


def test_validate_with_the_stack_accepts_a_region_it_has_a_site_for(aws_credentials, tmp_path):
    with mock_aws():
        _deploy_stack({"StateMachineArn": "arn:sm", "ResultsBucketName": "b", "WorkerSiteRegions": FAR})
        result = CliRunner().invoke(app, ["validate", _far_matrix_file(tmp_path), "--stack", "Pgarena", "--region", HOME])
    assert result.exit_code == 0, result.stderr


def test_run_aws_refuses_a_region_without_a_site_before_starting_an_execution(aws_credentials, tmp_path):
    # Given a deployed stack with no worker site
    with mock_aws():
        _deploy_stack({"StateMachineArn": "arn:sm", "ResultsBucketName": "b"})

        # When a campaign placing a target in eu-west-1 is run there
        result = CliRunner().invoke(app, ["run", "--aws", "--matrix", _far_matrix_file(tmp_path), "--region", HOME])

    # Then it is refused with the field and the fix, not started (the state machine named does not even exist)
    assert result.exit_code == 1
    assert "$.targets[1].placement.region" in result.stderr and "deploy --all" in result.stderr
