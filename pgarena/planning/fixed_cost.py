"""What the deployed stack costs whether campaigns run or not: the created VPC's NAT gateway and its
Elastic IP (a public IPv4 address), by the hour, and the same again in each region site that creates its
VPC. A given VPC (`pgarena:vpcId`, a site's `vpcId`) adds none of it. Pure.

List prices as of PRICES_AS_OF (pgarena.planning.cost's table); a region without an entry is priced as
DEFAULT_REGION and the line says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from pgarena.planning.cost import DEFAULT_REGION, NAT_PRICES, PRICES_AS_OF, PUBLIC_IPV4_HOUR_USD

HOURS_PER_MONTH = 730
# The created VPC's NAT gateways, the home stack's and each site's (cdk/pgarena_cdk/constants.py VPC_NAT_GATEWAYS is this).
STACK_NAT_GATEWAYS = 1


class FixedCost(BaseModel):
    region: str
    priced_as: str
    nat_gateways: int
    nat_usd: float
    address_usd: float
    processing_usd_per_gb: float
    # The region sites' own (a site in its own new VPC has its NAT gateway and address).
    sites: list[FixedCost] = Field(default_factory=list)

    @property
    def own_usd(self) -> float:
        return self.nat_usd + self.address_usd

    @property
    def total_usd(self) -> float:
        return self.own_usd + sum(site.own_usd for site in self.sites)

    def _priced(self) -> str:
        return self.region if self.priced_as == self.region else f"{self.region} (priced as {self.priced_as})"

    def line(self) -> str:
        sites = "".join(
            f"; site {site._priced()} ${site.own_usd:.2f} (its NAT gateway ${site.nat_usd:.2f} + Elastic IP "
            f"${site.address_usd:.2f}, ${site.processing_usd_per_gb:.3f}/GB through it)"
            for site in self.sites
        )
        return (
            f"stack's fixed cost: ${self.total_usd:.2f}/month in {self._priced()}, billed whether campaigns run or not: "
            f"{self.nat_gateways} NAT gateway ${self.nat_usd:.2f} + its Elastic IP ${self.address_usd:.2f}, plus "
            f"${self.processing_usd_per_gb:.3f}/GB through the NAT (S3 and DynamoDB bypass it){sites}; none with a "
            f"given VPC; list prices as of {PRICES_AS_OF}"
        )


def fixed_monthly_cost(region: str, nat_gateways: int = STACK_NAT_GATEWAYS, site_regions: Iterable[str] = ()) -> FixedCost:
    """The home stack's in `region`, and each region site's (`site_regions`: other regions, each counted once)."""
    priced_as = region if region in NAT_PRICES else DEFAULT_REGION
    nat_hour, processing = NAT_PRICES[priced_as]
    sites = [fixed_monthly_cost(site) for site in sorted(set(site_regions) - {region})]
    return FixedCost(
        region=region,
        priced_as=priced_as,
        nat_gateways=nat_gateways,
        nat_usd=nat_gateways * nat_hour * HOURS_PER_MONTH,
        address_usd=nat_gateways * PUBLIC_IPV4_HOUR_USD * HOURS_PER_MONTH,
        processing_usd_per_gb=processing,
        sites=sites,
    )
