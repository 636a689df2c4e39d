"""The warm workers' slots on the results table (the pgarena.campaign.ports.WorkerSlots port).

One item per slot (pgarena.model.warm.WorkerSlot), written by two parties: the worker that holds it
(`worker`: registered, idle with a beat, busy) and the launch function, which offers an idle worker the
next step. Every change is a conditional update, so that of an offer and a worker leaving, or of a
withdrawn offer and a late claim, exactly one happens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.campaign.ports import SlotState
from pgarena.model.warm import FRESH_S, Assignment, WorkerSlot

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BUSY, IDLE, ASSIGNED, GONE = "busy", "idle", "assigned", "gone"
_NAMES = {"#s": "state"}


def _epoch(value: float) -> Decimal:
    return Decimal(repr(round(value, 3)))  # the serializer takes Decimals, not floats


class DynamoWorkerSlots:
    def __init__(self, dynamodb: DynamoDBClient, table: str, clock: Callable[[], float] = time.time):
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock

    def _update(self, slot: WorkerSlot, expression: str, condition: str, values: dict[str, Any]) -> dict[str, Any] | None:
        """The item after a conditional update, or None when the condition did not hold."""
        try:
            answer = self.dynamodb.update_item(
                TableName=self.table,
                Key=access.worker_slot_key(slot.campaign_id, slot.name),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=_NAMES,  # every expression names the state (DynamoDB refuses unused names)
                ExpressionAttributeValues=marshal(values),
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise
        return unmarshal(answer["Attributes"])

    def read(self, slot: WorkerSlot) -> SlotState | None:
        item = self.dynamodb.get_item(
            TableName=self.table, Key=access.worker_slot_key(slot.campaign_id, slot.name), ConsistentRead=True
        ).get("Item")
        if not item:
            return None
        data = unmarshal(item)
        assignment = Assignment.model_validate_json(data["assignment"]) if data.get("assignment") else None
        return SlotState(state=data["state"], worker=data["worker"], seq=int(data["seq"]), assignment=assignment)

    # --- the launch function's side -----------------------------------------------------------------
    def offer(self, slot: WorkerSlot, assignment: Assignment) -> SlotState | None:
        """The step given to the slot's worker if its beat is fresh and it is idle, or busy answering the
        step before (it beats just before it answers); None when no such worker holds the slot."""
        item = self._update(
            slot,
            "SET #s = :assigned, assignment = :a, seq = seq + :one",
            "(#s = :idle OR #s = :busy) AND beat > :since",
            {
                ":assigned": ASSIGNED,
                ":a": assignment.model_dump_json(),
                ":one": 1,
                ":idle": IDLE,
                ":busy": BUSY,
                ":since": _epoch(self.clock() - FRESH_S),
            },
        )
        return None if item is None else SlotState(state=ASSIGNED, worker=item["worker"], seq=int(item["seq"]))

    def withdraw(self, slot: WorkerSlot, seq: int) -> bool:
        """Take back an offer no worker took; False when the worker took it meanwhile."""
        done = self._update(
            slot,
            "SET #s = :gone REMOVE assignment",
            "#s = :assigned AND seq = :seq",
            {":gone": GONE, ":assigned": ASSIGNED, ":seq": seq},
        )
        return done is not None

    # --- the worker's side ----------------------------------------------------------------------------
    def register(self, slot: WorkerSlot, worker: str) -> None:
        """A new worker holds the slot from now on (one it replaces sees another name there and exits)."""
        self.dynamodb.put_item(
            TableName=self.table,
            Item={
                **access.worker_slot_key(slot.campaign_id, slot.name),
                **marshal({"state": BUSY, "worker": worker, "seq": 0, "beat": _epoch(self.clock())}),
            },
        )

    def finishing(self, slot: WorkerSlot, worker: str) -> None:
        """The worker is about to answer its step: its beat renewed, so that the next step's offer finds
        it live however long the step ran."""
        self._update(
            slot, "SET beat = :now", "worker = :me AND attribute_exists(#s)", {":now": _epoch(self.clock()), ":me": worker}
        )

    def idle(self, slot: WorkerSlot, worker: str) -> bool:
        """The worker answered its step and waits for the next (one offered meanwhile stays offered);
        False when it no longer holds the slot."""
        values = {":idle": IDLE, ":busy": BUSY, ":now": _epoch(self.clock()), ":me": worker}
        if self._update(slot, "SET #s = :idle, beat = :now", "worker = :me AND #s = :busy", values) is not None:
            return True
        state = self.read(slot)
        return state is not None and state.worker == worker

    def beat(self, slot: WorkerSlot, worker: str) -> None:
        """An idle worker is still there (an offer may have come meanwhile: nothing to renew then)."""
        values = {":now": _epoch(self.clock()), ":me": worker, ":idle": IDLE}
        self._update(slot, "SET beat = :now", "worker = :me AND #s = :idle", values)

    def claim(self, slot: WorkerSlot, worker: str, seq: int) -> bool:
        """The worker takes the offer `seq`; False when it was withdrawn first."""
        values = {":busy": BUSY, ":me": worker, ":assigned": ASSIGNED, ":seq": seq, ":now": _epoch(self.clock())}
        condition = "worker = :me AND #s = :assigned AND seq = :seq"
        return self._update(slot, "SET #s = :busy, beat = :now", condition, values) is not None

    def leave(self, slot: WorkerSlot, worker: str) -> bool:
        """The worker exits; False when a step was offered meanwhile (it takes that one instead)."""
        values = {":gone": GONE, ":me": worker, ":idle": IDLE}
        return self._update(slot, "SET #s = :gone", "worker = :me AND #s = :idle", values) is not None
