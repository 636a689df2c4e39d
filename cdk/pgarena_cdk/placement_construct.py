"""Where workers and the preflight function run: a given VPC, or a small new one."""

from __future__ import annotations

from typing import Protocol

from aws_cdk import Fn
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from pgarena_cdk import constants


class Network(Protocol):
    """A VPC given by ids, or none (a new one): the home stack's settings and each worker site's."""

    @property
    def vpc_id(self) -> str | None: ...
    @property
    def subnet_ids(self) -> list[str]: ...
    @property
    def security_group_ids(self) -> list[str]: ...


class PlacementConstruct(Construct):
    """Subnets and security groups for the workers.

    With a VPC id (`pgarena:vpcId`, or a site's `vpcId`) the ids are used as given: nothing is looked
    up, so synth stays offline (`make deploy` checks the given subnets' route out: pgarena.aws.deploy_check).
    Without it, a two-AZ VPC with one NAT gateway is created, with S3 and DynamoDB gateway endpoints (free:
    raw output and summaries skip the NAT's per-GB processing); no interface endpoints, which would cost
    more than the NAT gateway for a benchmark's traffic.
    """

    def __init__(self, scope: Construct, id_: str, settings: Network, flow_logs: ec2.FlowLogDestination) -> None:
        super().__init__(scope, id_)
        self.given_vpc = settings.vpc_id is not None
        if settings.vpc_id is not None:
            self.vpc = self._build_imported_vpc(settings.vpc_id)
            self.subnets = [
                ec2.Subnet.from_subnet_id(self, f"Subnet{index}", subnet_id)
                for index, subnet_id in enumerate(settings.subnet_ids)
            ]
            self.security_groups = [
                ec2.SecurityGroup.from_security_group_id(self, f"SecurityGroup{index}", group_id)
                for index, group_id in enumerate(settings.security_group_ids)
            ]
        else:
            self.vpc = self._build_vpc(flow_logs)
            self.subnets = self.vpc.private_subnets
            self.security_groups = [self._build_worker_security_group()]

    @property
    def nat_egress_ips(self) -> list[str]:
        """The public IPs the workers and preflight leave through (for Cloud SQL / Azure allow-lists): the
        created VPC's NAT gateways' Elastic IPs; unknown here for a given VPC (its own NAT's)."""
        if self.given_vpc:
            return []
        return [eip.ref for subnet in self.vpc.public_subnets for eip in subnet.node.children if isinstance(eip, ec2.CfnEIP)]

    @property
    def subnet_selection(self) -> ec2.SubnetSelection:
        return ec2.SubnetSelection(subnets=self.subnets)

    @property
    def subnet_ids_csv(self) -> str:
        return Fn.join(",", [subnet.subnet_id for subnet in self.subnets])

    @property
    def security_group_ids_csv(self) -> str:
        return Fn.join(",", [group.security_group_id for group in self.security_groups])

    def _build_imported_vpc(self, vpc_id: str) -> ec2.IVpc:
        # Subnets are passed explicitly wherever they are used, so the VPC needs no subnet attributes
        # (and no AZ list that synth could only get from a lookup).
        return ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=vpc_id, availability_zones=Fn.get_azs())

    def _build_vpc(self, flow_logs: ec2.FlowLogDestination) -> ec2.Vpc:
        vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=constants.VPC_MAX_AZS,
            nat_gateways=constants.VPC_NAT_GATEWAYS,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=constants.VPC_SUBNET_CIDR_MASK
                ),
                ec2.SubnetConfiguration(
                    name="Workers",
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS,
                    cidr_mask=constants.VPC_SUBNET_CIDR_MASK,
                ),
            ],
            # Restricting the default security group deploys a custom-resource Lambda; nothing is
            # ever placed in the default group, the workers have their own.
            restrict_default_security_group=False,
        )
        # Gateway endpoints cost nothing; without them every raw-output byte pays NAT processing.
        vpc.add_gateway_endpoint("S3Endpoint", service=ec2.GatewayVpcEndpointAwsService.S3)
        vpc.add_gateway_endpoint("DynamoDbEndpoint", service=ec2.GatewayVpcEndpointAwsService.DYNAMODB)
        vpc.add_flow_log(
            "FlowLog",
            destination=flow_logs,
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
        return vpc

    def _build_worker_security_group(self) -> ec2.SecurityGroup:
        # No ingress: workers only open connections, to the targets and to AWS APIs.
        return ec2.SecurityGroup(
            self,
            "WorkerSecurityGroup",
            vpc=self.vpc,
            description="pgarena workers: outbound only, to the PostgreSQL targets and AWS APIs",
            allow_all_outbound=True,
        )
