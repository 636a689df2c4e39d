"""Pairwise comparisons: the evidence the verdict rests on. Pure.

For each pair of ranked targets (a ranked at or above b), each weighted metric and each workload
point the ranking compares: the ratio of a's mean to b's over their repetitions, with Welch's
p-value and an interval on the log scale (pgarena.analysis.significance). The family is the pair
(every weighted metric at every compared point, m comparisons): each interval is taken at the
level alpha / m (Bonferroni's simultaneous intervals), alpha the look's level of the sequential
design (pgarena.analysis.spending; 5% with a fixed number of repetitions), so the decision and the
interval printed beside it are the same thing. Each comparison is different (the interval excludes
1), equivalent (it lies within the equivalence margin of 1) or inconclusive.
What each metric compares, run by run: tps (throughput); p95 latency where every ranked target has
it at the point, else the average, and nothing where a run missed its --rate (latency); 1 - the
run's per-interval tps CV, 0 when it collapsed (stability); tps per dollar-hour (cost); sustainable
tps; tps at the SLO.

The pair is different when its significant comparisons all favour a, or point both ways and the
95% interval of the difference between their pairwise composites (each metric scored against the
better of the two at each point, weighted as the ranking weighs it), bootstrapped over the
repetitions with a fixed seed, excludes 0; equivalent when every comparison is equivalent;
inconclusive otherwise, with the runs per point that would decide it at the noise observed. With
fewer than MIN_RUNS runs per point there is no interval: the pair is inconclusive, ordered by the
means (provisional).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev

from pgarena.analysis.effects import effect, effects, where
from pgarena.analysis.metrics import run_stability
from pgarena.analysis.significance import ALPHA, MIN_RUNS, decide, log_ratio_test, ratio_test
from pgarena.model.matrix import RankingMetric
from pgarena.model.metrics import PointMetrics
from pgarena.model.pairwise import MetricComparison, Outcome, PairComparison
from pgarena.model.results import WorkloadResult

Key = tuple[str, int | None]

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 23  # fixed: the same results.json always gives the same verdict
# A tie's explanation lists at most this many comparisons.
LISTED = 6

_FIGURES: dict[RankingMetric, str] = {
    "throughput": "tps",
    "stability": "steadiness (1 - within-run CV)",
    "cost": "tps per $/h",
    "sustainable": "sustainable tps",
    "slo_tps": "tps at SLO",
    "nopm": "NOPM",
}


@dataclass(frozen=True)
class Sample:
    """One metric at one point: every ranked target's per-run figures."""

    metric: RankingMetric
    figure: str
    higher_is_better: bool
    key: Key
    values: dict[str, list[float]]


def latency_field(points: Sequence[PointMetrics]) -> str | None:
    """p95 where every target has it at the point, else avg; None where latency cannot be compared."""
    if any(p.rate_not_sustained for p in points):
        return None  # one target's latency includes its queue behind the schedule
    for field in ("p95", "avg"):
        if all((v := getattr(p.latency_ms, field)) is not None and v > 0 for p in points):
            return field
    return None


def _steadiness(run: WorkloadResult) -> float | None:
    s = run_stability(run)
    if s.cv is None:
        return None
    return 0.0 if s.collapsed else max(0.0, 1.0 - s.cv)


def _per_run(metric: RankingMetric, run: WorkloadResult, latency: str | None, hourly_cost: float | None) -> float | None:
    match metric:
        case "throughput":
            return run.tps
        case "latency":
            return getattr(run.latency_ms, latency) if latency else None
        case "stability":
            return _steadiness(run)
        case "cost":
            return run.tps / hourly_cost if run.tps is not None and hourly_cost else None
        case "sustainable":
            return run.replication.sustainable_tps if run.replication else None
        case "slo_tps":
            return run.slo.slo_tps if run.slo else None
        case "nopm":
            return run.tool_figures.new_orders_per_minute


