"""Sites: where a target's workers run. The stack's own region is the home site; each region named in
the CDK context's `pgarena:sites` is another (its cluster, task definition, subnets and security groups).

A target chooses its site with `placement.region`; one the stack has no site for is refused, by name,
before anything touches a database (a worker launched elsewhere would measure the network as well).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pgarena.model.matrix import Campaign
from pgarena.model.matrix_errors import Problem

# What the user runs once a region is added to the context (cdk/README.md; docs/guide/05-deploy.md, "Sites").
DEPLOY_COMMAND = "npx aws-cdk@2 deploy --all"
SITES_CONTEXT_KEY = "pgarena:sites"


class SiteMap(BaseModel):
    """The regions a deployed stack can launch workers in: its own (home) and its worker sites'."""

    model_config = ConfigDict(frozen=True)

    home_region: str
    regions: frozenset[str] = Field(default_factory=frozenset, description="regions with a worker site besides home")

    def serves(self, region: str | None) -> bool:
        return region is None or region == self.home_region or region in self.regions

    def is_remote(self, region: str | None) -> bool:
        """Whether a target placed in `region` is launched in a worker site's region, not home."""
        return region is not None and region != self.home_region and region in self.regions

    def describe(self) -> str:
        others = ", ".join(sorted(self.regions))
        return f"{self.home_region} (home)" + (f", {others}" if others else "")


def site_problems(campaign: Campaign, sites: SiteMap) -> list[Problem]:
    """Each target whose placement names a region no site of the stack serves, with the fix."""
    problems = []
    for index, target in enumerate(campaign.targets):
        region = target.placement.region if target.placement else None
        if sites.serves(region):
            continue
        problems.append(
            Problem(
                path=f"$.targets[{index}].placement.region",
                message=(
                    f"{target.name}: the stack has no worker site in {region!r} (sites: {sites.describe()}), so its "
                    f'workers would run far from the database; add {{"region": "{region}"}} to {SITES_CONTEXT_KEY} '
                    f"in cdk.json and run `{DEPLOY_COMMAND}`, or remove placement.region to measure from "
                    f"{sites.home_region}"
                ),
            )
        )
    return problems
