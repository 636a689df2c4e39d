"""Worker sites: one stack per region of pgarena:sites, and the home stack's grants to launch there."""

from __future__ import annotations

import json

import pytest

from pgarena.aws.deployment import (
    SITE_CLUSTER_NAME,
    SITE_TASK_FAMILY,
    site_execution_role_name,
    site_parameter_name,
    site_task_role_name,
)
from pgarena_cdk import constants
from tests.infrastructure import template as cfn

pytestmark = pytest.mark.infrastructure

NEW_VPC = "eu-west-1"
GIVEN_VPC = "us-west-2"
GIVEN_SUBNETS = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
GIVEN_GROUP = "sg-0123456789abcdef0"
LAUNCH_WORKER = "functions/launch_worker/handler.handler"
TASK_STOPPED = "functions/task_stopped/handler.handler"


@pytest.fixture(scope="module")
def sites_synth(synthesized):
    # As `cdk deploy -c pgarena:sites='[...]'` passes it: a JSON string.
    sites = [
        {"region": NEW_VPC},
        {"region": GIVEN_VPC, "vpcId": "vpc-0123456789abcdef0", "subnetIds": GIVEN_SUBNETS, "securityGroupIds": GIVEN_GROUP},
    ]
    return synthesized(**{constants.CONTEXT_SITES: json.dumps(sites)})


def site_template(synth, region: str) -> dict:
    (stack,) = [stack for stack in synth.stack.site_stacks if stack.region == region]
    return json.loads((synth.outdir / stack.template_file).read_text())


def resources_of_type(template: dict, type_: str) -> list[dict]:
    return [body["Properties"] for body in template["Resources"].values() if body["Type"] == type_]


def test_the_app_with_sites_passes_cdk_nag(sites_synth):
    # Given the home stack and two worker sites / Then every stack synthesizes with no finding unacknowledged
    assert sites_synth.validation_error is None
    assert [stack.stack_name for stack in sites_synth.stack.site_stacks] == [
        f"Pgarena-Site-{NEW_VPC}",
        f"Pgarena-Site-{GIVEN_VPC}",
    ]


@pytest.mark.parametrize("region", [NEW_VPC, GIVEN_VPC])
def test_each_site_has_the_named_capacity_launch_worker_is_granted(sites_synth, region):
    # Given a site's template
    template = site_template(sites_synth, region)

    # Then its cluster, task family and execution role carry the names the home stack grants, and it has
    # its own log group for the workers
    ((cluster,), (definition,)) = (
        resources_of_type(template, "AWS::ECS::Cluster"),
        resources_of_type(template, "AWS::ECS::TaskDefinition"),
    )
    assert cluster["ClusterName"] == SITE_CLUSTER_NAME
    assert definition["Family"] == SITE_TASK_FAMILY
    role_names = [role.get("RoleName") for role in resources_of_type(template, "AWS::IAM::Role")]
    assert site_execution_role_name(region) in role_names
    log_options = definition["ContainerDefinitions"][0]["LogConfiguration"]["Options"]
    assert log_options["awslogs-region"] == region


def test_site_workers_are_the_size_of_home_workers(sites_synth):
    # Given the home task definition and a site's / Then CPU and memory are the same (equal footing)
    (home,) = sites_synth.resources_of_type("AWS::ECS::TaskDefinition").values()
    (site,) = resources_of_type(site_template(sites_synth, NEW_VPC), "AWS::ECS::TaskDefinition")
    assert (site["Cpu"], site["Memory"]) == (home["Properties"]["Cpu"], home["Properties"]["Memory"])


def test_a_site_in_a_given_vpc_creates_no_network_and_publishes_the_given_ids(sites_synth):
    # Given the site deployed into an existing VPC
    template = site_template(sites_synth, GIVEN_VPC)

    # Then nothing of EC2 is created, and its parameter names the given subnets and security group
    assert [body["Type"] for body in template["Resources"].values() if body["Type"].startswith("AWS::EC2::")] == []
    (parameter,) = resources_of_type(template, "AWS::SSM::Parameter")
    assert parameter["Name"] == site_parameter_name(GIVEN_VPC)
    text = "".join(part if isinstance(part, str) else "<token>" for part in parameter["Value"]["Fn::Join"][1])
    assert f'"subnets":["{GIVEN_SUBNETS[0]}","{GIVEN_SUBNETS[1]}"]' in text
    assert f'"security_groups":["{GIVEN_GROUP}"]' in text


def test_a_site_in_a_new_vpc_logs_its_flows_and_publishes_its_private_subnets(sites_synth):
    template = site_template(sites_synth, NEW_VPC)
    (flow_log,) = resources_of_type(template, "AWS::EC2::FlowLog")
    assert flow_log["LogDestinationType"] == "cloud-watch-logs"
    (parameter,) = resources_of_type(template, "AWS::SSM::Parameter")
    subnet_refs = [part["Ref"] for part in parameter["Value"]["Fn::Join"][1] if isinstance(part, dict) and "Ref" in part]
    assert [ref for ref in subnet_refs if "WorkersSubnet" in ref] and not [ref for ref in subnet_refs if "Public" in ref]


