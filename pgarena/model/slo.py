"""What an SLO search measured: its curve of probes and the throughput at which the objective held."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pgarena.model.errors import ErrorInfo


class SloProbe(BaseModel):
    """One pgbench run of the search: the closed-loop ceiling (rate_tps None) or an open-loop probe."""

    rate_tps: float | None = Field(description="the --rate asked; None for the closed-loop ceiling run")
    tps: float | None = Field(None, description="achieved, over the measured window")
    p95_ms: float | None = None
    p99_ms: float | None = None
    lag_growing: bool | None = Field(None, description="the schedule lag grew over the run (None: no lag series)")
    sustained: bool = Field(False, description="open loop: >= 95% of the rate delivered and the lag did not grow")
    met: bool = Field(False, description="sustained, and the objective's percentile at or under its limit")
    raw: list[str] = Field(default_factory=list, description="the probe's tool output and transaction log")
    error: ErrorInfo | None = None


class SloSearch(BaseModel):
    """The highest open-loop rate at which the objective held: a ceiling run, then a bisection on --rate
    between 0 and the ceiling's tps, `probes` runs in all (pgarena.analysis.slo)."""

    percentile: Literal[95, 99]
    limit_ms: float
    probes: int = Field(description="open-loop probes planned after the ceiling run")
    ceiling_tps: float | None = Field(None, description="the closed-loop run's tps: the bisection's upper bound")
    curve: list[SloProbe] = Field(default_factory=list, description="the ceiling run first, then the probes as run")
    slo_tps: float | None = Field(
        None,
        description="tps achieved by the highest-rate probe that met the objective; 0 when none did; "
        "None when the search could not run (the ceiling run failed)",
    )
    slo_rate_tps: float | None = Field(None, description="that probe's --rate")
    note: str | None = None