def samples(
    runs: dict[str, dict[Key, list[WorkloadResult]]],
    points: dict[str, dict[Key, PointMetrics]],
    costs: dict[str, float | None],
    keys: list[Key],
    metrics: list[RankingMetric],
) -> list[Sample]:
    """Per compared point and weighted metric, each target's per-run figures, where every target has them."""
    out = []
    for key in keys:
        latency = latency_field([p[key] for p in points.values()])
        for metric in metrics:
            values: dict[str, list[float]] = {}
            for name, by_key in runs.items():
                ok = [w for w in by_key[key] if w.status == "succeeded" and w.tps is not None]
                figures = [_per_run(metric, w, latency, costs[name]) for w in ok]
                if not ok or any(f is None for f in figures):
                    break
                values[name] = [f for f in figures if f is not None]
            else:
                figure = f"{latency} latency" if metric == "latency" else _FIGURES[metric]
                out.append(Sample(metric, figure, metric != "latency", key, values))
    return out


def _cv(values: list[float]) -> float | None:
    mean = fmean(values)
    return stdev(values) / mean if len(values) > 1 and mean > 0 else None


def _comparison(sample: Sample, a: str, b: str, levels: Levels) -> MetricComparison | None:
    test = ratio_test(sample.values[a], sample.values[b], levels.alpha)
    if test is None:
        return None
    decision = decide(test, levels.alpha, levels.equivalence_alpha, levels.margin)
    return MetricComparison(
        metric=sample.metric,
        figure=sample.figure,
        higher_is_better=sample.higher_is_better,
        workload=sample.key[0],
        clients=sample.key[1],
        n_a=len(sample.values[a]),
        n_b=len(sample.values[b]),
        mean_a=fmean(sample.values[a]),
        mean_b=fmean(sample.values[b]),
        ratio=test.ratio,
        cv_a=_cv(sample.values[a]),
        cv_b=_cv(sample.values[b]),
        confidence=decision.confidence,
        ci_low=decision.low,
        ci_high=decision.high,
        p_value=test.p,
        outcome=decision.outcome,
        margin=levels.margin,
    )


@dataclass(frozen=True)
class Levels:
    """One comparison's levels: two-sided alpha for a difference (the look's, shared over the pair's
    comparisons), the TOST's for equivalence (the look's at twice ALPHA: each one-sided test at its half),
    and the equivalence margin (relative)."""

    alpha: float = ALPHA
    equivalence_alpha: float = 2 * ALPHA
    margin: float = 0.05


def redecided(c: MetricComparison, levels: Levels) -> MetricComparison:
    """The stored comparison decided again at other levels (another look) from its stored figures."""
    if c.cv_a is None or c.cv_b is None or min(c.n_a, c.n_b) < MIN_RUNS:
        return c
    test = log_ratio_test(c.ratio, c.cv_a, c.n_a, c.cv_b, c.n_b, levels.alpha)
    decision = decide(test, levels.alpha, levels.equivalence_alpha, levels.margin)
    return c.model_copy(
        update={
            "confidence": decision.confidence,
            "ci_low": decision.low,
            "ci_high": decision.high,
            "outcome": decision.outcome,
            "margin": levels.margin,
        }
    )


# Beyond this many runs per point an estimate says "more than": the noise, not the runs, is the problem.
MOST_RUNS_NEEDED = 1000


def _runs_to(c: MetricComparison, alpha: float, distance: float) -> float:
    """Runs per side for the interval's half-width (normal approximation) to come under `distance` on the log
    scale, at the comparison's observed noise; infinite when it never can."""
    if c.cv_a is None or c.cv_b is None or distance <= 0:
        return math.inf
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return (z * math.sqrt(c.cv_a**2 + c.cv_b**2) / distance) ** 2


def runs_needed(comparisons: list[MetricComparison], alpha: float) -> int | None:
    """The runs per point that would decide the pair if the ratios and noise stay as observed: one comparison's
    interval clearing 1 at alpha / m (different), or every one's fitting within the margin at 2 alpha (the
    TOST: equivalent); None when no run count would (no noise measured, or beyond MOST_RUNS_NEEDED)."""
    if not comparisons:
        return None
    level = alpha / len(comparisons)
    different = min(_runs_to(c, level, abs(math.log(c.ratio))) for c in comparisons)
    equivalent = max(_runs_to(c, 2 * alpha, math.log1p(c.margin) - abs(math.log(c.ratio))) for c in comparisons)
    needed = min(different, equivalent)
    return max(MIN_RUNS, math.ceil(needed)) if needed <= MOST_RUNS_NEEDED else None


