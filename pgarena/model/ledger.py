"""The cost guard's records: what prices a campaign, the guard's decision, the monthly ledger's entry and
the answer to a booking."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from pgarena.model.cost import CostEstimate
from pgarena.model.errors import ErrorInfo, ErrorKind

COST_CAP_REFUSED = ErrorKind.COST_CAP_REFUSED


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


class WorkerPricing(BaseModel):
    """What prices a campaign's Fargate time: the worker's size, and the region when the matrix names none."""

    cpu_units: int
    memory_mib: int
    default_region: str
