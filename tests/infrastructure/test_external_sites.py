"""External sites (ECS Anywhere): pgarena:external_sites gives the home stack an instance role for machines
in other clouds, an EXTERNAL worker task definition, a parameter per site, and launch_worker what it needs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pgarena_cdk import constants
from pgarena_cdk.external_sites_construct import external_site_parameter_name
from tests.infrastructure import template as cfn
from tests.infrastructure.test_sites import LAUNCH_WORKER, _joined, _statements

pytestmark = pytest.mark.infrastructure

SITES = ["gcp-us-central1", "azure-eastus"]


@pytest.fixture(scope="module")
def external_synth(synthesized):
    # As `cdk deploy -c pgarena:external_sites=gcp-us-central1,azure-eastus` passes it
    return synthesized(**{constants.CONTEXT_EXTERNAL_SITES: ",".join(SITES)})


def _task_definitions(synth) -> dict[str, dict]:
    return {name: body["Properties"] for name, body in synth.resources_of_type("AWS::ECS::TaskDefinition").items()}


def _external(synth) -> dict:
    (external,) = [props for props in _task_definitions(synth).values() if props["RequiresCompatibilities"] == ["EXTERNAL"]]
    return external


def _fargate(synth) -> dict:
    (fargate,) = [props for props in _task_definitions(synth).values() if props["RequiresCompatibilities"] == ["FARGATE"]]
    return fargate


def test_the_app_with_external_sites_passes_cdk_nag(external_synth):
    assert external_synth.validation_error is None


def test_without_external_sites_the_stack_has_no_external_task_or_instance_role(default_synth):
    synth = default_synth
    # Given the default context (no external sites) / Then nothing of ECS Anywhere is created or output
    compatibilities = [props["RequiresCompatibilities"] for props in _task_definitions(synth).values()]
    assert compatibilities == [["FARGATE"]]
    assert constants.OUTPUT_EXTERNAL_SITES not in synth.template.to_json()["Outputs"]
    assert cfn.function(synth, LAUNCH_WORKER)["Environment"]["Variables"]["EXTERNAL_TASK_DEFINITION_ARN"] == ""


def test_the_external_task_is_the_fargate_worker_on_a_bridge_network(external_synth):
    # Given both worker task definitions
    external, fargate = _external(external_synth), _fargate(external_synth)

    # Then the external one runs the same image with the same roles and log group, bridge network, and the
    # container is given the Fargate task's CPU and memory (equal footing between sites)
    assert external["NetworkMode"] == "bridge"
    assert external["TaskRoleArn"] == fargate["TaskRoleArn"]
    assert external["ExecutionRoleArn"] == fargate["ExecutionRoleArn"]
    (container,), (fargate_container,) = external["ContainerDefinitions"], fargate["ContainerDefinitions"]
    assert container["Image"] == fargate_container["Image"]
    assert container["LogConfiguration"] == fargate_container["LogConfiguration"]
    assert (str(container["Cpu"]), str(container["Memory"])) == (fargate["Cpu"], fargate["Memory"])


def test_the_external_task_runs_only_on_x86_64_linux_machines(external_synth):
    # Given the EXTERNAL task definition (the worker image is built linux/amd64)
    external = _external(external_synth)

    # Then ECS places it on x86_64 Linux machines only: an ARM64 machine of a site is never given a worker
    # that cannot start there, as the Fargate task definition already says for Fargate
    platform = {"CpuArchitecture": "X86_64", "OperatingSystemFamily": "LINUX"}
    assert external["RuntimePlatform"] == platform
    assert _fargate(external_synth)["RuntimePlatform"] == platform


def test_the_instance_role_is_ssm_core_and_the_agent_s_calls_on_the_home_cluster(external_synth):
    # Given the role SSM activations name
    (role_name,) = [
        name
        for name, body in external_synth.resources_of_type("AWS::IAM::Role").items()
        if body["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "ssm.amazonaws.com"}
    ]
    role = external_synth.resources[role_name]["Properties"]

    # Then it has SSM's managed-instance core policy, and the ECS agent's actions on this cluster only
    (managed,) = role["ManagedPolicyArns"]
    assert _joined(managed).endswith(":iam::aws:policy/AmazonSSMManagedInstanceCore")
    statements = cfn.statements_of_role(external_synth, role_name)
    agent = [s for s in statements if "ecs:RegisterContainerInstance" in cfn.as_list(s["Action"])]
    (statement,) = agent
    resources = [_joined(r) for r in cfn.as_list(statement["Resource"])]
    assert any("ComputeCluster" in r for r in resources) and all("ComputeCluster" in r for r in resources)
    actions = {a for s in statements for a in cfn.as_list(s["Action"])}
    assert "ecs:CreateCluster" not in actions and not any(a.startswith(("ecr:", "logs:")) for a in actions)


def test_launch_worker_may_run_the_external_task_only_in_the_home_cluster(external_synth):
    # Given launch_worker's statements and environment
    statements = _statements(external_synth, LAUNCH_WORKER)
    (external_name,) = [
        name for name, props in _task_definitions(external_synth).items() if props["RequiresCompatibilities"] == ["EXTERNAL"]
    ]

    # Then it may RunTask the external task definition, in the home cluster only, and knows the sites
    (statement,) = [
        s for s in statements if s["Action"] == "ecs:RunTask" and {"Ref": external_name} in cfn.as_list(s["Resource"])
    ]
    assert "ComputeCluster" in _joined(statement["Condition"]["ArnEquals"]["ecs:cluster"])
    variables = cfn.function(external_synth, LAUNCH_WORKER)["Environment"]["Variables"]
    assert variables["EXTERNAL_TASK_DEFINITION_ARN"] == {"Ref": external_name}
    for handler in ("functions/validate/handler.handler", LAUNCH_WORKER):
        assert cfn.function(external_synth, handler)["Environment"]["Variables"]["WORKER_EXTERNAL_SITES"] == ",".join(SITES)


def test_each_site_is_recorded_and_the_stack_outputs_the_sites_and_the_commands(external_synth):
    # Given the parameters and the outputs
    parameters = [body["Properties"] for body in external_synth.resources_of_type("AWS::SSM::Parameter").values()]
    outputs = external_synth.template.to_json()["Outputs"]

    # Then each site has its parameter naming its attribute, and the outputs name the sites (what
    # `validate --stack` reads), the activation command with the instance role and the install command
    names = {parameter["Name"] for parameter in parameters}
    assert {external_site_parameter_name(site) for site in SITES} <= names
    (gcp,) = [p for p in parameters if p["Name"] == external_site_parameter_name(SITES[0])]
    assert '"attribute":{"pgarena.site":"gcp-us-central1"}' in _joined(gcp["Value"])
    assert outputs[constants.OUTPUT_EXTERNAL_SITES]["Value"] == ",".join(SITES)
    activation = _joined(outputs["ExternalSiteActivationCommand"]["Value"])
    assert activation.startswith("aws ssm create-activation --iam-role <EcsAnywhereInstanceRole")
    install = _joined(outputs["ExternalSiteInstallCommand"]["Value"])
    assert "ecs-anywhere-install.sh --region" in install and "--cluster <ComputeCluster" in install
    assert 'ECS_INSTANCE_ATTRIBUTES={"pgarena.site":"SITE"}' in install


def test_an_external_site_name_that_cannot_be_an_attribute_value_is_refused(synthesize_app, tmp_path):
    with pytest.raises(ValidationError, match=r"pgarena:external_sites\.0\n  String should match pattern"):
        synthesize_app(tmp_path, **{constants.CONTEXT_EXTERNAL_SITES: '["GCP central"]'})
