"""Two campaigns compared: what changed per target, workload and client count, and which settings differ."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pgarena.model.pairwise import Outcome

Verdict = Literal[
    "regression", "improvement", "unchanged", "within_noise", "failed", "recovered", "new", "gone", "not_comparable"
]

# How the terminal's table says a verdict (--json keeps the identifiers): words a DBA reads right.
_VERDICT_WORDS = {"within_noise": "inconclusive", "not_comparable": "not comparable", "failed": "failed in B"}


def verdict_words(verdict: Verdict, threshold: float) -> str:
    """'inconclusive', 'unchanged (within 5%)', 'regression', ...: a verdict as the table prints it."""
    if verdict == "unchanged":
        return f"unchanged (within {threshold:.0%})"
    return _VERDICT_WORDS.get(verdict, verdict)


class FigureTest(BaseModel):
    """One figure of a point decided B against A, as the ranking decides two targets: the interval that decided it."""

    figure: str = Field(description="tps, 'latency p95' or 'tps at SLO'")
    change: float = Field(description="(b - a) / a of the means over the repetitions")
    outcome: Outcome
    ci_low: float | None = Field(
        None, description="the change's interval, relative like `change`; None with fewer than 3 runs a side"
    )
    ci_high: float | None = None
    confidence: float | None = Field(
        None, description="the interval's confidence, e.g. 0.983 (5% shared over the point's figures)"
    )


class Change(BaseModel):
    target: str
    workload: str
    clients: int | None
    verdict: Verdict
    tps_a: float | None = None
    tps_b: float | None = None
    tps_change: float | None = Field(None, description="(b - a) / a")
    latency_field: str | None = Field(None, description="p95 when both campaigns have it, else avg")
    latency_a: float | None = None
    latency_b: float | None = None
    latency_change: float | None = None
    slo: str | None = Field(None, description="the latency objective both campaigns searched, e.g. 'p99 <= 50 ms'")
    slo_tps_a: float | None = None
    slo_tps_b: float | None = None
    slo_tps_change: float | None = Field(None, description="(b - a) / a of tps at SLO, when both searched the same SLO")
    nopm_a: float | None = None
    nopm_b: float | None = None
    nopm_change: float | None = Field(None, description="(b - a) / a of NOPM (a TPROC-C workload's new orders per minute)")
    reasons: list[str] = Field(default_factory=list)
    tests: list[FigureTest] = Field(default_factory=list, description="each figure compared, with its interval")

    @property
    def worse(self) -> bool:
        return self.verdict in ("regression", "failed")


class SettingChange(BaseModel):
    """A server setting of one target that differs between the two campaigns (None: at its default)."""

    target: str
    name: str
    a: str | None = None
    b: str | None = None


class Comparison(BaseModel):
    a: str
    b: str
    threshold: float
    changes: list[Change]
    settings: list[SettingChange] = Field(
        default_factory=list, description="non-default settings that differ, per target both campaigns ran"
    )

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.worse]
