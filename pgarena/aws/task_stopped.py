"""A worker task that stopped without answering its step never beats again: without this, its step waits
for the heartbeat timeout. ECS's task state change (EventBridge, or the local ECS stand-in, which sees its
process exit) comes for every stopped worker task, whatever its stop code, and the step is failed at once
(pgarena.campaign.stopped_worker):

- a task that stopped before its container ran (an image that cannot be pulled, no route out of the
  subnets, a Fargate quota): the step of the task token in the overrides RunTask was given, with
  `worker_did_not_start` and ECS's reason;
- a task that ran and stopped mid-step (killed, out of memory, its host or Spot capacity gone): the step
  its slot says it holds (a warm worker serves several steps, each with its own token: pgarena.aws.
  worker_slots, which records the task a slot's worker runs in), with `worker_lost` and ECS's reason.
  A worker idle, gone from its slot, or replaced there holds no step: nothing is failed. A step already
  answered fails harmlessly (Step Functions refuses the token: TaskTimedOut, InvalidToken).

EventBridge rules are regional, and so are ECS's state changes: each site region's stack has its own rule
on its cluster and its own task_stopped function (the home stack's, for the home cluster and the external
sites' EXTERNAL tasks in it). The step's token belongs to the home region's state machine, which the
worker's overrides name (RESULTS_REGION, where it reports): the function answers there, wherever it runs.
docs/guide/05-deploy.md ("Sites") says why a function per region rather than forwarding to home's bus.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, Field, ValidationError

from pgarena.aws.launch import step_field
from pgarena.aws.settings import RESULTS_REGION_VAR, STEP_VAR, TASK_TOKEN_VAR
from pgarena.campaign.ports import SlotState
from pgarena.model.errors import ErrorInfo, ErrorKind
from pgarena.model.plan import is_preflight
from pgarena.model.stopped import StoppedWorker
from pgarena.model.warm import BUSY, FINISHING, LAUNCHING, WorkerSlot

log = logging.getLogger(__name__)

# ECS's stopCode for a task whose containers never ran.
FAILED_TO_START = "TaskFailedToStart"
SLOT_VAR = "PGARENA_WORKER_SLOT"
# The slot's states in which its worker holds a step it has not answered (finishing: about to answer).
HOLDING = frozenset({BUSY, FINISHING, LAUNCHING})


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


# The slot a stopped task's worker served, read in the home region's results table (region, table, slot):
# None when the slot has no item, or cannot be read.
SlotReader = Callable[[str | None, str, WorkerSlot], SlotState | None]


def stopped_worker(change: TaskStateChange, read_slot: SlotReader) -> StoppedWorker | None:
    """The step this stop leaves unanswered, or None (not stopped, not a worker, or its worker held no
    step: idle, gone, replaced)."""
    detail = change.detail
    if detail.lastStatus != "STOPPED":
        return None
    environment = _environment(detail)
    token = environment.get(TASK_TOKEN_VAR)
    if not token:
        return None
    home = environment.get(RESULTS_REGION_VAR) or None
    if detail.startedAt is None or detail.stopCode == FAILED_TO_START:
        message = f"the worker's task stopped before its container ran ({detail.stopCode or 'no stop code'}): {reason(detail)}"
        error = ErrorInfo(kind=ErrorKind.WORKER_DID_NOT_START, message=message)
        return StoppedWorker(
            task_arn=detail.taskArn, step_id=step_field(environment, "step_id"), task_token=token, error=error, home_region=home
        )
    held = _held_step(detail, environment, read_slot)
    if held is None:
        return None
    step_id, held_token = held
    message = f"the worker's task stopped while its step ran ({detail.stopCode or 'no stop code'}): {reason(detail)}"
    error = ErrorInfo(kind=ErrorKind.WORKER_LOST, message=message)
    return StoppedWorker(task_arn=detail.taskArn, step_id=step_id, task_token=held_token, error=error, home_region=home)


def _held_step(detail: TaskDetail, environment: Mapping[str, str], read_slot: SlotReader) -> tuple[str, str] | None:
    """(step id, task token) of the step the stopped task's worker held unanswered, or None. A worker
    started for one step holds that one; a warm worker the one its slot names, if the slot is its task's
    and busy (a step it claimed, or the one it was started with before it registered)."""
    first = (step_field(environment, "step_id"), environment[TASK_TOKEN_VAR])
    try:
        slot = WorkerSlot.model_validate_json(environment.get(SLOT_VAR) or "")
    except ValidationError:
        return first  # started for one step: if it answered, the failure is refused
    try:
        state = read_slot(environment.get(RESULTS_REGION_VAR) or None, environment.get("RESULTS_TABLE", ""), slot)
    except (BotoCoreError, ClientError) as error:
        log.warning("the slot of stopped task %s could not be read (%s): failing its first step", detail.taskArn, error)
        return first
    if state is None:
        return first  # no slot item: it never registered, and no launch recorded its step
    if state.state not in HOLDING:
        return None
    if state.task == detail.taskArn or (not state.task and state.task_token == first[1]):
        return state.step_id, state.task_token
    if not state.task_token and is_preflight(environment.get(STEP_VAR, "")):
        return first  # a worker started for its target's preflight on its site, still on it
    return None
