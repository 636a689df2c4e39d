"""A start barrier for the shards of one step: each worker checks in, the last one sets a start time a
moment ahead, and all begin their measured run at that time (Fargate tasks start tens of seconds apart)."""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# The last shard to arrive sets the start this far ahead, so every shard sees it before it passes.
START_DELAY_S = 1.0
BARRIER_TIMEOUT_S = 600.0
POLL_S = 0.05


def wait_at_barrier(
    dynamodb: DynamoDBClient,
    table: str,
    campaign_id: str,
    group_id: str,
    shard: int,
    shards: int,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float = BARRIER_TIMEOUT_S,
) -> tuple[float, bool]:
    """Block until the agreed start time; returns (start epoch, whether every shard arrived in time)."""
    key = access.barrier_key(campaign_id, group_id)
    # A string set of arrivals: a relaunched worker checking in twice is counted once.
    attributes = dynamodb.update_item(
        TableName=table,
        Key=key,
        UpdateExpression="ADD arrived :me",
        ExpressionAttributeValues=marshal({":me": {str(shard)}}),
        ReturnValues="ALL_NEW",
    )["Attributes"]
    arrived = unmarshal(attributes)["arrived"]
    if len(arrived) >= shards:
        dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET start_at = if_not_exists(start_at, :t)",
            # repr: the float's shortest round-tripping digits (the serializer takes Decimals, not floats)
            ExpressionAttributeValues=marshal({":t": Decimal(repr(clock() + START_DELAY_S))}),
        )
    deadline = clock() + timeout_s
    while True:
        item = dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item", {})
        if "start_at" in item:
            start_at = float(unmarshal(item)["start_at"])
            break
        if clock() > deadline:
            return clock(), False  # start anyway; the merged result says how many shards ran together
        sleep(POLL_S)
    if start_at > clock():
        sleep(start_at - clock())
    return start_at, True


class DynamoBarrier:
    """The pgarena.campaign.ports.Barrier port on the results table."""

    def __init__(self, dynamodb: DynamoDBClient, table: str):
        self.dynamodb = dynamodb
        self.table = table

    def wait(
        self, campaign_id: str, group_id: str, shard: int, shards: int, timeout_s: float = BARRIER_TIMEOUT_S
    ) -> tuple[float, bool]:
        return wait_at_barrier(self.dynamodb, self.table, campaign_id, group_id, shard, shards, timeout_s=timeout_s)