def _pair_composite_diff(
    found: list[Sample], a: str, b: str, weights: dict[RankingMetric, float], mean: Callable[[list[float]], float]
) -> float:
    """a's composite minus b's, each metric scored against the better of the two at each point."""
    diffs: dict[RankingMetric, list[float]] = {}
    for s in found:
        x, y = mean(s.values[a]), mean(s.values[b])
        if s.higher_is_better:
            best = max(x, y)
            score_a, score_b = (x / best, y / best) if best > 0 else (0.0, 0.0)
        else:
            best = min(x, y)
            score_a, score_b = (best / x if x > 0 else 1.0), (best / y if y > 0 else 1.0)
        diffs.setdefault(s.metric, []).append(score_a - score_b)
    total = sum(weights[m] for m in diffs)
    return sum(weights[m] * fmean(d) for m, d in diffs.items()) / total if total else 0.0


def composite_interval(
    found: list[Sample], a: str, b: str, weights: dict[RankingMetric, float]
) -> tuple[float, tuple[float, float]]:
    """The pairwise composite difference and its 95% percentile-bootstrap interval over the repetitions."""
    rng = random.Random(BOOTSTRAP_SEED)

    def resampled(values: list[float]) -> float:
        return fmean(rng.choices(values, k=len(values)))

    draws = sorted(_pair_composite_diff(found, a, b, weights, resampled) for _ in range(BOOTSTRAP_RESAMPLES))
    low, high = draws[int(0.025 * BOOTSTRAP_RESAMPLES)], draws[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]
    return _pair_composite_diff(found, a, b, weights, fmean), (low, high)


def _listed(comparisons: list[MetricComparison], single_workload: bool) -> str:
    said = [f"{effect(c)} {where((c.workload, c.clients), single_workload)}" for c in comparisons[:LISTED]]
    more = len(comparisons) - LISTED
    return ", ".join(said) + (f" and {more} more" if more > 0 else "")


def _against(comparisons: list[MetricComparison], single_workload: bool) -> str:
    """b's advantages, read from b's side."""
    return _listed([c.flipped() for c in comparisons], single_workload)


@dataclass(frozen=True)
class Rule:
    """How a pair is decided: the look's two-sided level for a difference (to share over the pair's
    comparisons) and for equivalence, the equivalence margin (relative) and where the look stands in the
    sequential design."""

    alpha: float = ALPHA
    equivalence_alpha: float = 2 * ALPHA
    margin: float = 0.05
    look: int = 1
    max_looks: int = 1

    def levels(self, comparisons: int) -> Levels:
        """Bonferroni over the pair's comparisons for a difference; none for equivalence (it needs them all)."""
        return Levels(self.alpha / max(1, comparisons), self.equivalence_alpha, self.margin)


def _noise(comparisons: list[MetricComparison]) -> str:
    """The between-run CV behind an undecided pair, on its first compared figure (tps where weighted)."""
    c = comparisons[0]
    if c.cv_a is None or c.cv_b is None:
        return ""
    return f"; between-run CV of the {c.figure} {c.cv_a:.0%} and {c.cv_b:.0%}"


def _needed(needed: int | None, runs: int) -> str:
    if needed is None:
        return f"; more than {MOST_RUNS_NEEDED} runs per point would be needed at this noise"
    return f"; about {needed} runs per point would decide it at this noise ({runs} ran)" if needed > runs else ""


def _undecided(a: str, b: str, comparisons: list[MetricComparison], rule: Rule, runs: int) -> PairComparison:
    single = len({c.workload for c in comparisons}) <= 1
    needed = runs_needed(comparisons, ALPHA)
    reason = (
        f"undecided: no weighted metric separates them and they are not shown equivalent within "
        f"{rule.margin:.0%} ({_listed(comparisons, single)}){_noise(comparisons)}"
        f"{_needed(needed, runs)}"
    )
    return PairComparison(
        a=a, b=b, basis="intervals", comparisons=comparisons, outcome="inconclusive", reason=reason, runs_needed=needed
    )


