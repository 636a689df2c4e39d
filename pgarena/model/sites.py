"""Sites: where a target's workers run. The stack's own region is the home site; each region named in
the CDK context's `pgarena:sites` is another (its cluster, task definition, subnets and security groups);
each name in `pgarena:external_sites` is an external site: machines in another cloud registered to the
home cluster through ECS Anywhere, carrying the attribute `pgarena.site = <name>`.

A target chooses its site with `placement.region` or `placement.site`; one the stack has no site for is
refused, by name, before anything touches a database (a worker launched elsewhere would measure the
network as well).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pgarena.model.matrix import Campaign, Placement
from pgarena.model.matrix_errors import Problem

# What the user runs once a region is added to the context (cdk/README.md; docs/guide/05-deploy.md, "Sites").
DEPLOY_COMMAND = "npx aws-cdk@2 deploy --all"
SITES_CONTEXT_KEY = "pgarena:sites"
EXTERNAL_SITES_CONTEXT_KEY = "pgarena:external_sites"
# The container instance attribute an external site's machines carry, and RunTask's placement constraint on it.
SITE_ATTRIBUTE = "pgarena.site"


def site_constraint(site: str) -> str:
    """The cluster query language expression that places a task on `site`'s machines only."""
    return f"attribute:{SITE_ATTRIBUTE} == {site}"


class SiteMap(BaseModel):
    """The regions a deployed stack can launch workers in: its own (home) and its worker sites'."""

    model_config = ConfigDict(frozen=True)

    home_region: str
    regions: frozenset[str] = Field(default_factory=frozenset, description="regions with a worker site besides home")
    external: frozenset[str] = Field(default_factory=frozenset, description="external sites (ECS Anywhere) by name")

    def serves(self, region: str | None) -> bool:
        return region is None or region == self.home_region or region in self.regions

    def is_remote(self, region: str | None) -> bool:
        """Whether a target placed in `region` is launched in a worker site's region, not home."""
        return region is not None and region != self.home_region and region in self.regions

    def serves_site(self, site: str | None) -> bool:
        return site is None or site in self.external

    def preflight_site(self, placement: Placement | None) -> str | None:
        """The site a target's preflight runs on as a worker task (its external site, or its region when a
        worker site's); None: at home, in the preflight function (docs/guide/05-deploy.md, Where preflight runs)."""
        if placement is None:
            return None
        if placement.site is not None:
            return placement.site
        return placement.region if self.is_remote(placement.region) else None

    def describe(self) -> str:
        others = ", ".join(sorted(self.regions))
        external = ", ".join(f"{name} (external)" for name in sorted(self.external))
        return ", ".join(part for part in (f"{self.home_region} (home)", others, external) if part)


def site_problems(campaign: Campaign, sites: SiteMap) -> list[Problem]:
    """Each target whose placement names a region or an external site the stack does not serve, with the fix."""
    problems = []
    for index, target in enumerate(campaign.targets):
        region = target.placement.region if target.placement else None
        site = target.placement.site if target.placement else None
        if not sites.serves(region):
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
        if not sites.serves_site(site):
            problems.append(
                Problem(
                    path=f"$.targets[{index}].placement.site",
                    message=(
                        f"{target.name}: the stack has no external site {site!r} (sites: {sites.describe()}), so no "
                        f'machine would run its workers; add "{site}" to {EXTERNAL_SITES_CONTEXT_KEY} in cdk.json, run '
                        f"`{DEPLOY_COMMAND}` and register a machine next to the database as that site "
                        "(docs/guide/05-deploy.md, Sites), or remove placement.site"
                    ),
                )
            )
    return problems
