"""The monthly ledger in the results table (the pgarena.campaign.ports.Ledger port): spending booked per month.

Ledger items live in the results table under the partition `ledger#<YYYY-MM>`: one item per
campaign (sk `campaign#<id>`: its estimate, later its actual) and the month's running total
(sk `total`: `committed_usd`, the estimates of campaigns still running plus the actuals of those
that finished). Booking is one transaction of two conditional writes: the campaign's item is
created only if absent (a retried guard books once) and the total grows only while it stays within
the monthly cap, so two campaigns racing for the month's last dollars cannot both get in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.model.ledger import Booking, LedgerEntry

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import PutTypeDef, UpdateTypeDef


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")


def _usd(usd: float) -> Decimal:
    # DynamoDB numbers are decimals: go through the rounded float's text so binary floats do not leak
    # digits into the total.
    return Decimal(str(round(usd, 6)))


class Ledger:
    def __init__(self, dynamodb: DynamoDBClient, table: str, clock: Callable[[], float] = time.time):
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock

    def total(self, month: str) -> float:
        item = self.dynamodb.get_item(TableName=self.table, Key=access.ledger_total_key(month), ConsistentRead=True).get("Item")
        return float(unmarshal(item)["committed_usd"]) if item and "committed_usd" in item else 0.0

    def entry(self, month: str, campaign_id: str) -> LedgerEntry | None:
        item = self.dynamodb.get_item(
            TableName=self.table, Key=access.ledger_campaign_key(month, campaign_id), ConsistentRead=True
        ).get("Item")
        return LedgerEntry.model_validate_json(unmarshal(item)["entry"]) if item else None

    def entries(self, month: str) -> list[LedgerEntry]:
        pages = self.dynamodb.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :campaign)",
            ExpressionAttributeValues=marshal({":pk": access.LEDGER.pk(month), ":campaign": access.LEDGER_CAMPAIGN_SK_PREFIX}),
            ConsistentRead=True,
        )
        return [LedgerEntry.model_validate_json(unmarshal(item)["entry"]) for page in pages for item in page["Items"]]

    def _entry_put(self, entry: LedgerEntry) -> PutTypeDef:
        return {
            "TableName": self.table,
            "Item": {
                **access.ledger_campaign_key(entry.month, entry.campaign_id),
                **marshal({"status": entry.status, "estimated_usd": _usd(entry.estimated_usd), "entry": entry.model_dump_json()}),
            },
            "ConditionExpression": "attribute_not_exists(pk)",
        }

    def _add_to_total(self, month: str, usd: float, campaigns: int, headroom_usd: float | None) -> UpdateTypeDef:
        values: dict[str, object] = {":usd": _usd(usd), ":n": campaigns}
        update: UpdateTypeDef = {
            "TableName": self.table,
            "Key": access.ledger_total_key(month),
            "UpdateExpression": "ADD committed_usd :usd, campaigns :n",
        }
        if headroom_usd is not None:
            update["ConditionExpression"] = "attribute_not_exists(committed_usd) OR committed_usd <= :headroom"
            values[":headroom"] = _usd(headroom_usd)
        update["ExpressionAttributeValues"] = marshal(values)
        return update

    def record_refusal(
        self, month: str, campaign_id: str, estimated_usd: float, reason: str, schedule: str | None = None
    ) -> LedgerEntry:
        """Keep a refused campaign on record; the month's total is untouched. Idempotent."""
        entry = LedgerEntry(
            campaign_id=campaign_id,
            month=month,
            status="refused",
            estimated_usd=estimated_usd,
            schedule=schedule,
            reason=reason,
            booked_at=_iso(self.clock()),
        )
        try:
            self.dynamodb.put_item(**self._entry_put(entry))
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return self.entry(month, campaign_id) or entry
        return entry

    def book(
        self,
        month: str,
        campaign_id: str,
        estimated_usd: float,
        monthly_cap_usd: float | None = None,
        schedule: str | None = None,
    ) -> Booking:
        """Add the campaign's estimate to the month if it fits under the cap; otherwise record the refusal.

        A campaign already in the ledger (a retried call) gets its first answer again.
        """
        while True:
            committed = self.total(month)
            existing = self.entry(month, campaign_id)
            if existing is not None:
                return Booking(booked=existing.status != "refused", committed_before_usd=committed, entry=existing)
            headroom = None if monthly_cap_usd is None else monthly_cap_usd - estimated_usd
            if headroom is not None and (headroom < 0 or committed > headroom):
                reason = (
                    f"the month {month} already has ${committed:.2f} booked; this campaign's estimated "
                    f"${estimated_usd:.2f} would take it past the monthly cap ${monthly_cap_usd:.2f}"
                )
                entry = self.record_refusal(month, campaign_id, estimated_usd, reason, schedule)
                return Booking(booked=entry.status != "refused", committed_before_usd=committed, entry=entry)
            entry = LedgerEntry(
                campaign_id=campaign_id,
                month=month,
                status="booked",
                estimated_usd=estimated_usd,
                schedule=schedule,
                booked_at=_iso(self.clock()),
            )
            try:
                self.dynamodb.transact_write_items(
                    TransactItems=[
                        {"Put": self._entry_put(entry)},
                        {"Update": self._add_to_total(month, estimated_usd, 1, headroom)},
                    ]
                )
            except ClientError as error:
                if error.response["Error"]["Code"] != "TransactionCanceledException":
                    raise
                continue  # another campaign (or a retry of this one) wrote first: read again and decide again
            return Booking(booked=True, committed_before_usd=committed, entry=entry)

    def settle(self, month: str, campaign_id: str, actual_usd: float) -> LedgerEntry | None:
        """Replace the campaign's estimate in the month's total with what it actually cost. Idempotent."""
        while True:
            entry = self.entry(month, campaign_id)
            if entry is None or entry.status != "booked":
                return entry
            settled = entry.model_copy(update={"status": "settled", "actual_usd": actual_usd, "settled_at": _iso(self.clock())})
            try:
                self.dynamodb.transact_write_items(
                    TransactItems=[
                        {
                            "Update": {
                                "TableName": self.table,
                                "Key": access.ledger_campaign_key(month, campaign_id),
                                "UpdateExpression": "SET #status = :settled, actual_usd = :actual, entry = :entry",
                                "ConditionExpression": "#status = :booked",
                                "ExpressionAttributeNames": {"#status": "status"},
                                "ExpressionAttributeValues": marshal(
                                    {
                                        ":settled": "settled",
                                        ":booked": "booked",
                                        ":actual": _usd(actual_usd),
                                        ":entry": settled.model_dump_json(),
                                    }
                                ),
                            }
                        },
                        {"Update": self._add_to_total(month, actual_usd - entry.estimated_usd, 0, None)},
                    ]
                )
            except ClientError as error:
                if error.response["Error"]["Code"] != "TransactionCanceledException":
                    raise
                continue
            return settled
