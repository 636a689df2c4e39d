"""The warm workers' slots on the results table (the pgarena.campaign.ports.WorkerSlots port).

One item per slot (pgarena.model.warm.WorkerSlot), written by three parties: the worker that holds it
(`worker`: registered, idle with a beat, busy, gone), the launch function, which offers an idle worker
the next step, and whatever ends the target's phase or the campaign, which closes it. Every change is a
conditional update, so that of an offer and a worker leaving, of a withdrawn offer and a late claim, or
of an offer and a close, exactly one happens.

The item also names the step it holds (`step_id`, `task_token`: offered, being launched, served or
finished) and the task its worker runs in (`task`). A step is offered only to a worker idle or finishing
its previous step, never to a busy one, and never twice: a launch the state machine retries (a Lambda
error after the step was handed over) finds its step there and starts no second worker for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.campaign.ports import SlotState
from pgarena.model.warm import ASSIGNED, BUSY, CLOSED, FINISHING, FRESH_S, GONE, IDLE, LAUNCHING, Assignment, WorkerSlot

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_NAMES = {"#s": "state"}
# The slot does not hold the step whose token is :token (compared explicitly: the slot may hold none).
_NOT_HOLDING = "(attribute_not_exists(task_token) OR task_token <> :token)"


def _epoch(value: float) -> Decimal:
    return Decimal(repr(round(value, 3)))  # the serializer takes Decimals, not floats


class DynamoWorkerSlots:
    def __init__(self, dynamodb: DynamoDBClient, table: str, clock: Callable[[], float] = time.time):
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock

    def _update(  # the update, its condition and values, and which item to answer
        self,
        slot: WorkerSlot,
        expression: str,
        condition: str,
        values: dict[str, Any],
        returned: Literal["ALL_NEW", "ALL_OLD"] = "ALL_NEW",
    ) -> dict[str, Any] | None:
        """The item after (or before) a conditional update, or None when the condition did not hold."""
        try:
            answer = self.dynamodb.update_item(
                TableName=self.table,
                Key=access.worker_slot_key(slot.campaign_id, slot.name),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=_NAMES,  # every expression names the state (DynamoDB refuses unused names)
                ExpressionAttributeValues=marshal(values),
                ReturnValues=returned,
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise
        return unmarshal(answer.get("Attributes") or {})

    def read(self, slot: WorkerSlot) -> SlotState | None:
        item = self.dynamodb.get_item(
            TableName=self.table, Key=access.worker_slot_key(slot.campaign_id, slot.name), ConsistentRead=True
        ).get("Item")
        return _state(unmarshal(item)) if item else None

    # --- the launch function's side -----------------------------------------------------------------
    def offer(self, slot: WorkerSlot, assignment: Assignment) -> SlotState | None:
        """The step given to the slot's worker if its beat is fresh and it is idle, or finishing the step
        before (it beats just before it answers); None when no such worker holds the slot, when its worker
        is busy on a step, or when the slot holds this step already (its token)."""
        item = self._update(
            slot,
            "SET #s = :assigned, assignment = :a, seq = seq + :one, step_id = :step, task_token = :token",
            "(#s = :idle OR #s = :finishing) AND beat > :since AND " + _NOT_HOLDING,
            {
                ":assigned": ASSIGNED,
                ":a": assignment.model_dump_json(),
                ":one": 1,
                ":idle": IDLE,
                ":finishing": FINISHING,
                ":since": _epoch(self.clock() - FRESH_S),
                ":step": assignment.step.step_id,
                ":token": assignment.task_token,
            },
        )
        return None if item is None else _state(item)

    def withdraw(self, slot: WorkerSlot, seq: int) -> bool:
        """Take back an offer no worker took, the slot then waiting for a worker started for the step
        (launching); False when the worker took it meanwhile."""
        done = self._update(
            slot,
            "SET #s = :launching, worker = :none REMOVE assignment",
            "#s = :assigned AND seq = :seq",
            {":launching": LAUNCHING, ":none": "", ":assigned": ASSIGNED, ":seq": seq},
        )
        return done is not None

    def launching(self, slot: WorkerSlot, assignment: Assignment) -> bool:
        """The slot holds the step from now on, a worker about to be started for it (RunTask): no worker
        holds the slot until that one registers (one idle there sees that and exits). False when the slot
        is closed, or holds this step already otherwise than launching it (offered, served, finished)."""
        done = self._update(
            slot,
            "SET #s = :launching, worker = :none, seq = if_not_exists(seq, :zero), step_id = :step, task_token = :token "
            "REMOVE assignment, task",
            f"attribute_not_exists(#s) OR (#s <> :closed AND ({_NOT_HOLDING} OR #s = :launching))",
            {
                ":launching": LAUNCHING,
                ":none": "",
                ":zero": 0,
                ":closed": CLOSED,
                ":step": assignment.step.step_id,
                ":token": assignment.task_token,
            },
        )
        return done is not None

    def started(self, slot: WorkerSlot, task_token: str, task: str) -> None:
        """The task RunTask started for the slot's step (task_stopped finds a stopped task's step by it);
        nothing when the slot moved on to another step meanwhile."""
        condition = "attribute_exists(#s) AND task_token = :token"  # every expression names the state
        self._update(slot, "SET task = :task", condition, {":task": task, ":token": task_token})

    # --- the side that ends a target's phase or the campaign ----------------------------------------------
    def close(self, slot: WorkerSlot, why: str) -> SlotState | None:
        """No step will come to the slot again: offers, claims and beats fail from now on, its idle worker
        leaves at its next poll, a worker started for it late does not register. Made even when no worker
        registered yet; a slot closed already keeps its first reason. The slot as it was before, or None
        when it was closed already or had no item."""
        before = self._update(
            slot,
            "SET #s = :closed, close_reason = :why, closed_at = :now REMOVE assignment",
            "attribute_not_exists(#s) OR #s <> :closed",
            {":closed": CLOSED, ":why": why, ":now": _epoch(self.clock())},
            returned="ALL_OLD",
        )
        return _state(before) if before else None

    # --- the worker's side ----------------------------------------------------------------------------
    def register(self, slot: WorkerSlot, worker: str, task_token: str | None = None) -> bool:
        """A new worker holds the slot from now on, busy on the step it was started with (one it replaces
        sees another name there and exits); False when the slot is closed (its step was given up before
        the worker started) or, given the worker's task token, when the slot has moved on to another step."""
        condition = "attribute_not_exists(#s) OR #s <> :closed"
        values: dict[str, Any] = {":busy": BUSY, ":me": worker, ":zero": 0, ":now": _epoch(self.clock()), ":closed": CLOSED}
        if task_token is not None:
            condition = f"({condition}) AND (attribute_not_exists(task_token) OR task_token = :token)"
            values[":token"] = task_token
        registered = self._update(
            slot,
            "SET #s = :busy, worker = :me, seq = if_not_exists(seq, :zero), beat = :now REMOVE leave_reason, left_at, assignment",
            condition,
            values,
        )
        return registered is not None

    def finishing(self, slot: WorkerSlot, worker: str) -> None:
        """The worker is about to answer its step: its beat renewed, so that the next step's offer finds
        it live however long the step ran, and the next step may be offered to it from now on."""
        values = {":finishing": FINISHING, ":busy": BUSY, ":now": _epoch(self.clock()), ":me": worker}
        self._update(slot, "SET #s = :finishing, beat = :now", "worker = :me AND #s = :busy", values)

    def idle(self, slot: WorkerSlot, worker: str) -> bool:
        """The worker answered its step and waits for the next (one offered meanwhile stays offered);
        False when it no longer holds the slot, or the slot is closed."""
        values = {":idle": IDLE, ":busy": BUSY, ":finishing": FINISHING, ":now": _epoch(self.clock()), ":me": worker}
        condition = "worker = :me AND (#s = :busy OR #s = :finishing)"
        if self._update(slot, "SET #s = :idle, beat = :now", condition, values) is not None:
            return True
        state = self.read(slot)
        return state is not None and state.worker == worker and state.state != CLOSED

    def beat(self, slot: WorkerSlot, worker: str) -> None:
        """An idle worker is still there (an offer may have come meanwhile: nothing to renew then)."""
        values = {":now": _epoch(self.clock()), ":me": worker, ":idle": IDLE}
        self._update(slot, "SET beat = :now", "worker = :me AND #s = :idle", values)

    def claim(self, slot: WorkerSlot, worker: str, seq: int) -> bool:
        """The worker takes the offer `seq`; False when it was withdrawn first."""
        values = {":busy": BUSY, ":me": worker, ":assigned": ASSIGNED, ":seq": seq, ":now": _epoch(self.clock())}
        condition = "worker = :me AND #s = :assigned AND seq = :seq"
        return self._update(slot, "SET #s = :busy, beat = :now", condition, values) is not None

    def leave(self, slot: WorkerSlot, worker: str, why: str) -> bool:
        """The worker exits, saying why and when; False when a step was offered meanwhile (it takes that
        one instead) or it no longer holds the slot. On a closed slot the leaving is noted beside the close."""
        values = {
            ":gone": GONE,
            ":me": worker,
            ":idle": IDLE,
            ":busy": BUSY,
            ":finishing": FINISHING,
            ":why": why,
            ":now": _epoch(self.clock()),
        }
        left = "SET #s = :gone, leave_reason = :why, left_at = :now"
        if self._update(slot, left, "worker = :me AND (#s = :idle OR #s = :busy OR #s = :finishing)", values) is not None:
            return True
        values = {":me": worker, ":closed": CLOSED, ":why": why, ":now": _epoch(self.clock())}
        noted = self._update(slot, "SET leave_reason = :why, left_at = :now", "worker = :me AND #s = :closed", values)
        return noted is not None


def _state(data: dict[str, Any]) -> SlotState:
    assignment = Assignment.model_validate_json(data["assignment"]) if data.get("assignment") else None
    left_at = data.get("left_at")
    return SlotState(
        state=data.get("state", LAUNCHING),  # an item the launch wrote (its task) before any state was set
        worker=data.get("worker", ""),
        seq=int(data.get("seq", 0)),
        assignment=assignment,
        closed=data.get("close_reason"),
        left=data.get("leave_reason"),
        left_at=float(left_at) if left_at is not None else None,
        step_id=data.get("step_id", ""),
        task_token=data.get("task_token", ""),
        task=data.get("task", ""),
    )
