"""Connection leases: campaigns sharing a server never take more slots together than its budget allows.

One DynamoDB item per server (host:port) lists the holders and their slots; every change is a
conditional write on the item's version, so two campaigns racing for the last slots cannot both win.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError
from pydantic import BaseModel, TypeAdapter

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.model.matrix import Endpoint

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import PutItemInputTypeDef


class Holder(BaseModel):
    holder: str
    slots: int
    expires_at: float


_HOLDERS = TypeAdapter(list[Holder])


def lease_key(endpoint: Endpoint) -> str:
    return f"{endpoint.host}:{endpoint.port}"


def holder_id(campaign_id: str, target: str) -> str:
    return f"{campaign_id}/{target}"


class LeaseStore:
    def __init__(self, dynamodb: DynamoDBClient, table: str, clock: Callable[[], float] = time.time):
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock

    def read(self, key: str) -> tuple[list[Holder], int]:
        """Live holders (expired ones dropped) and the item's version (0 when there is no item)."""
        item = self.dynamodb.get_item(TableName=self.table, Key=access.lease_item_key(key), ConsistentRead=True).get("Item")
        if not item:
            return [], 0
        values = unmarshal(item)
        holders = _HOLDERS.validate_json(values["holders"])
        now = self.clock()
        return [h for h in holders if h.expires_at > now], int(values["version"])

    def held_by_others(self, key: str, holder: str) -> int:
        holders, _ = self.read(key)
        return sum(h.slots for h in holders if h.holder != holder)

    def _write(self, key: str, holders: list[Holder], version: int) -> bool:
        request: PutItemInputTypeDef = {
            "TableName": self.table,
            "Item": {
                **access.lease_item_key(key),
                **marshal({"holders": _HOLDERS.dump_json(holders).decode(), "version": version + 1}),
            },
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        if version:
            request["ConditionExpression"] = "version = :v"
            request["ExpressionAttributeValues"] = marshal({":v": version})
        try:
            self.dynamodb.put_item(**request)
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def acquire(self, key: str, holder: str, slots: int, capacity: int, ttl_s: float) -> bool:
        """Take `slots` if, with the other holders, they fit in `capacity`; False if they do not (yet)."""
        while True:
            holders, version = self.read(key)
            others = [h for h in holders if h.holder != holder]
            if sum(h.slots for h in others) + slots > capacity:
                return False
            mine = Holder(holder=holder, slots=slots, expires_at=self.clock() + ttl_s)
            if self._write(key, [*others, mine], version):
                return True

    def release(self, key: str, holder: str) -> None:
        while True:
            holders, version = self.read(key)
            if version == 0 or not any(h.holder == holder for h in holders):
                return
            if self._write(key, [h for h in holders if h.holder != holder], version):
                return
