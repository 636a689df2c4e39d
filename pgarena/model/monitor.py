"""Models split from target.monitor."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ActivitySample(BaseModel):
    t_s: float = Field(description="seconds since the monitor started")
    total: int
    benchmark: int = Field(description="sessions of the step being measured")
    by_state: dict[str, int]
    by_role: dict[str, int]
    longest_s_by_state: dict[str, float]


class Incident(BaseModel):
    kind: str
    at_s: float
    message: str


class ConnectionReport(BaseModel):
    interval_s: float
    samples: int
    peak_benchmark: int
    peak_total: int
    peak_by_state: dict[str, int]
    longest_s_by_state: dict[str, float]
    incidents: list[Incident] = Field(default_factory=list)
    raw: str | None = Field(None, description="the sample series (JSON lines)")
