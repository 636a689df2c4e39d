"""Worker sites in other regions: the names the CDK app gives their resources and the launcher reads.

The home stack (environment-agnostic) cannot reference another region's resources by token, so each
worker site's cluster, task family and roles have names derived from the stack's (pgarena.aws.deployment):
the home stack grants launch_worker exactly those, and the site's stack writes the rest (subnets and
security groups, which only it knows) to an SSM parameter in its region that launch_worker reads at launch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from pgarena.aws.deployment import STACK_NAME, site_parameter_name

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient


class WorkerSite(BaseModel):
    """What RunTask needs of one site: its cluster, task definition and network (the SSM parameter's JSON)."""

    model_config = ConfigDict(frozen=True)

    region: str
    cluster_arn: str
    task_definition_arn: str
    container_name: str = "worker"
    subnets: list[str] = Field(default_factory=list)
    security_groups: list[str] = Field(default_factory=list)
    launch_type: str = "FARGATE"
    capacity_provider: str = ""
    assign_public_ip: str = "DISABLED"


class SiteReadError(Exception):
    """The site's parameter is missing or unreadable: its stack is not deployed (or was removed)."""


# How long a site read stays in use: a Lambda container lives for hours and launches many workers, and a
# redeployed site (a new task definition revision, other subnets) must reach it within minutes.
SITE_MAX_AGE_S = 60.0


def ssm_site_reader(
    ssm_in: Callable[[str], SSMClient],
    stack_name: str = STACK_NAME,
    max_age_s: float = SITE_MAX_AGE_S,
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[str], WorkerSite]:
    """Reads a region's site from the stack's parameter there, kept for `max_age_s` (a Lambda container
    launches many workers; a read per launch would be one SSM call more on every step)."""
    kept: dict[str, tuple[float, WorkerSite]] = {}

    def read(region: str) -> WorkerSite:
        now = clock()
        if region in kept and now - kept[region][0] < max_age_s:
            return kept[region][1]
        name = site_parameter_name(region, stack_name)
        ssm = ssm_in(region)
        try:
            value = ssm.get_parameter(Name=name)["Parameter"]["Value"]
        except ssm.exceptions.ParameterNotFound:
            kept.pop(region, None)
            raise SiteReadError(
                f"no worker site in {region}: parameter {name} is missing there; deploy the site's stack "
                "(npx aws-cdk@2 deploy --all)"
            ) from None
        site = WorkerSite.model_validate_json(value)
        kept[region] = (now, site)
        return site

    return read
