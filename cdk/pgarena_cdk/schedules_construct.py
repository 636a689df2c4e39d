"""Scheduled campaigns: EventBridge Scheduler schedules that start executions of the campaign state machine."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pgarena.model import layout
from pgarena.model.matrix import NAME_PATTERN
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.schedule import SCHEDULED_TIME, campaign_input
from pgarena.planning.campaign import parse_campaign
from pgarena_cdk import constants


class ScheduleSpec(BaseModel):
    """One entry of the `pgarena:schedules` context list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN, description="the schedule's name, also the ledger's label for its campaigns")
    expression: str = Field(pattern=r"^(cron|rate)\(.+\)$", description="cron(...) or rate(...)")
    timezone: str = Field("UTC", description="IANA time zone the cron expression is read in")
    enabled: bool = True
    matrix: dict[str, Any] | None = Field(None, description="the provider matrix, inline")
    matrix_s3_key: str | None = Field(
        None, description=f"or the key of a matrix in the results bucket, under {layout.SCHEDULE_MATRIX_PREFIX}"
    )

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"'{value}' is not an IANA time zone (e.g. UTC, Europe/Paris)") from None
        return value

    @field_validator("matrix_s3_key")
    @classmethod
    def _under_matrix_prefix(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith(layout.SCHEDULE_MATRIX_PREFIX) or ".." in value):
            raise ValueError(f"keep schedule matrices under {layout.SCHEDULE_MATRIX_PREFIX} in the results bucket")
        return value

    @field_validator("matrix")
    @classmethod
    def _valid_matrix(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # An inline matrix is checked at synth, so a broken schedule fails `cdk synth`, not a night's run.
        if value is None:
            return value
        try:
            campaign = parse_campaign(value)
        except MatrixError as error:
            raise ValueError(f"invalid matrix: {error}") from None
        embedded = [t.name for t in campaign.targets if t.endpoint is None]
        if embedded:
            raise ValueError(f"targets {', '.join(embedded)} are embedded servers, which only run locally")
        return value

    @model_validator(mode="after")
    def _one_matrix(self) -> ScheduleSpec:
        if (self.matrix is None) == (self.matrix_s3_key is None):
            raise ValueError("give exactly one of 'matrix' (inline) or 'matrix_s3_key'")
        return self


def _construct_id(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))


class SchedulesConstruct(Construct):
    """One schedule group holding the context's schedules, and the role they start campaigns with.

    A schedule with an inline matrix starts an execution itself; one whose matrix is in S3 invokes
    start_campaign, which reads the matrix and starts the execution. The role may do exactly
    those two things, and only EventBridge Scheduler acting for this group may assume it.
    """

    def __init__(  # noqa: PLR0913  # the constructs and resources it wires together
        self,
        scope: Construct,
        id_: str,
        schedules: list[ScheduleSpec],
        state_machine: sfn.IStateMachine,
        bucket: s3.IBucket,
        add_function: Callable[[constants.FunctionSpec, dict[str, str]], lambda_.Function],
    ) -> None:
        super().__init__(scope, id_)
        self.schedules: dict[str, scheduler.CfnSchedule] = {}
        self.start_campaign_function: lambda_.Function | None = None
        if not schedules:
            return
        self.group = scheduler.CfnScheduleGroup(self, "Group")
        self.role = self._build_role()
        if any(spec.matrix is not None for spec in schedules):
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["states:StartExecution"], resources=[state_machine.state_machine_arn])
            )
        if any(spec.matrix_s3_key is not None for spec in schedules):
            self.start_campaign_function = self._build_start_campaign(state_machine, bucket, add_function)
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.start_campaign_function.function_arn])
            )
        for spec in schedules:
            self.schedules[spec.name] = self._build_schedule(spec, state_machine)

    def _build_role(self) -> iam.Role:
        stack = Stack.of(self)
        # Confused-deputy protection: the scheduler may assume the role only for this account's group.
        principal = iam.ServicePrincipal(
            "scheduler.amazonaws.com",
            conditions={
                "StringEquals": {"aws:SourceAccount": stack.account},
                "ArnEquals": {"aws:SourceArn": self.group.attr_arn},
            },
        )
        return iam.Role(self, "SchedulerRole", assumed_by=principal, description="pgarena schedules: start campaign executions")

    def _build_start_campaign(
        self,
        state_machine: sfn.IStateMachine,
        bucket: s3.IBucket,
        add_function: Callable[[constants.FunctionSpec, dict[str, str]], lambda_.Function],
    ) -> lambda_.Function:
        function = add_function(
            constants.START_CAMPAIGN,
            {"RESULTS_BUCKET": bucket.bucket_name, "STATE_MACHINE_ARN": state_machine.state_machine_arn},
        )
        # Its read of the matrices comes with the function (pgarena.aws.access); starting is this construct's.
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[state_machine.state_machine_arn])
        )
        return function

    def _build_schedule(self, spec: ScheduleSpec, state_machine: sfn.IStateMachine) -> scheduler.CfnSchedule:
        if spec.matrix is not None:
            target_arn = state_machine.state_machine_arn
            payload = campaign_input(spec.name, spec.matrix)
        else:
            assert self.start_campaign_function is not None
            target_arn = self.start_campaign_function.function_arn
            payload = {"schedule": spec.name, "matrix_s3_key": spec.matrix_s3_key, "scheduled_time": SCHEDULED_TIME}
        return scheduler.CfnSchedule(
            self,
            f"Schedule{_construct_id(spec.name)}",
            name=spec.name,
            group_name=self.group.ref,
            description=f"pgarena campaign schedule {spec.name}",
            schedule_expression=spec.expression,
            schedule_expression_timezone=spec.timezone,
            state="ENABLED" if spec.enabled else "DISABLED",
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            target=scheduler.CfnSchedule.TargetProperty(
                arn=target_arn,
                role_arn=self.role.role_arn,
                input=json.dumps(payload, separators=(",", ":")),
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_retry_attempts=constants.SCHEDULE_RETRY_ATTEMPTS,
                    maximum_event_age_in_seconds=constants.SCHEDULE_MAX_EVENT_AGE_S,
                ),
            ),
        )
