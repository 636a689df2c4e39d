"""A given VPC's subnets without a way out for the workers are told at deploy time (pgarena.aws.routes,
pgarena.aws.deploy_check), against moto's EC2: a NAT route passes, no route or an internet gateway
(workers have no public IP) is named with its fix."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from pgarena.aws import deploy_check
from pgarena.aws.deploy_check import DeployCheckError, deploy_context, given_subnets
from pgarena.aws.routes import subnet_route_problems

REGION = "eu-west-1"


@pytest.fixture
def ec2(aws_credentials):
    with mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def _vpc(ec2):
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    public = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    public_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_table, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    ec2.associate_route_table(RouteTableId=public_table, SubnetId=public)
    eip = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public, AllocationId=eip)["NatGateway"]["NatGatewayId"]
    return vpc, public, nat


def _private(ec2, vpc, cidr, nat=None):
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr)["Subnet"]["SubnetId"]
    table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    if nat:
        ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    ec2.associate_route_table(RouteTableId=table, SubnetId=subnet)
    return subnet


def test_a_subnet_routed_through_a_nat_gateway_passes(ec2):
    vpc, _, nat = _vpc(ec2)
    assert subnet_route_problems(ec2, [_private(ec2, vpc, "10.0.1.0/24", nat)]) == []


def test_a_subnet_without_a_route_out_is_named_with_the_fix(ec2):
    # Given a private subnet whose route table has only the VPC's local route
    vpc, _, nat = _vpc(ec2)
    routed, isolated = _private(ec2, vpc, "10.0.1.0/24", nat), _private(ec2, vpc, "10.0.2.0/24")

    # When checking both / Then only the isolated one is said, with what to do
    (problem,) = subnet_route_problems(ec2, [routed, isolated])
    assert problem.startswith(f"subnet {isolated} (route table rtb-") and "has no route out (0.0.0.0/0)" in problem
    assert "add a 0.0.0.0/0 route to a NAT gateway" in problem


def test_a_subnet_routed_to_an_internet_gateway_is_refused_as_workers_have_no_public_ip(ec2):
    _, public, _ = _vpc(ec2)
    (problem,) = subnet_route_problems(ec2, [public])
    assert "to internet gateway igw-" in problem and "assignPublicIp DISABLED" in problem


def test_a_subnet_without_its_own_table_uses_the_vpcs_main_one(ec2):
    # Given a subnet with no association: the VPC's main table (local route only) applies
    vpc, _, _ = _vpc(ec2)
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.3.0/24")["Subnet"]["SubnetId"]
    (problem,) = subnet_route_problems(ec2, [subnet])
    assert "has no route out" in problem


def test_an_unknown_subnet_is_said_not_raised(ec2):
    (problem,) = subnet_route_problems(ec2, ["subnet-00000000000000000"])
    assert problem.startswith("pgarena:subnetIds:") and "this account and region" in problem


def test_the_given_subnets_come_from_cdk_json_and_the_deploys_context(tmp_path):
    cdk_json = tmp_path / "cdk.json"
    cdk_json.write_text(json.dumps({"context": {"pgarena:vpcId": "vpc-1", "pgarena:subnetIds": ["subnet-a"]}}))
    assert given_subnets(deploy_context(cdk_json, [])) == ["subnet-a"]
    assert given_subnets(deploy_context(cdk_json, ["pgarena:subnetIds=subnet-b, subnet-c"])) == ["subnet-b", "subnet-c"]
    # no given VPC: the stack creates its own, with its NAT; nothing to check
    assert given_subnets(deploy_context(tmp_path / "absent.json", ["pgarena:subnetIds=subnet-b"])) == []


def test_make_deploy_stops_on_a_subnet_without_a_way_out(ec2, tmp_path, monkeypatch, capsys):
    # Given a deploy into a given VPC whose subnet has no route out (credentials and bootstrap fine)
    vpc, _, _ = _vpc(ec2)
    isolated = _private(ec2, vpc, "10.0.2.0/24")
    boto3.client("ssm", region_name=REGION).put_parameter(Name=deploy_check.BOOTSTRAP_PARAMETER, Value="21", Type="String")
    monkeypatch.setattr(deploy_check, "CDK_JSON", tmp_path / "cdk.json")

    # When make deploy's check runs with the context it passes to cdk deploy
    code = deploy_check.main(["--region", REGION, "-c", f"pgarena:vpcId={vpc}", "-c", f"pgarena:subnetIds={isolated}", "--all"])

    # Then it stops before the CDK CLI, naming the subnet
    assert code == 1
    assert f"make deploy: subnet {isolated}" in capsys.readouterr().err


def test_check_raises_with_every_problem(ec2):
    vpc, public, _ = _vpc(ec2)
    isolated = _private(ec2, vpc, "10.0.2.0/24")
    boto3.client("ssm", region_name=REGION).put_parameter(Name=deploy_check.BOOTSTRAP_PARAMETER, Value="21", Type="String")
    with pytest.raises(DeployCheckError) as refused:
        deploy_check.check(boto3.Session(region_name=REGION), [public, isolated])
    assert str(refused.value).count("subnet ") == 2
