"""Pairwise comparisons: the evidence the verdict rests on. Pure.

For each pair of ranked targets (a ranked at or above b), each weighted metric and each workload
point the ranking compares: the ratio of a's mean to b's over their repetitions, its 95% interval
and Welch's p-value on the log scale (pgarena.analysis.significance), then Holm's correction over
the pair's comparisons (the family is the pair: every weighted metric at every compared point).
What each metric compares, run by run: tps (throughput); p95 latency where every ranked target has
it at the point, else the average, and nothing where a run missed its --rate (latency); 1 - the
run's per-interval tps CV, 0 when it collapsed (stability); tps per dollar-hour (cost); sustainable
tps; tps at the SLO.

Two targets tie when no comparison separates them, or when their significant differences point
both ways and cancel: the 95% interval of the difference between their pairwise composites (each
metric scored against the better of the two at each point, weighted as the ranking weighs it),
bootstrapped over the repetitions with a fixed seed, includes 0. With fewer than MIN_RUNS runs per
point there is no interval: the pair is ordered by the means and ties within the tie tolerance.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import fmean

from pgarena.analysis.effects import effect, effects, where
from pgarena.analysis.metrics import run_stability
from pgarena.analysis.significance import ALPHA, MIN_RUNS, holm, ratio_test
from pgarena.model.matrix import RankingMetric
from pgarena.model.metrics import PointMetrics
from pgarena.model.pairwise import MetricComparison, PairComparison
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


def _comparison(sample: Sample, a: str, b: str) -> MetricComparison | None:
    test = ratio_test(sample.values[a], sample.values[b])
    if test is None:
        return None
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
        ci95_low=test.low,
        ci95_high=test.high,
        p_value=test.p,
    )


def _corrected(comparisons: list[MetricComparison]) -> list[MetricComparison]:
    tested = [c for c in comparisons if c.p_value is not None]
    adjusted = dict(zip(map(id, tested), holm([c.p_value for c in tested if c.p_value is not None]), strict=True))
    return [
        c.model_copy(update={"p_holm": adjusted[id(c)], "significant": adjusted[id(c)] <= ALPHA}) if id(c) in adjusted else c
        for c in comparisons
    ]


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


def compare_pair(  # noqa: PLR0913  # the pair, its evidence and the rule's two inputs
    a: str,
    b: str,
    found: list[Sample],
    weights: dict[RankingMetric, float],
    runs: int,
    means_tied: bool,
) -> PairComparison:
    """a ranked at or above b by the composite: their comparisons and whether they tie (module docstring)."""
    weighted = [s for s in found if weights.get(s.metric, 0) > 0]
    comparisons = _corrected([c for s in weighted if (c := _comparison(s, a, b)) is not None])
    single = len({c.workload for c in comparisons}) <= 1
    if runs < MIN_RUNS:
        note = f"{runs} run{'s' if runs != 1 else ''} per point: no confidence interval, ranked by the means"
        reason = f"{effects(comparisons, b, single)} ({note})" if comparisons else note
        return PairComparison(a=a, b=b, basis="means", comparisons=comparisons, tied=means_tied, reason=reason)
    for_a = [c for c in comparisons if c.favours == "a"]
    for_b = [c for c in comparisons if c.favours == "b"]
    if not for_a and not for_b:
        reason = f"no weighted metric separates them at 95% after Holm's correction ({_listed(comparisons, single)})"
        return PairComparison(a=a, b=b, basis="intervals", comparisons=comparisons, tied=True, reason=reason)
    if not for_b:
        return PairComparison(a=a, b=b, basis="intervals", comparisons=comparisons, tied=False, reason=effects(for_a, b, single))
    if not for_a:  # the composite orders them against the only significant evidence: neither is shown better
        reason = f"the composite ranks {a} above {b}, but the only significant differences favour {b} ({_against(for_b, single)})"
        return PairComparison(a=a, b=b, basis="intervals", comparisons=comparisons, tied=True, reason=reason)
    diff, (low, high) = composite_interval(weighted, a, b, weights)
    cancel = low <= 0 <= high
    reason = (
        f"{a} has {effects(for_a, b, single)}, but {b} has {_against(for_b, single)}; weighted, the composite difference "
        f"{diff:+.3f} [{low:+.3f}, {high:+.3f}] {'includes 0: they cancel' if cancel else f'favours {a}'}"
    )
    return PairComparison(
        a=a,
        b=b,
        basis="intervals",
        comparisons=comparisons,
        tied=cancel,
        reason=reason,
        composite_diff=diff,
        composite_ci95=(low, high),
    )


def metric_tied(pair: PairComparison, metric: RankingMetric) -> bool:
    """On one metric alone: nothing significant separates them, or its significant differences point both ways."""
    sides = {c.favours for c in pair.comparisons if c.metric == metric and c.favours is not None}
    return len(sides) != 1
