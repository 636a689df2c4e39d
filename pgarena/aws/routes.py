"""Whether a given VPC's subnets have a route out for the workers. Fargate tasks here get no public IP
(ASSIGN_PUBLIC_IP DISABLED), so they reach ECR, Step Functions, Secrets Manager and the targets only
through a default route (0.0.0.0/0) to a NAT gateway, a NAT instance, a transit gateway or a VPN; a
route to an internet gateway serves public addresses only. Without one, every worker's image pull
fails (CannotPullContainerError) and each step fails, slowly: said at deploy time instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

DEFAULT_ROUTE = "0.0.0.0/0"
ROUTE_FIX = (
    "add a 0.0.0.0/0 route to a NAT gateway in its route table, or give subnets that have one "
    "(pgarena:subnetIds), or deploy without pgarena:vpcId for a new VPC with its NAT"
)
# Route targets that carry a private address out (a NAT gateway, a NAT instance, a transit gateway, a
# peering or a virtual private gateway to a network with its own way out).
EGRESS_KEYS = ("NatGatewayId", "InstanceId", "NetworkInterfaceId", "TransitGatewayId", "VpcPeeringConnectionId")


def route_table_of(subnet_id: str, vpc_id: str, tables: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The subnet's route table: the one associated with it, else its VPC's main table."""
    for table in tables:
        if any(a.get("SubnetId") == subnet_id for a in table.get("Associations", [])):
            return table
    for table in tables:
        if table.get("VpcId") == vpc_id and any(a.get("Main") for a in table.get("Associations", [])):
            return table
    return None


def default_route_problem(subnet_id: str, table: dict[str, Any] | None) -> str | None:
    """Why the subnet's workers cannot get out; None when they can."""
    if table is None:
        return f"subnet {subnet_id} has no route table: {ROUTE_FIX}"
    route = next((r for r in table.get("Routes", []) if r.get("DestinationCidrBlock") == DEFAULT_ROUTE), None)
    where = f"subnet {subnet_id} (route table {table.get('RouteTableId', '?')})"
    if route is None:
        return f"{where} has no route out ({DEFAULT_ROUTE}): workers there cannot pull their image; {ROUTE_FIX}"
    if route.get("State") == "blackhole":
        return f"{where} routes {DEFAULT_ROUTE} to a target that is gone (blackhole): {ROUTE_FIX}"
    if any(route.get(key) for key in EGRESS_KEYS):
        return None
    gateway = str(route.get("GatewayId") or "")
    if gateway.startswith("vgw-"):
        return None
    if gateway.startswith("igw-"):
        return (
            f"{where} routes {DEFAULT_ROUTE} to internet gateway {gateway}, which serves public addresses only: "
            f"workers get none (assignPublicIp DISABLED); {ROUTE_FIX}"
        )
    return f"{where} routes {DEFAULT_ROUTE} to {gateway or 'nothing known'}, not a way out for private addresses: {ROUTE_FIX}"


def subnet_route_problems(ec2: EC2Client, subnet_ids: Sequence[str]) -> list[str]:
    """One line per given subnet that cannot get its workers out (DescribeSubnets, DescribeRouteTables)."""
    if not subnet_ids:
        return []
    try:
        subnets = ec2.describe_subnets(SubnetIds=list(subnet_ids))["Subnets"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "InvalidSubnetID.NotFound":
            return [
                f"pgarena:subnetIds: {error.response['Error'].get('Message', error)}: give subnets of this account and region"
            ]
        raise
    vpcs = sorted({s["VpcId"] for s in subnets})
    pages = ec2.get_paginator("describe_route_tables").paginate(Filters=[{"Name": "vpc-id", "Values": vpcs}])
    tables: list[dict[str, Any]] = [dict(t) for page in pages for t in page["RouteTables"]]
    problems = []
    for subnet in subnets:
        problem = default_route_problem(subnet["SubnetId"], route_table_of(subnet["SubnetId"], subnet["VpcId"], tables))
        if problem:
            problems.append(problem)
    return problems
