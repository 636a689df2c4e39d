"""The verdict's evidence in results.json: each pair of ranked targets compared metric by metric, and
the points too noisy for small differences to be told apart (pgarena.analysis.comparisons)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from pgarena.model.matrix import RankingMetric

Outcome = Literal["different", "equivalent", "inconclusive"]


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
    cv_a: float | None = Field(None, description="a's between-run coefficient of variation (sample stddev / mean)")
    cv_b: float | None = None
    confidence: float = Field(
        0.95,
        description="the level of the interval below: the decision's, shared over the pair's comparisons and the "
        "look's alpha spending (simultaneous, Bonferroni), so the interval printed beside a decision is the one it used",
    )
    ci_low: float | None = Field(None, description="the ratio's interval at `confidence`; None with fewer than 3 runs a side")
    ci_high: float | None = None
    p_value: float | None = Field(None, description="Welch's two-sided p-value on the log of the ratio (unadjusted)")
    outcome: Outcome = Field(
        "inconclusive",
        description="different: the interval excludes 1; equivalent: it lies within the equivalence margin of 1 "
        "(ranking.equivalence_margin_pct); inconclusive: neither",
    )
    margin: float = Field(0.05, description="the equivalence margin, relative")

    @model_validator(mode="before")
    @classmethod
    def _written_before_outcomes(cls, data: Any) -> Any:
        """A results.json written before the three outcomes: its 95% interval and Holm's decision, read as such."""
        if isinstance(data, dict) and "ci95_low" in data and "outcome" not in data:
            data = {**data, "ci_low": data.get("ci95_low"), "ci_high": data.get("ci95_high")}
            data["outcome"] = "different" if data.get("significant") else "inconclusive"
        return data

    @property
    def significant(self) -> bool:
        return self.outcome == "different"

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
                "cv_a": self.cv_b,
                "cv_b": self.cv_a,
                "ci_low": 1 / self.ci_high if self.ci_high else None,
                "ci_high": 1 / self.ci_low if self.ci_low else None,
            }
        )


class PairComparison(BaseModel):
    """Two ranked targets, a ranked at or above b, and whether anything separates them."""

    a: str
    b: str
    basis: Literal["intervals", "means"] = Field(
        description="intervals: 3+ runs per point, Welch's test with simultaneous intervals; means: fewer, no interval, "
        "ordered by the means (provisional)"
    )
    comparisons: list[MetricComparison] = Field(default_factory=list)
    outcome: Outcome = Field(
        description="different: a weighted metric separates them (a above b); equivalent: every weighted comparison "
        "is within the margin; inconclusive: neither (too few runs, too much noise, or differences both ways that cancel)"
    )
    reason: str = Field(description="why they are different, equivalent or undecided, in words")
    runs_needed: int | None = Field(
        None, description="inconclusive: the runs per point that would decide the pair at the noise observed (estimate)"
    )
    composite_diff: float | None = Field(
        None, description="a's pairwise composite minus b's, when significant differences point both ways"
    )
    composite_ci95: tuple[float, float] | None = Field(None, description="its 95% bootstrap interval (fixed seed)")
    unequal_footing: str | None = Field(
        None, description="ranked together although not on equal footing (ranking.allow_unequal_footing): why"
    )
    look: int = Field(1, description="the look of the group-sequential design this decision was made at")

    @model_validator(mode="before")
    @classmethod
    def _written_before_outcomes(cls, data: Any) -> Any:
        """A results.json written before the three outcomes: its old tie was no equivalence, only not separated."""
        if isinstance(data, dict) and "tied" in data and "outcome" not in data:
            data = {**data, "outcome": "inconclusive" if data["tied"] else "different"}
        return data

    max_looks: int = Field(1, description="the most looks the design allows (1: a fixed number of repetitions)")

    @property
    def tied(self) -> bool:
        """Not separated: equivalent or undecided; they share a rank."""
        return self.outcome != "different"


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