def compare_pair(  # noqa: PLR0913  # the pair, its evidence and the rule
    a: str,
    b: str,
    found: list[Sample],
    weights: dict[RankingMetric, float],
    runs: int,
    rule: Rule | None = None,
) -> PairComparison:
    """a ranked at or above b by the composite: their comparisons and the pair's outcome (module docstring)."""
    rule = rule or Rule()
    weighted = [s for s in found if weights.get(s.metric, 0) > 0]
    levels = rule.levels(len(weighted))
    comparisons = [c for s in weighted if (c := _comparison(s, a, b, levels)) is not None]
    looks = {"look": rule.look, "max_looks": rule.max_looks}
    single = len({c.workload for c in comparisons}) <= 1
    if runs < MIN_RUNS:
        note = f"{runs} run{'s' if runs != 1 else ''} per point: not enough runs to decide, ordered by the means"
        reason = f"{effects(comparisons, b, single)} ({note})" if comparisons else note
        pair = PairComparison(a=a, b=b, basis="means", comparisons=comparisons, outcome="inconclusive", reason=reason)
        return pair.model_copy(update=looks)
    pair = _decided(a, b, weighted, weights, comparisons, rule, runs)
    return pair.model_copy(update=looks)


def outcome_of(comparisons: list[MetricComparison], composite_ci95: tuple[float, float] | None) -> Outcome:
    """The pair's outcome from its decided comparisons (a ranked at or above b): different when the significant
    ones favour a alone, or point both ways and the composite interval excludes 0; equivalent when every one
    is; inconclusive otherwise."""
    sides = {c.favours for c in comparisons} - {None}
    if not sides:
        return "equivalent" if comparisons and all(c.outcome == "equivalent" for c in comparisons) else "inconclusive"
    if sides == {"a"}:
        return "different"
    if sides == {"b"} or composite_ci95 is None:
        return "inconclusive"
    low, high = composite_ci95
    return "inconclusive" if low <= 0 <= high else "different"


def _decided(  # noqa: PLR0913  # the pair, its evidence and the rule
    a: str,
    b: str,
    weighted: list[Sample],
    weights: dict[RankingMetric, float],
    comparisons: list[MetricComparison],
    rule: Rule,
    runs: int,
) -> PairComparison:
    single = len({c.workload for c in comparisons}) <= 1
    for_a = [c for c in comparisons if c.favours == "a"]
    for_b = [c for c in comparisons if c.favours == "b"]
    if not for_a and not for_b:
        if comparisons and all(c.outcome == "equivalent" for c in comparisons):
            reason = f"equivalent within {rule.margin:.0%} on every weighted metric ({_listed(comparisons, single)})"
            return PairComparison(a=a, b=b, basis="intervals", comparisons=comparisons, outcome="equivalent", reason=reason)
        return _undecided(a, b, comparisons, rule, runs)
    if not for_b:
        return PairComparison(
            a=a, b=b, basis="intervals", comparisons=comparisons, outcome="different", reason=effects(for_a, b, single)
        )
    if not for_a:  # the composite orders them against the only significant evidence: neither is shown better
        reason = f"undecided: the composite ranks {a} above {b}, but the only significant differences favour {b} ({_against(for_b, single)})"
        return PairComparison(a=a, b=b, basis="intervals", comparisons=comparisons, outcome="inconclusive", reason=reason)
    diff, (low, high) = composite_interval(weighted, a, b, weights)
    cancel = low <= 0 <= high
    reason = (
        f"{'undecided: ' if cancel else ''}{a} has {effects(for_a, b, single)}, but {b} has {_against(for_b, single)}; "
        f"weighted, the composite difference {diff:+.3f} [{low:+.3f}, {high:+.3f}] "
        f"{'includes 0: they cancel' if cancel else f'favours {a}'}"
    )
    return PairComparison(
        a=a,
        b=b,
        basis="intervals",
        comparisons=comparisons,
        outcome="inconclusive" if cancel else "different",
        reason=reason,
        composite_diff=diff,
        composite_ci95=(low, high),
    )


def metric_tied(pair: PairComparison, metric: RankingMetric) -> bool:
    """On one metric alone: nothing significant separates them, or its significant differences point both ways."""
    sides = {c.favours for c in pair.comparisons if c.metric == metric and c.favours is not None}
    return len(sides) != 1
