"""The index of finished campaign runs in the results table: one item per run, in its campaign's
partition, sorted by when it started (access.HISTORY). finalize writes it; `pgarena history --stack` reads it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pgarena.analysis.history.schema import IndexedRun
from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_RUN = "run"  # the item's attribute holding the run as JSON (IndexedRun)


class HistoryIndex:
    def __init__(self, dynamodb: DynamoDBClient, table: str):
        self.dynamodb, self.table = dynamodb, table

    def record(self, run: IndexedRun) -> None:
        """Idempotent: a finalize delivered twice writes the same item again."""
        key = access.history_key(run.campaign, run.started_at, run.campaign_id)
        self.dynamodb.put_item(TableName=self.table, Item={**key, **marshal({_RUN: run.model_dump_json()})})

    def runs(self, campaign: str) -> list[IndexedRun]:
        """The campaign's runs, oldest first."""
        found: list[IndexedRun] = []
        pages = self.dynamodb.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": access.PARTITION_KEY},
            ExpressionAttributeValues=marshal({":pk": access.HISTORY.pk(campaign)}),
        )
        for page in pages:
            found += [IndexedRun.model_validate_json(unmarshal(item)[_RUN]) for item in page.get("Items", [])]
        return found

    def campaigns(self) -> list[str]:
        """Every indexed campaign name: a scan of the index's partitions (the CLI's, never a function's)."""
        names: set[str] = set()
        pages = self.dynamodb.get_paginator("scan").paginate(
            TableName=self.table,
            FilterExpression="begins_with(#pk, :prefix)",
            ExpressionAttributeNames={"#pk": access.PARTITION_KEY},
            ExpressionAttributeValues=marshal({":prefix": access.HISTORY.prefix}),
            ProjectionExpression="#pk",
        )
        for page in pages:
            names |= {
                str(unmarshal(item)[access.PARTITION_KEY]).removeprefix(access.HISTORY.prefix) for item in page.get("Items", [])
            }
        return sorted(names)
