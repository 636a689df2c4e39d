"""Deployment settings read from the CDK context, validated like any other input."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Annotated

from aws_cdk import aws_logs as logs
from constructs import Node
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pgarena.aws.deployment import DEFAULT_ALERT_BUS, STACK_NAME_PATTERN
from pgarena.model.matrix import SITE_NAME_PATTERN
from pgarena_cdk import constants
from pgarena_cdk.schedules_construct import ScheduleSpec

# CloudWatch Logs accepts only these retention periods (days).
RETENTION_DAYS = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}

# The pre-built layer directory of earlier versions; a stale `-c` is refused rather than ignored.
REMOVED_LAYER_DIR = "pgarena:layerDir"


def _id_list(value: object) -> list[str]:
    # `cdk synth -c key=a,b` passes a string; cdk.json can hold a JSON list.
    if value is None:
        return []
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if not isinstance(value, Iterable):
        raise ValueError(f"expected a list of ids or a comma-separated string, got {value!r}")
    return [str(item) for item in value]


class SiteSpec(BaseModel):
    """One worker site in another region: a new VPC there, or the given one's subnets and security groups."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")

    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    vpc_id: str | None = Field(None, alias="vpcId")
    subnet_ids: list[str] = Field(default_factory=list, alias="subnetIds")
    security_group_ids: list[str] = Field(default_factory=list, alias="securityGroupIds")

    @field_validator("subnet_ids", "security_group_ids", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> list[str]:
        return _id_list(value)

    @model_validator(mode="after")
    def _placement_is_complete(self) -> SiteSpec:
        if self.vpc_id and not (self.subnet_ids and self.security_group_ids):
            raise ValueError(f"site {self.region}: vpcId needs subnetIds and securityGroupIds (nothing is looked up)")
        if not self.vpc_id and (self.subnet_ids or self.security_group_ids):
            raise ValueError(f"site {self.region}: subnet and security group ids are only used with vpcId")
        return self


class DeploySettings(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    stack_name: str = Field(constants.STACK_ID, alias=constants.CONTEXT_STACK_NAME, pattern=STACK_NAME_PATTERN)
    vpc_id: str | None = Field(None, alias=constants.CONTEXT_VPC_ID)
    subnet_ids: list[str] = Field(default_factory=list, alias=constants.CONTEXT_SUBNET_IDS)
    security_group_ids: list[str] = Field(default_factory=list, alias=constants.CONTEXT_SECURITY_GROUP_IDS)
    worker_cpu_units: int = Field(constants.DEFAULT_WORKER_CPU_UNITS, alias=constants.CONTEXT_WORKER_CPU_UNITS, gt=0)
    worker_memory_mib: int = Field(constants.DEFAULT_WORKER_MEMORY_MIB, alias=constants.CONTEXT_WORKER_MEMORY_MIB, gt=0)
    fargate_spot: bool = Field(False, alias=constants.CONTEXT_FARGATE_SPOT)
    log_retention_days: int = Field(constants.DEFAULT_LOG_RETENTION_DAYS, alias=constants.CONTEXT_LOG_RETENTION_DAYS)
    raw_output_expiration_days: int = Field(
        constants.DEFAULT_RAW_OUTPUT_EXPIRATION_DAYS, alias=constants.CONTEXT_RAW_OUTPUT_EXPIRATION_DAYS, gt=0
    )
    schedules: list[ScheduleSpec] = Field(default_factory=list, alias=constants.CONTEXT_SCHEDULES)
    sites: list[SiteSpec] = Field(default_factory=list, alias=constants.CONTEXT_SITES)
    # External sites (ECS Anywhere) by name: each name is the `pgarena.site` attribute of its machines.
    external_sites: list[Annotated[str, Field(pattern=SITE_NAME_PATTERN)]] = Field(
        default_factory=list, alias=constants.CONTEXT_EXTERNAL_SITES
    )

    # Change-point alerts: the bus finalize puts its events on, and an SNS topic (an existing one, or one the
    # stack creates) for a message each. docs/guide/05-deploy.md, Alerts.
    alert_bus: str = Field(DEFAULT_ALERT_BUS, alias=constants.CONTEXT_ALERT_BUS, pattern=r"^[/.\-_A-Za-z0-9]{1,256}$")
    alert_topic_arn: str | None = Field(
        None, alias=constants.CONTEXT_ALERT_TOPIC_ARN, pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$"
    )
    alerts_topic: bool = Field(False, alias=constants.CONTEXT_ALERTS)

    @field_validator("schedules", "sites", mode="before")
    @classmethod
    def _decode_json_list(cls, value: object) -> object:
        # `cdk deploy -c pgarena:schedules='[...]'` passes the list as a JSON string.
        return json.loads(value) if isinstance(value, str) else value

    @field_validator("external_sites", mode="before")
    @classmethod
    def _external_site_names(cls, value: object) -> object:
        # A JSON list from cdk.json or `-c 'pgarena:external_sites=["gcp"]'`, or `-c pgarena:external_sites=gcp,azure`.
        if isinstance(value, str) and value.strip().startswith("["):
            return json.loads(value)
        return _id_list(value)

    @field_validator("external_sites")
    @classmethod
    def _unique_external_sites(cls, value: list[str]) -> list[str]:
        repeated = sorted({name for name in value if value.count(name) > 1})
        if repeated:
            raise ValueError(f"external site names must be unique; repeated: {', '.join(repeated)}")
        return value

    @field_validator("sites")
    @classmethod
    def _one_site_per_region(cls, value: list[SiteSpec]) -> list[SiteSpec]:
        regions = [site.region for site in value]
        repeated = sorted({region for region in regions if regions.count(region) > 1})
        if repeated:
            raise ValueError(f"one site per region; repeated: {', '.join(repeated)}")
        return value

    @property
    def site_regions(self) -> list[str]:
        return [site.region for site in self.sites]

    @field_validator("schedules")
    @classmethod
    def _unique_schedule_names(cls, value: list[ScheduleSpec]) -> list[ScheduleSpec]:
        names = [spec.name for spec in value]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"schedule names must be unique; repeated: {', '.join(repeated)}")
        return value

    @field_validator("subnet_ids", "security_group_ids", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> list[str]:
        return _id_list(value)

    @field_validator("log_retention_days")
    @classmethod
    def _known_retention(cls, value: int) -> int:
        if value not in RETENTION_DAYS:
            raise ValueError(f"CloudWatch Logs retention must be one of {sorted(RETENTION_DAYS)} days")
        return value

    @model_validator(mode="after")
    def _placement_is_complete(self) -> DeploySettings:
        if self.vpc_id and not (self.subnet_ids and self.security_group_ids):
            raise ValueError(
                f"{constants.CONTEXT_VPC_ID} needs {constants.CONTEXT_SUBNET_IDS} and "
                f"{constants.CONTEXT_SECURITY_GROUP_IDS}: nothing is looked up at synth time"
            )
        if not self.vpc_id and (self.subnet_ids or self.security_group_ids):
            raise ValueError(f"subnet and security group ids are only used with {constants.CONTEXT_VPC_ID}")
        return self

    @model_validator(mode="after")
    def _one_alert_topic(self) -> DeploySettings:
        if self.alert_topic_arn and self.alerts_topic:
            raise ValueError(
                f"{constants.CONTEXT_ALERT_TOPIC_ARN} names a topic and {constants.CONTEXT_ALERTS} asks for a new one: give one"
            )
        return self

    @property
    def log_retention(self) -> logs.RetentionDays:
        return RETENTION_DAYS[self.log_retention_days]

    @classmethod
    def from_context(cls, node: Node) -> DeploySettings:
        if node.try_get_context(REMOVED_LAYER_DIR) is not None:
            raise ValueError(
                f"context key {REMOVED_LAYER_DIR} is no longer read: synth bundles the Lambda dependencies from "
                "pyproject.toml itself (cdk/README.md). Remove it from the command line or cdk.json."
            )
        keys = [field.alias or name for name, field in cls.model_fields.items()]
        present = {key: node.try_get_context(key) for key in keys}
        return cls.model_validate({key: value for key, value in present.items() if value is not None})
