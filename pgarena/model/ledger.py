"""The monthly cost ledger's records: a campaign's entry and the answer to a booking."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


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
