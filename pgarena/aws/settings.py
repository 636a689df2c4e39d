"""Environment variables of the handlers and the worker, as typed models."""

from __future__ import annotations

import os
from typing import Self

from pydantic import BaseModel, ConfigDict, Field

from pgarena.aws.sites import WorkerSite
from pgarena.model.sites import SiteMap


class FromEnv(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    @classmethod
    def from_env(cls) -> Self:
        return cls.model_validate(dict(os.environ))


class BucketEnv(FromEnv):
    results_bucket: str = Field(alias="RESULTS_BUCKET")


class TableEnv(BucketEnv):
    """The results bucket and table: what every handler but start_campaign and task_stopped reads."""

    results_table: str = Field(alias="RESULTS_TABLE")


class ResultsEnv(TableEnv):
    region: str = Field("us-east-1", alias="AWS_REGION", description="the home region (where preflight ran, when here)")
    # Where finalize tells the change points a run found first (pgarena.aws.alerts): the stack sets both.
    alert_event_bus: str = Field("default", alias="ALERT_EVENT_BUS", description="the EventBridge bus of the alerts")
    alert_topic_arn: str = Field("", alias="ALERT_TOPIC_ARN", description="an SNS topic for the alerts; '' for none")


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class LauncherEnv(TableEnv):
    cluster_arn: str = Field(alias="CLUSTER_ARN")
    task_definition_arn: str = Field(alias="TASK_DEFINITION_ARN")
    container_name: str = Field("worker", alias="WORKER_CONTAINER_NAME")
    subnets: str = Field("", alias="WORKER_SUBNETS")
    security_groups: str = Field("", alias="WORKER_SECURITY_GROUPS")
    launch_type: str = Field("FARGATE", alias="LAUNCH_TYPE")
    capacity_provider: str = Field("", alias="CAPACITY_PROVIDER", description="FARGATE_SPOT when the stack enables Spot")
    assign_public_ip: str = Field("DISABLED", alias="ASSIGN_PUBLIC_IP")
    # The home region: where the results, the table and the state machine are, whichever site a worker runs in.
    region: str = Field("us-east-1", alias="AWS_REGION")
    site_regions: str = Field("", alias="WORKER_SITE_REGIONS", description="regions with a worker site besides home")
    # Workers in every site run as the home stack's task role (IAM is global): RunTask's override names it.
    task_role_arn: str = Field("", alias="WORKER_TASK_ROLE_ARN")
    external_sites: str = Field("", alias="WORKER_EXTERNAL_SITES", description="external sites (ECS Anywhere) by name")
    # The home cluster's EXTERNAL task definition: the same image and task role, bridge network.
    external_task_definition_arn: str = Field("", alias="EXTERNAL_TASK_DEFINITION_ARN")

    @property
    def subnet_list(self) -> list[str]:
        return _split(self.subnets)

    @property
    def security_group_list(self) -> list[str]:
        return _split(self.security_groups)

    @property
    def sites(self) -> SiteMap:
        return site_map(self.region, self.site_regions, self.external_sites)

    @property
    def home_site(self) -> WorkerSite:
        return WorkerSite(
            region=self.region,
            cluster_arn=self.cluster_arn,
            task_definition_arn=self.task_definition_arn,
            container_name=self.container_name,
            subnets=self.subnet_list,
            security_groups=self.security_group_list,
            launch_type=self.launch_type,
            capacity_provider=self.capacity_provider,
            assign_public_ip=self.assign_public_ip,
        )


class SitesEnv(ResultsEnv):
    """Validate And Plan: the regions the stack's workers can run in (a placement elsewhere is refused)."""

    site_regions: str = Field("", alias="WORKER_SITE_REGIONS")
    external_sites: str = Field("", alias="WORKER_EXTERNAL_SITES")

    @property
    def sites(self) -> SiteMap:
        return site_map(self.region, self.site_regions, self.external_sites)


def site_map(home_region: str, site_regions: str, external_sites: str = "") -> SiteMap:
    return SiteMap(home_region=home_region, regions=frozenset(_split(site_regions)), external=frozenset(_split(external_sites)))


# What RunTask's overrides give a worker's container (pgarena.aws.launch.run_task_request).
STEP_VAR = "PGARENA_STEP"
TASK_TOKEN_VAR = "PGARENA_TASK_TOKEN"
# The home region a worker reports to (results, table, task token), whichever region it runs in.
RESULTS_REGION_VAR = "RESULTS_REGION"


class WorkerEnv(FromEnv):
    step: str = Field(alias=STEP_VAR, description="the Step as JSON")
    task_token: str = Field(alias=TASK_TOKEN_VAR)
    slot: str | None = Field(None, alias="PGARENA_WORKER_SLOT", description="the WorkerSlot as JSON: stay for its next step")
    last_step: bool = Field(True, alias="PGARENA_LAST_STEP", description="no later step of the phase on this slot")
    results_bucket: str = Field(alias="RESULTS_BUCKET")
    results_table: str = Field(alias="RESULTS_TABLE")
    heartbeat_s: float = Field(10.0, alias="PGARENA_HEARTBEAT_S")
    upload_every_s: float = Field(15.0, alias="PGARENA_UPLOAD_EVERY_S", gt=0, description="raw output chunk cadence")
    # A worker in another region's site still reports to the home region (results, table, task token).
    results_region: str | None = Field(None, alias=RESULTS_REGION_VAR)


class CostGuardEnv(TableEnv):
    """The cost guard: the ledger's table and the worker's size, which prices its Fargate time."""

    worker_cpu_units: int = Field(1024, alias="WORKER_CPU_UNITS", gt=0)
    worker_memory_mib: int = Field(2048, alias="WORKER_MEMORY_MIB", gt=0)
    region: str = Field("us-east-1", alias="AWS_REGION", description="prices used when the matrix names no region")


class StartCampaignEnv(BucketEnv):
    """start_campaign: where schedules' matrices are kept and the state machine to start."""

    state_machine_arn: str = Field(alias="STATE_MACHINE_ARN")