def _statements(synth, handler: str) -> list[dict]:
    function_role = cfn.function(synth, handler)["Role"]["Fn::GetAtt"][0]
    return cfn.statements_of_role(synth, function_role)


def _joined(value) -> str:
    """An ARN as text: the tokens of its Fn::Join shown as <...>."""
    if isinstance(value, str):
        return value
    if "Fn::Join" not in value:  # a reference to a resource of the stack (Ref, Fn::GetAtt)
        return f"<{next(iter(value.values()))}>"
    parts = value["Fn::Join"][1]
    return "".join(part if isinstance(part, str) else f"<{next(iter(part.values()))}>" for part in parts)


def test_launch_worker_may_run_tasks_only_in_each_site_s_named_cluster(sites_synth):
    # Given launch_worker's statements
    statements = _statements(sites_synth, LAUNCH_WORKER)

    # Then for each site it may RunTask on the site's task family, only in the site's cluster
    run_task = [s for s in statements if cfn.as_list(s["Action"]) == ["ecs:RunTask"]]
    for region in (NEW_VPC, GIVEN_VPC):
        (statement,) = [s for s in run_task if f":ecs:{region}:" in _joined(cfn.as_list(s["Resource"])[0])]
        assert _joined(cfn.as_list(statement["Resource"])[0]).endswith(f"task-definition/{SITE_TASK_FAMILY}:*")
        assert _joined(statement["Condition"]["ArnEquals"]["ecs:cluster"]).endswith(
            f":ecs:{region}:<AWS::AccountId>:cluster/{SITE_CLUSTER_NAME}"
        )


def test_launch_worker_passes_the_site_execution_role_and_reads_the_site_parameter(sites_synth):
    statements = _statements(sites_synth, LAUNCH_WORKER)
    passed = [_joined(r) for s in statements if s["Action"] == "iam:PassRole" for r in cfn.as_list(s["Resource"])]
    read = [_joined(r) for s in statements if s["Action"] == "ssm:GetParameter" for r in cfn.as_list(s["Resource"])]
    for region in (NEW_VPC, GIVEN_VPC):
        assert any(arn.endswith(f":role/{site_execution_role_name(region)}") for arn in passed)
        assert any(arn.endswith(f":ssm:{region}:<AWS::AccountId>:parameter{site_parameter_name(region)}") for arn in read)


def _role_name(template: dict, reference: dict) -> str:
    """The RoleName of the role a task definition's TaskRoleArn / ExecutionRoleArn refers to (Fn::GetAtt)."""
    logical_id = reference["Fn::GetAtt"][0]
    return template["Resources"][logical_id]["Properties"]["RoleName"]


def test_launch_worker_may_pass_every_role_each_site_task_definition_names(sites_synth):
    # Given launch_worker's PassRole resources
    statements = _statements(sites_synth, LAUNCH_WORKER)
    passed = [_joined(r) for s in statements if s["Action"] == "iam:PassRole" for r in cfn.as_list(s["Resource"])]

    # Then each site's task definition has a named task role and execution role, and launch_worker may pass
    # both (RunTask checks iam:PassRole on the task definition's roles): no unnamed role CDK made
    for region in (NEW_VPC, GIVEN_VPC):
        template = site_template(sites_synth, region)
        (definition,) = resources_of_type(template, "AWS::ECS::TaskDefinition")
        task_role, execution_role = (_role_name(template, definition[key]) for key in ("TaskRoleArn", "ExecutionRoleArn"))
        assert (task_role, execution_role) == (site_task_role_name(region), site_execution_role_name(region))
        for name in (task_role, execution_role):
            assert f"arn:<AWS::Partition>:iam::<AWS::AccountId>:role/{name}" in passed
        # and the site's task role may do nothing: workers run as the home task role (RunTask's override)
        task_role_ref = {"Ref": definition["TaskRoleArn"]["Fn::GetAtt"][0]}
        assert not [policy for policy in resources_of_type(template, "AWS::IAM::Policy") if task_role_ref in policy["Roles"]]


def test_launch_worker_may_pass_the_home_task_definition_s_roles_and_no_other_function_passes_any(sites_synth):
    # Given the home stack's Fargate task definition and every function's statements
    (home,) = sites_synth.resources_of_type("AWS::ECS::TaskDefinition").values()
    passing = {
        name: [s for s in cfn.statements_of_role(sites_synth, name) if s["Action"] == "iam:PassRole"]
        for name in sites_synth.resources_of_type("AWS::IAM::Role")
    }

    # Then launch_worker may pass its task role and execution role, to ECS tasks only, and no other role
    # may pass any (pgarena.aws.access.PASSED_ROLES)
    launcher_role = cfn.function(sites_synth, LAUNCH_WORKER)["Role"]["Fn::GetAtt"][0]
    assert [name for name, statements in passing.items() if statements] == [launcher_role]
    passed = [r for s in passing[launcher_role] for r in cfn.as_list(s["Resource"])]
    assert home["Properties"]["TaskRoleArn"] in passed and home["Properties"]["ExecutionRoleArn"] in passed
    assert all(
        s["Condition"] == {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}} for s in passing[launcher_role]
    )


