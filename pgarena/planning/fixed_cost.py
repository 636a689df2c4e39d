"""What the deployed stack costs whether campaigns run or not: the created VPC's NAT gateway and its
Elastic IP (a public IPv4 address), by the hour. A given VPC (`pgarena:vpcId`) adds none of it. Pure.

List prices as of PRICES_AS_OF (pgarena.planning.cost's date); a region without an entry is priced as
DEFAULT_REGION and the line says so.
"""

from __future__ import annotations

from pydantic import BaseModel

from pgarena.planning.cost import DEFAULT_REGION, PRICES_AS_OF

HOURS_PER_MONTH = 730
# The created VPC's NAT gateways (cdk/pgarena_cdk/constants.py VPC_NAT_GATEWAYS is this).
STACK_NAT_GATEWAYS = 1
# Per region: (NAT gateway per hour, NAT data processed per GB), USD.
NAT_PRICES: dict[str, tuple[float, float]] = {
    "us-east-1": (0.045, 0.045),
    "us-east-2": (0.045, 0.045),
    "us-west-2": (0.045, 0.045),
    "eu-west-1": (0.048, 0.048),
    "eu-central-1": (0.052, 0.052),
}
PUBLIC_IPV4_HOUR_USD = 0.005  # every region


class FixedCost(BaseModel):
    region: str
    priced_as: str
    nat_gateways: int
    nat_usd: float
    address_usd: float
    processing_usd_per_gb: float

    @property
    def total_usd(self) -> float:
        return self.nat_usd + self.address_usd

    def line(self) -> str:
        priced = self.region if self.priced_as == self.region else f"{self.region} (priced as {self.priced_as})"
        return (
            f"stack's fixed cost: ${self.total_usd:.2f}/month in {priced}, billed whether campaigns run or not: "
            f"{self.nat_gateways} NAT gateway ${self.nat_usd:.2f} + its Elastic IP ${self.address_usd:.2f}, plus "
            f"${self.processing_usd_per_gb:.3f}/GB through the NAT (S3 and DynamoDB bypass it); none with a "
            f"given VPC; list prices as of {PRICES_AS_OF}"
        )


def fixed_monthly_cost(region: str, nat_gateways: int = STACK_NAT_GATEWAYS) -> FixedCost:
    priced_as = region if region in NAT_PRICES else DEFAULT_REGION
    nat_hour, processing = NAT_PRICES[priced_as]
    return FixedCost(
        region=region,
        priced_as=priced_as,
        nat_gateways=nat_gateways,
        nat_usd=nat_gateways * nat_hour * HOURS_PER_MONTH,
        address_usd=nat_gateways * PUBLIC_IPV4_HOUR_USD * HOURS_PER_MONTH,
        processing_usd_per_gb=processing,
    )
