"""The verdict's evidence in results.json: each pair of ranked targets compared metric by metric, and
the points too noisy for small differences to be told apart (pgarena.analysis.comparisons)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pgarena.model.matrix import RankingMetric


class MetricComparison(BaseModel):
    """One weighted metric at one workload point: target a's mean over target b's."""

    metric: RankingMetric
    figure: str = Field(description="what was compared, e.g. 'tps', 'p95 latency'")
    higher_is_better: bool
    workload: str
    clients: int | None
    n_a: int = Field(description="a's repetitions")
    n_b: int
    mean_a: float
    mean_b: float
    ratio: float = Field(description="mean_a / mean_b")
    ci95_low: float | None = Field(None, description="95% interval of the ratio; None with fewer than 3 runs a side")
    ci95_high: float | None = None
    p_value: float | None = Field(None, description="Welch's two-sided p-value on the log of the ratio")
    p_holm: float | None = Field(None, description="p after Holm's correction over the pair's comparisons")
    significant: bool = Field(False, description="p_holm <= 0.05")

    @property
    def favours(self) -> Literal["a", "b"] | None:
        """The target a significant difference favours; None when not significant."""
        if not self.significant or self.ratio == 1:
            return None
        return "a" if (self.ratio > 1) == self.higher_is_better else "b"

    def flipped(self) -> MetricComparison:
        """The same comparison read from b's side (b over a)."""
        return self.model_copy(
            update={
                "n_a": self.n_b,
                "n_b": self.n_a,
                "mean_a": self.mean_b,
                "mean_b": self.mean_a,
                "ratio": 1 / self.ratio,
                "ci95_low": 1 / self.ci95_high if self.ci95_high else None,
                "ci95_high": 1 / self.ci95_low if self.ci95_low else None,
            }
        )


class PairComparison(BaseModel):
    """Two ranked targets, a ranked at or above b, and whether anything separates them."""

    a: str
    b: str
    basis: Literal["intervals", "means"] = Field(
        description="intervals: 3+ runs per point, Welch with Holm's correction; means: fewer, no interval, ranked by means"
    )
    comparisons: list[MetricComparison] = Field(default_factory=list)
    tied: bool
    reason: str = Field(description="why they tie or why a ranks above b, in words")
    composite_diff: float | None = Field(
        None, description="a's pairwise composite minus b's, when significant differences point both ways"
    )
    composite_ci95: tuple[float, float] | None = Field(None, description="its 95% bootstrap interval (fixed seed)")
    unequal_footing: str | None = Field(
        None, description="ranked together although not on equal footing (ranking.allow_unequal_footing): why"
    )


class FootingProblem(BaseModel):
    """Two measured targets whose load generators did not stand alike (pgarena.analysis.footing)."""

    a: str
    b: str
    reasons: list[str] = Field(description="what differs: the median round trips, the workers' sizes")
    fix: str = Field(description="what to change so that they can be ranked together")
    ranked_anyway: bool = Field(False, description="ranking.allow_unequal_footing was set: ranked together, with the caveat")

    @property
    def message(self) -> str:
        return f"{self.a} and {self.b} are not on equal footing: {'; '.join(self.reasons)}"


class NoiseWarning(BaseModel):
    """A point whose runs were noisy: within a run (per-interval tps), between runs, or both."""

    target: str
    workload: str
    clients: int | None
    within_run_cv: float | None = Field(None, description="the worst run's per-interval tps CV, when over the threshold")
    between_runs_cv: float | None = Field(None, description="stddev / mean of tps over the repetitions, when over the threshold")
    runs: int
    message: str
