"""Two deployments in one account: `pgarena:stackName` names the home stack, its sites' stacks and every
name the home stack grants by name (IAM's are account-wide, ECS's and SSM's regional)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pgarena.aws.deployment import (
    site_cluster_name,
    site_execution_role_name,
    site_parameter_name,
    site_task_family,
    site_task_role_name,
)
from pgarena_cdk import constants
from pgarena_cdk.external_sites_construct import external_site_parameter_name
from tests.infrastructure import template as cfn
from tests.infrastructure.test_sites import LAUNCH_WORKER, _joined, _statements, resources_of_type, site_template

pytestmark = pytest.mark.infrastructure

STACK = "PgarenaStaging"
REGION = "eu-west-1"
EXTERNAL = "gcp-us-central1"


@pytest.fixture(scope="module")
def named_synth(synthesized):
    return synthesized(
        **{
            constants.CONTEXT_STACK_NAME: STACK,
            constants.CONTEXT_SITES: json.dumps([{"region": REGION}]),
            constants.CONTEXT_EXTERNAL_SITES: EXTERNAL,
        }
    )


def test_the_stacks_and_the_site_s_names_derive_from_the_stack_name(named_synth):
    # Given the app synthesized as the stack PgarenaStaging with a site in eu-west-1
    assert named_synth.validation_error is None
    assert named_synth.stack.stack_name == STACK
    assert [stack.stack_name for stack in named_synth.stack.site_stacks] == [f"{STACK}-Site-{REGION}"]

    # Then the site's cluster, task family, roles and parameter carry the stack's name, none the default's
    template = site_template(named_synth, REGION)
    ((cluster,), (definition,)) = (
        resources_of_type(template, "AWS::ECS::Cluster"),
        resources_of_type(template, "AWS::ECS::TaskDefinition"),
    )
    assert (cluster["ClusterName"], definition["Family"]) == (site_cluster_name(STACK), site_task_family(STACK))
    role_names = {role.get("RoleName") for role in resources_of_type(template, "AWS::IAM::Role")}
    assert {site_execution_role_name(REGION, STACK), site_task_role_name(REGION, STACK)} <= role_names
    (parameter,) = resources_of_type(template, "AWS::SSM::Parameter")
    assert parameter["Name"] == site_parameter_name(REGION, STACK) == f"/pgarena/{STACK}/sites/{REGION}"
    home_parameters = {body["Properties"]["Name"] for body in named_synth.resources_of_type("AWS::SSM::Parameter").values()}
    assert external_site_parameter_name(EXTERNAL, STACK) in home_parameters
    assert not any(name in json.dumps(template) for name in ("Pgarena-workers", "Pgarena-worker-", "/pgarena/Pgarena/"))


def test_launch_worker_is_granted_exactly_the_named_stack_s_site_and_knows_its_name(named_synth):
    # Given launch_worker's statements and environment
    statements = _statements(named_synth, LAUNCH_WORKER)
    joined = [_joined(r) for s in statements for r in cfn.as_list(s["Resource"])]

    # Then every site name it is granted is this stack's: the task family, the cluster, the roles, the parameter
    (run_task,) = [
        s
        for s in statements
        if s["Action"] == "ecs:RunTask" and any(f":ecs:{REGION}:" in _joined(r) for r in cfn.as_list(s["Resource"]))
    ]
    assert [_joined(r) for r in cfn.as_list(run_task["Resource"])] == [
        f"arn:<AWS::Partition>:ecs:{REGION}:<AWS::AccountId>:task-definition/{site_task_family(STACK)}:*"
    ]
    assert _joined(run_task["Condition"]["ArnEquals"]["ecs:cluster"]).endswith(f":cluster/{site_cluster_name(STACK)}")
    for name in (site_task_role_name(REGION, STACK), site_execution_role_name(REGION, STACK)):
        assert f"arn:<AWS::Partition>:iam::<AWS::AccountId>:role/{name}" in joined
    assert f"arn:<AWS::Partition>:ssm:{REGION}:<AWS::AccountId>:parameter{site_parameter_name(REGION, STACK)}" in joined
    assert not [arn for arn in joined if "Pgarena-worker" in arn or "/pgarena/Pgarena/" in arn]
    # and its STACK_NAME names the parameters it reads (pgarena.aws.sites.ssm_site_reader)
    assert cfn.function(named_synth, LAUNCH_WORKER)["Environment"]["Variables"]["STACK_NAME"] == STACK


def test_a_stack_name_whose_derived_names_would_not_fit_iam_is_refused(synthesize_app, tmp_path):
    # 33 characters: with a region, the execution role's name would pass IAM's 64
    with pytest.raises(ValidationError, match=r"pgarena:stackName\n  String should match pattern"):
        synthesize_app(tmp_path, **{constants.CONTEXT_STACK_NAME: "P" * 33})
