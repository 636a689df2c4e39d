"""The stack deployed into an existing VPC, with Fargate Spot."""

from __future__ import annotations

import pytest

from pgarena_cdk import constants
from tests.infrastructure import template as cfn

pytestmark = pytest.mark.infrastructure

VPC_ID = "vpc-0123456789abcdef0"
SUBNET_IDS = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
SECURITY_GROUP_ID = "sg-0123456789abcdef0"


@pytest.fixture(scope="module")
def given_vpc_synth(synthesized):
    # Values as `cdk deploy -c key=value` passes them: strings, ids comma-separated.
    return synthesized(
        **{
            constants.CONTEXT_VPC_ID: VPC_ID,
            constants.CONTEXT_SUBNET_IDS: ",".join(SUBNET_IDS),
            constants.CONTEXT_SECURITY_GROUP_IDS: SECURITY_GROUP_ID,
            constants.CONTEXT_FARGATE_SPOT: "true",
        },
    )


def test_no_network_is_created_in_a_given_vpc(given_vpc_synth):
    # Given a synth with pgarena:vpcId / When counting network resources
    created = [body["Type"] for body in given_vpc_synth.resources.values() if body["Type"].startswith("AWS::EC2::")]

    # Then none are created: the given subnets and security groups are used as they are
    assert created == []


def test_workers_launch_into_the_given_subnets_and_security_groups(given_vpc_synth):
    # Given launch_worker's environment
    variables = cfn.function(given_vpc_synth, "functions/launch_worker/handler.handler")["Environment"]["Variables"]

    # When reading the placement variables / Then they are the given ids, comma-separated
    assert (variables["WORKER_SUBNETS"], variables["WORKER_SECURITY_GROUPS"]) == (
        ",".join(SUBNET_IDS),
        SECURITY_GROUP_ID,
    )


def test_preflight_runs_in_the_given_subnets(given_vpc_synth):
    # Given a synth with pgarena:vpcId / When reading the preflight function's VPC configuration
    vpc_config = cfn.function(given_vpc_synth, "functions/preflight/handler.handler")["VpcConfig"]

    # Then it reaches the targets from the same subnets and security groups as the workers
    assert vpc_config == {"SubnetIds": SUBNET_IDS, "SecurityGroupIds": [SECURITY_GROUP_ID]}


def test_only_preflight_runs_in_the_vpc_and_no_nat_ip_is_claimed(given_vpc_synth):
    # Given a synth with pgarena:vpcId / When listing the functions with a VPC configuration
    in_vpc = sorted(
        body["Properties"]["Handler"]
        for body in given_vpc_synth.resources_of_type("AWS::Lambda::Function").values()
        if "VpcConfig" in body["Properties"]
    )

    # Then only preflight connects to the targets from inside it
    assert in_vpc == ["functions/preflight/handler.handler"]
    # and the given VPC's NAT is its own: the stack does not claim to know its IPs
    assert "NatEgressIps" not in given_vpc_synth.template.to_json()["Outputs"]


def test_fargate_spot_adds_capacity_providers(given_vpc_synth):
    # Given pgarena:fargateSpot / When reading the cluster's capacity providers
    (association,) = given_vpc_synth.resources_of_type("AWS::ECS::ClusterCapacityProviderAssociations").values()

    # Then FARGATE_SPOT is available, and launch_worker is told to use it
    assert "FARGATE_SPOT" in association["Properties"]["CapacityProviders"]
    variables = cfn.function(given_vpc_synth, "functions/launch_worker/handler.handler")["Environment"]["Variables"]
    assert variables["CAPACITY_PROVIDER"] == "FARGATE_SPOT"


def test_cdk_nag_passes_with_a_given_vpc(given_vpc_synth):
    # Given the synth with a given VPC (preflight then needs network-interface permissions)
    # When reading the validation outcome / Then no finding is left unacknowledged
    assert given_vpc_synth.validation_error is None, str(given_vpc_synth.validation_error)
