"""A worker task that stopped before its container ran (an image that cannot be pulled, no route out of
the subnets, a Fargate quota) never beats nor answers: without this, its step waits for the heartbeat
timeout. ECS's task state change (EventBridge, or the local ECS stand-in) names the task token in the
overrides RunTask was given; the step is failed at once with ECS's reason (pgarena.campaign.stopped_worker).

A task that did start is left alone: its worker answers for itself, or the heartbeat timeout tells.

EventBridge rules are regional, and so are ECS's state changes: each site region's stack has its own rule
on its cluster and its own task_stopped function (the home stack's, for the home cluster and the external
sites' EXTERNAL tasks in it). The step's token belongs to the home region's state machine, which the
worker's overrides name (RESULTS_REGION, where it reports): the function answers there, wherever it runs.
docs/guide/05-deploy.md ("Sites") says why a function per region rather than forwarding to home's bus.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from pgarena.aws.launch import step_field
from pgarena.aws.settings import RESULTS_REGION_VAR, TASK_TOKEN_VAR
from pgarena.model.errors import ErrorInfo, ErrorKind
from pgarena.model.stopped import UnstartedWorker

# ECS's stopCode for a task whose containers never ran.
FAILED_TO_START = "TaskFailedToStart"


def matches(pattern: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether `event` matches `pattern` as EventBridge matches one of exact values: each field's value is
    one of the listed, nested fields alike; a field the pattern names and the event lacks never matches."""
    for key, wanted in pattern.items():
        if key not in event:
            return False
        value = event[key]
        if isinstance(wanted, Mapping):
            if not isinstance(value, Mapping) or not matches(wanted, value):
                return False
        elif value not in wanted:
            return False
    return True


class KeyValue(BaseModel):
    name: str
    value: str = ""


class ContainerOverride(BaseModel):
    name: str = ""
    environment: list[KeyValue] = Field(default_factory=list)


class Overrides(BaseModel):
    containerOverrides: list[ContainerOverride] = Field(default_factory=list)  # ECS's spelling


class Container(BaseModel):
    name: str = ""
    exitCode: int | None = None
    reason: str | None = None


class TaskDetail(BaseModel):
    """The fields of ECS's "ECS Task State Change" detail read here."""

    taskArn: str
    lastStatus: str
    stopCode: str | None = None
    stoppedReason: str = ""
    startedAt: str | None = None  # absent for a task whose containers never ran
    containers: list[Container] = Field(default_factory=list)
    overrides: Overrides = Field(default_factory=Overrides)


class TaskStateChange(BaseModel):
    detail: TaskDetail


def _environment(detail: TaskDetail) -> dict[str, str]:
    return {item.name: item.value for override in detail.overrides.containerOverrides for item in override.environment}


def reason(detail: TaskDetail) -> str:
    """ECS's stoppedReason with each container's reason (unless the stoppedReason already says it) and exit code."""
    parts = [detail.stoppedReason or "stopped"]
    for container in detail.containers:
        said = [f"container {container.name or '?'}"]
        if container.reason and container.reason not in detail.stoppedReason:
            said.append(container.reason)
        if container.exitCode is not None:
            said.append(f"exit code {container.exitCode}")
        if len(said) > 1:
            parts.append(": ".join(said))
    return "; ".join(parts)


def unstarted_worker(change: TaskStateChange) -> UnstartedWorker | None:
    """The pgarena worker this stop leaves unanswered, or None (not stopped, it ran, or not a worker)."""
    detail = change.detail
    if detail.lastStatus != "STOPPED":
        return None
    if detail.startedAt is not None and detail.stopCode != FAILED_TO_START:
        return None
    environment = _environment(detail)
    token = environment.get(TASK_TOKEN_VAR)
    if not token:
        return None
    message = f"the worker's task stopped before its container ran ({detail.stopCode or 'no stop code'}): {reason(detail)}"
    return UnstartedWorker(
        task_arn=detail.taskArn,
        step_id=step_field(environment, "step_id"),
        task_token=token,
        error=ErrorInfo(kind=ErrorKind.WORKER_DID_NOT_START, message=message),
        home_region=environment.get(RESULTS_REGION_VAR) or None,
    )
