"""Worker sites in other regions: the names the CDK app gives their resources and the launcher reads.

The home stack (environment-agnostic) cannot reference another region's resources by token, so each
worker site's cluster, task family and execution role have fixed names: the home stack grants
launch_worker exactly those, and the site's stack writes the rest (subnets and security groups, which
only it knows) to an SSM parameter in its region that launch_worker reads at launch.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from pgarena.aws.deployment import site_parameter_name

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


def ssm_site_reader(ssm_in: Callable[[str], SSMClient]) -> Callable[[str], WorkerSite]:
    """Reads a region's site from its parameter, once per region for the life of the process (a Lambda
    container launches many workers; a site changes only with a deploy)."""

    @cache
    def read(region: str) -> WorkerSite:
        name = site_parameter_name(region)
        ssm = ssm_in(region)
        try:
            value = ssm.get_parameter(Name=name)["Parameter"]["Value"]
        except ssm.exceptions.ParameterNotFound:
            raise SiteReadError(
                f"no worker site in {region}: parameter {name} is missing there; deploy the site's stack "
                "(npx aws-cdk@2 deploy --all)"
            ) from None
        return WorkerSite.model_validate_json(value)

    return read
