"""Server leases in the results table (AWS, and a single local runtime's moto): the pgarena.campaign.leases
port on a DynamoDB item per server (its holders and its queue), versioned by a conditional put."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.campaign.leases import Leases
from pgarena.model.lease import HOLDERS, WAITERS, LeaseRecord

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class LeaseStore(Leases):
    """Leases in the results table (AWS, and a single local runtime's moto)."""

    def __init__(self, dynamodb: DynamoDBClient, table: str, clock: Callable[[], float] = time.time):
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock

    def _read_all(self, key: str) -> LeaseRecord:
        item = self.dynamodb.get_item(TableName=self.table, Key=access.lease_item_key(key), ConsistentRead=True).get("Item")
        if not item:
            return LeaseRecord()
        values = unmarshal(item)
        return LeaseRecord(
            holders=HOLDERS.validate_json(values["holders"]),
            queue=WAITERS.validate_json(values.get("queue", "[]")),  # an item written before the queue: none
            version=int(values["version"]),
        )

    def _write(self, key: str, record: LeaseRecord) -> bool:
        version = record.version
        item = {
            **access.lease_item_key(key),
            **marshal(
                {
                    "holders": HOLDERS.dump_json(record.holders).decode(),
                    "queue": WAITERS.dump_json(record.queue).decode(),
                    "version": version + 1,
                }
            ),
        }
        try:
            if version == 0:
                self.dynamodb.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
            else:
                self.dynamodb.put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="version = :v",
                    ExpressionAttributeValues=marshal({":v": version}),
                )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True
