"""The cost guard and the monthly ledger: caps checked before any worker starts, spending booked per month.

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
from typing import TYPE_CHECKING, Literal

from botocore.exceptions import ClientError
from pydantic import BaseModel

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.model.cost import CostEstimate
from pgarena.model.errors import ErrorInfo, ErrorKind
from pgarena.model.matrix import CostPolicy
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.plan import Plan
from pgarena.model.results import CampaignCost, StepSummary
from pgarena.planning import cost

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import PutTypeDef, UpdateTypeDef

COST_CAP_REFUSED = ErrorKind.COST_CAP_REFUSED


def month_of(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m")


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")


def _usd(usd: float) -> Decimal:
    # DynamoDB numbers are decimals: go through the rounded float's text so binary floats do not leak
    # digits into the total.
    return Decimal(str(round(usd, 6)))


class LedgerEntry(BaseModel):
    campaign_id: str
    month: str
    status: Literal["booked", "settled", "refused"]
    estimated_usd: float
    actual_usd: float | None = None
    schedule: str | None = None
    reason: str | None = None
    booked_at: str
    settled_at: str | None = None


class Booking(BaseModel):
    booked: bool
    committed_before_usd: float
    entry: LedgerEntry


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


class CostDecision(BaseModel):
    """The cost guard's answer; Aggregate And Rank receives it to list a refusal and settle the ledger."""

    campaign_id: str
    allowed: bool
    month: str
    estimate: CostEstimate
    cap_usd: float | None = None
    monthly_cap_usd: float | None = None
    month_committed_usd: float | None = None
    booked: bool = False
    reason: str | None = None

    @property
    def refusal(self) -> ErrorInfo | None:
        return None if self.allowed else ErrorInfo(kind=COST_CAP_REFUSED, message=self.reason or "refused")


def check_cost(plan: Plan, ledger: Ledger, cpu_units: int, memory_mib: int, default_region: str) -> CostDecision:
    """Estimate the campaign and decide: over its own cap it is refused; otherwise it is booked in the
    month's ledger, or refused when that would pass the monthly cap. Priced on-demand (an upper
    bound when workers run on Spot)."""
    policy = plan.cost or CostPolicy()
    vcpu, memory_gb = cost.worker_size(cpu_units, memory_mib)
    estimate = cost.estimate(plan, vcpu, memory_gb, policy.region or default_region)
    month = month_of(ledger.clock())
    decision = CostDecision(
        campaign_id=plan.campaign_id,
        allowed=False,
        month=month,
        estimate=estimate,
        cap_usd=policy.cap_usd,
        monthly_cap_usd=policy.monthly_cap_usd,
    )
    if policy.cap_usd is not None and estimate.total_usd > policy.cap_usd:
        reason = (
            f"estimated ${estimate.total_usd:.2f} exceeds the campaign cap ${policy.cap_usd:.2f} "
            f"({estimate.breakdown()}): raise cost.cap_usd or run fewer steps, shorter runs or cheaper targets"
        )
        ledger.record_refusal(month, plan.campaign_id, estimate.total_usd, reason, policy.schedule)
        return decision.model_copy(update={"reason": reason})
    booking = ledger.book(month, plan.campaign_id, estimate.total_usd, policy.monthly_cap_usd, policy.schedule)
    return decision.model_copy(
        update={
            "allowed": booking.booked,
            "booked": booking.booked,
            "month_committed_usd": booking.committed_before_usd,
            "reason": booking.entry.reason,
        }
    )


def _seconds_between(started_at: str, finished_at: str) -> float | None:
    try:
        return (datetime.fromisoformat(finished_at) - datetime.fromisoformat(started_at)).total_seconds()
    except ValueError:
        return None


def settle_campaign(
    decision: CostDecision,
    plan: Plan,
    outcomes: list[TargetOutcome],
    summaries: list[StepSummary],
    started_at: str,
    finished_at: str,
    ledger: Ledger,
) -> CampaignCost:
    """Price what ran, record it in the ledger in place of the estimate, and say both for results.json."""
    estimate = decision.estimate
    report = CampaignCost(
        region=estimate.region,
        estimated_usd=estimate.total_usd,
        bound_usd=estimate.bound_usd,
        cap_usd=decision.cap_usd,
        monthly_cap_usd=decision.monthly_cap_usd,
        month=decision.month,
        refused=None if decision.allowed else decision.reason,
    )
    if not decision.booked:
        return report
    tool_s = {s.step_id: s.wall_s for s in summaries}
    launched_without_summary = {o.step_id for target in outcomes for o in target.steps} - set(tool_s)
    wall_s = _seconds_between(started_at, finished_at) or estimate.wall_s
    spent = cost.actual(
        plan,
        cost.measured_workers(plan, tool_s, launched_without_summary),
        wall_s,
        estimate.worker_vcpu,
        estimate.worker_memory_gb,
        estimate.region,
        estimate.spot,
    )
    ledger.settle(decision.month, decision.campaign_id, spent.total_usd)
    return report.model_copy(update={"actual_usd": spent.total_usd})