def test_validate_and_launch_worker_know_the_site_regions_and_the_stack_outputs_them(sites_synth):
    # Given the functions' environments and the stack's outputs
    expected = f"{NEW_VPC},{GIVEN_VPC}"
    for handler in ("functions/validate/handler.handler", LAUNCH_WORKER):
        assert cfn.function(sites_synth, handler)["Environment"]["Variables"]["WORKER_SITE_REGIONS"] == expected
    launcher = cfn.function(sites_synth, LAUNCH_WORKER)["Environment"]["Variables"]
    assert "WORKER_TASK_ROLE_ARN" in launcher
    assert sites_synth.template.to_json()["Outputs"][constants.OUTPUT_WORKER_SITE_REGIONS]["Value"] == expected


def test_workers_may_read_target_secrets_in_any_region(sites_synth):
    (task_role,) = [name for name, body in sites_synth.resources_of_type("AWS::IAM::Role").items() if "ComputeTaskRole" in name]
    secrets = [
        _joined(resource)
        for statement in cfn.statements_of_role(sites_synth, task_role)
        if statement["Action"] == "secretsmanager:GetSecretValue"
        for resource in cfn.as_list(statement["Resource"])
    ]
    # A secret is read in its ARN's region: a site's, the stack's, or one with neither (a Cloud SQL password
    # kept beside its database); only secrets named pgarena/ in the stack's account
    assert secrets == [f"arn:<AWS::Partition>:secretsmanager:*:<AWS::AccountId>:secret:{constants.SECRET_NAME_PREFIX}*"]


class _SiteSynth:
    """A site's template, queried as tests.infrastructure.template queries the home stack's."""

    def __init__(self, template: dict):
        self.resources = template["Resources"]

    def resources_of_type(self, type_: str) -> dict:
        return {name: body for name, body in self.resources.items() if body["Type"] == type_}


def _code_key(function: dict) -> str:
    """The asset a function's code is (its S3 key: the asset's hash), whichever region's bucket holds it."""
    return _joined(function["Code"]["S3Key"])


@pytest.mark.parametrize("region", [NEW_VPC, GIVEN_VPC])
def test_each_site_fails_at_once_the_step_of_a_worker_that_never_starts_in_its_cluster(sites_synth, region):
    # Given a site's template (EventBridge rules are regional: the home stack's rule sees none of its tasks)
    site = _SiteSynth(site_template(sites_synth, region))
    (rule,) = site.resources_of_type("AWS::Events::Rule").values()
    (cluster_id,) = site.resources_of_type("AWS::ECS::Cluster")
    function_id = cfn.function_logical_id(site, TASK_STOPPED)

    # Then its rule takes this cluster's stopped pgarena tasks, as the home stack's takes the home cluster's,
    # to the site's own task_stopped function
    pattern = rule["Properties"]["EventPattern"]
    assert (pattern["source"], pattern["detail-type"]) == (["aws.ecs"], ["ECS Task State Change"])
    assert pattern["detail"] == {
        "clusterArn": [{"Fn::GetAtt": [cluster_id, "Arn"]}],
        "lastStatus": ["STOPPED"],
        "startedBy": ["pgarena"],
    }
    assert [t["Arn"] for t in rule["Properties"]["Targets"]] == [{"Fn::GetAtt": [function_id, "Arn"]}]
    # and EventBridge may invoke it
    (permission,) = site.resources_of_type("AWS::Lambda::Permission").values()
    assert permission["Properties"]["Principal"] == "events.amazonaws.com"
    assert permission["Properties"]["SourceArn"] == {
        "Fn::GetAtt": [next(iter(site.resources_of_type("AWS::Events::Rule"))), "Arn"]
    }

    # And the function may fail a step and nothing else of Step Functions, the table, the bucket, ECS or IAM
    actions = {a for st in cfn.statements_of_function(site, TASK_STOPPED) for a in cfn.as_list(st["Action"])}
    assert {a for a in actions if a.startswith(("states:", "dynamodb:", "s3:", "ecs:", "iam:"))} == {"states:SendTaskFailure"}
    # and it is the home stack's code (one asset), not in a VPC, with the home function's size
    home = cfn.function(sites_synth, TASK_STOPPED)
    function = cfn.function(site, TASK_STOPPED)
    assert _code_key(function) == _code_key(home)
    assert "VpcConfig" not in function
    assert (function["MemorySize"], function["Timeout"]) == (home["MemorySize"], home["Timeout"])
