"""Ranking: which target did best, on each metric and overall, with ties where the data cannot tell. Pure.

Only complete measurements are compared: a target that failed is never ranked, and a workload
point where a target's run was clamped (fewer clients than the matrix asked for) or failed is left
out of the comparison for every target. The points compared are those every ranked target
measured completely.

Per metric, each target gets a score relative to the best ranked target (1.0 = best):

- throughput: mean over the compared points of tps / best tps at that point;
- latency: mean of best latency / latency, using p95 where every target has it at that point,
  else the average;
- stability: mean of (1 - coefficient of variation of the per-interval tps), 0 for a run whose
  tps collapsed, relative to the steadiest target;
- cost: mean of (tps per dollar-hour) / best, only when every target has an hourly cost;
- sustainable: mean of sustainable tps (transactions / (run + replicas' catch-up)) / best, only when
  every target has replicas that caught up; weighted only when the matrix asks (weight 0 by default);
- slo_tps: mean of tps at the workload's latency SLO (pgarena.analysis.slo) / best, only when every
  target's search finished at that point (0 for a target at which the SLO held at no probed rate);
- nopm: mean of new orders per minute (a TPROC-C workload's) / best, at the points where every target
  has it; weighted only when the matrix asks (weight 0 by default).

The composite score is the weighted mean of the metric scores, over the metrics every target has
(a metric nobody can be scored on gives its weight up). Targets are ordered by it; each pair is
then different, equivalent or inconclusive (pgarena.analysis.comparisons, at the look's level of the
sequential design, pgarena.analysis.spending). Targets are ranked apart only where every target
above is different from (better than) every target below: the others share a rank, each marking
the ones it is equivalent to (`tied_with`) and the ones nothing decided (`undecided_with`). With
fewer than 3 runs per point there is no interval and nothing is decided: the targets are ordered
by the means, sharing a rank within the tie tolerance, every rank provisional.

Targets are ranked together only on equal footing (pgarena.analysis.footing: round trips within 1 ms
or 2x, workers of one size): otherwise the largest group on equal footing is ranked and the others are
left out, each told why and what to change, unless the matrix sets ranking.allow_unequal_footing, which
ranks them all and marks each pair not on equal footing in its comparison (and so in the verdict).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from pgarena.analysis.comparisons import Rule, compare_pair, latency_field, metric_tied, samples
from pgarena.analysis.footing import comparable_group, footing_problems
from pgarena.analysis.intervals import SINGLE_RUN_NOTE
from pgarena.analysis.metrics import point_runs, target_metrics
from pgarena.analysis.noise import noise_warnings
from pgarena.analysis.significance import ALPHA, MIN_RUNS
from pgarena.analysis.spending import look_alpha, looks_of
from pgarena.model.matrix import RankingConfig, RankingMetric
from pgarena.model.metrics import PointMetrics, TargetMetrics
from pgarena.model.pairwise import FootingProblem, NoiseWarning, PairComparison
from pgarena.model.results import RankEntry, TargetResult

METRICS: tuple[RankingMetric, ...] = ("throughput", "latency", "stability", "cost", "sustainable", "slo_tps", "nopm")

Key = tuple[str, int | None]


def _common_points(candidates: dict[str, dict[Key, PointMetrics]]) -> list[Key]:
    if not candidates:
        return []
    keys = set.intersection(*(set(points) for points in candidates.values()))
    first = next(iter(candidates.values()))
    return [key for key in first if key in keys]  # the matrix's order


def _relative_to_best(values: dict[str, float], higher_is_better: bool) -> dict[str, float]:
    if higher_is_better:
        best = max(values.values())
        return {n: (v / best if best > 0 else 0.0) for n, v in values.items()}
    best = min(values.values())
    return {n: (best / v if v > 0 else 1.0) for n, v in values.items()}


def _figures(
    candidates: dict[str, dict[Key, PointMetrics]],
    keys: list[Key],
    figure: Callable[[list[PointMetrics]], list[float] | None],
    relative: bool,
    higher_is_better: bool = True,
) -> dict[str, list[float]] | None:
    """Each target's figure per point (relative to the best target at that point when asked), over
    the points where every target has one; None when there is no such point."""
    names = list(candidates)
    out: dict[str, list[float]] = {n: [] for n in names}
    for key in keys:
        values = figure([candidates[n][key] for n in names])
        if values is None:
            continue
        by_name = dict(zip(names, values))
        if relative:
            by_name = _relative_to_best(by_name, higher_is_better)
        for name, value in by_name.items():
            out[name].append(value)
    return out if out[names[0]] else None


def _mean_relative(
    candidates: dict[str, dict[Key, PointMetrics]],
    keys: list[Key],
    figure: Callable[[list[PointMetrics]], list[float] | None],
    higher_is_better: bool,
) -> dict[str, float] | None:
    figures = _figures(candidates, keys, figure, relative=True, higher_is_better=higher_is_better)
    return {n: fmean(v) for n, v in figures.items()} if figures else None


def _throughput(points: list[PointMetrics]) -> list[float] | None:
    return [p.tps for p in points]  # type: ignore[misc]  # complete points always have tps


def _latency(points: list[PointMetrics]) -> list[float] | None:
    field = latency_field(points)
    return [getattr(p.latency_ms, field) for p in points] if field else None


def _all_known(values: Sequence[float | None]) -> list[float] | None:
    """The values when every one is known; None when any is missing."""
    known = [v for v in values if v is not None]
    return known if len(known) == len(values) else None


def _steadiness(points: list[PointMetrics]) -> list[float] | None:
    cvs = _all_known([p.stability.cv for p in points])
    if cvs is None:
        return None
    return [0.0 if p.stability.collapsed else max(0.0, 1.0 - cv) for p, cv in zip(points, cvs, strict=True)]


def _cost(points: list[PointMetrics]) -> list[float] | None:
    return _all_known([p.tps_per_usd_hour for p in points])


def _sustainable(points: list[PointMetrics]) -> list[float] | None:
    return _all_known([p.sustainable_tps for p in points])


def _slo_tps(points: list[PointMetrics]) -> list[float] | None:
    values = _all_known([p.slo_tps for p in points])
    return values if values and max(values) > 0 else None  # held by no target at this point: it tells them nowhere apart


def _nopm(points: list[PointMetrics]) -> list[float] | None:
    return _all_known([p.nopm for p in points])


def metric_scores(candidates: dict[str, dict[Key, PointMetrics]], keys: list[Key]) -> dict[str, dict[str, float]]:
    """metric -> target -> score (1.0 = best), for the metrics every target can be scored on."""
    scores = {
        "throughput": _mean_relative(candidates, keys, _throughput, higher_is_better=True),
        "latency": _mean_relative(candidates, keys, _latency, higher_is_better=False),
        "cost": _mean_relative(candidates, keys, _cost, higher_is_better=True),
        "sustainable": _mean_relative(candidates, keys, _sustainable, higher_is_better=True),
        "slo_tps": _mean_relative(candidates, keys, _slo_tps, higher_is_better=True),
        "nopm": _mean_relative(candidates, keys, _nopm, higher_is_better=True),
    }
    # Steadiness (1 - cv) is absolute: averaged first, then relative to the steadiest target.
    steadiness = _figures(candidates, keys, _steadiness, relative=False)
    if steadiness is not None:
        mean = {n: fmean(v) for n, v in steadiness.items()}
        scores["stability"] = _relative_to_best(mean, higher_is_better=True) if max(mean.values()) > 0 else mean
    return {metric: values for metric, values in scores.items() if values is not None}


def competition_ranks(scores: dict[str, float], tied: Callable[[str, str], bool]) -> dict[str, tuple[int, list[str]]]:
    """Rank (1, 1, 3 style) and tied targets, ordered by score. A group of ties is the targets tied with its
    leader, so a chain of small differences never makes the first and the last equal."""
    ordered = sorted(scores, key=lambda n: (-scores[n], n))
    groups: list[list[str]] = []
    for name in ordered:
        if groups and tied(groups[-1][0], name):
            groups[-1].append(name)
        else:
            groups.append([name])
    ranks: dict[str, tuple[int, list[str]]] = {}
    position = 1
    for group in groups:
        for name in group:
            ranks[name] = (position, [other for other in group if other != name])
        position += len(group)
    return ranks


def within_tolerance(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


def _describe(  # noqa: PLR0913  # each figure the description prints
    weights: dict[RankingMetric, float],
    used: list[RankingMetric],
    points: int,
    tolerance: float,
    runs: int,
    searched: bool = False,
    margin: float = 0.05,
) -> str:
    """`searched`: some target has tps at an SLO; without, slo_tps is no metric the campaign asked for."""
    parts = ", ".join(f"{m} {weights[m]:g}" for m in used)
    left_out = [m for m in METRICS if weights.get(m, 0) > 0 and m not in used and (m != "slo_tps" or searched)]
    unused = f" ({', '.join(left_out)} not scored: not measured for every target)" if left_out else ""
    ties = (
        f"targets are ranked apart only where a weighted metric separates them (Welch's test on the ratio of means "
        f"over {runs}+ runs per point, simultaneous intervals per pair); they tie when every weighted metric is "
        f"equivalent within {margin:.0%}, else share a rank undecided"
        if runs >= MIN_RUNS
        else f"not enough runs to decide: provisional order by the means ({_runs_note(runs)}); within {tolerance:.0%} "
        "share a rank"
    )
    return (
        f"composite = weighted mean of per-metric scores (1.0 = best target), weights {parts}{unused}, "
        f"over {points} workload point(s) every ranked target measured completely; {ties}; "
        "failed and clamped runs are not ranked"
    )


def _runs_note(runs: int) -> str:
    return SINGLE_RUN_NOTE if runs == 1 else f"{runs} runs per point: no confidence interval"


def _flags(points: list[PointMetrics]) -> list[str]:
    flags = []
    for p in points:
        if p.clamped:
            ran = ", ".join(str(c) for c in p.ran_clients if c != p.clients)
            flags.append(f"{p.workload} at {p.clients} clients ran with {ran} (clamped): not compared")
        elif p.failed_runs:
            flags.append(f"{p.workload} at {p.clients} clients: {p.failed_runs} failed run(s): not compared")
        elif p.client_saturated:
            flags.append(
                f"{p.workload} at {p.clients} clients: the load generator ran out of CPU (client_saturated): not compared"
            )
        elif p.stalled:
            flags.append(
                f"{p.workload} at {p.clients} clients: stalled (no transactions, or under 10% of its median): not compared"
            )
    return flags


def _rate_flags(points: list[PointMetrics]) -> list[str]:
    return [
        f"{p.workload} at {p.clients} clients: rate not sustained: latency not ranked at this point"
        for p in points
        if p.rate_not_sustained
    ]


@dataclass(frozen=True)
class Ranked:
    """The ranking, the pairwise comparisons it rests on, and the points too noisy to tell small differences."""

    entries: list[RankEntry] = field(default_factory=list)
    comparisons: list[PairComparison] = field(default_factory=list)
    noise: list[NoiseWarning] = field(default_factory=list)
    footing: list[FootingProblem] = field(default_factory=list)


def _pairs(  # noqa: PLR0913  # the ranking's pieces the comparisons need
    targets: dict[str, TargetResult],
    candidates: dict[str, dict[Key, PointMetrics]],
    keys: list[Key],
    used: list[RankingMetric],
    weights: dict[RankingMetric, float],
    composite: dict[str, float],
    runs: int,
    rule: Rule,
) -> dict[tuple[str, str], PairComparison]:
    """Every pair of ranked targets, the higher composite first."""
    found = samples(
        {n: point_runs(targets[n]) for n in candidates},
        candidates,
        {n: targets[n].hourly_cost_usd for n in candidates},
        keys,
        used,
    )
    ordered = sorted(composite, key=lambda n: (-composite[n], n))
    return {(a, b): compare_pair(a, b, found, weights, runs, rule) for i, a in enumerate(ordered) for b in ordered[i + 1 :]}


def _on_equal_footing(
    candidates: dict[str, dict[Key, PointMetrics]], by_name: dict[str, TargetResult], allowed: bool
) -> tuple[dict[str, dict[Key, PointMetrics]], list[FootingProblem]]:
    """The candidates to rank (the largest group on equal footing, unless unequal footing is allowed) and every
    pair of candidates not on equal footing."""
    footing = [p.model_copy(update={"ranked_anyway": allowed}) for p in footing_problems([by_name[n] for n in candidates])]
    if footing and not allowed:
        group = set(comparable_group([by_name[name] for name in candidates]))
        candidates = {name: points for name, points in candidates.items() if name in group}
    return candidates, footing


def _points_of(targets: list[TargetResult], metrics: list[TargetMetrics] | None) -> dict[str, list[PointMetrics]]:
    """Each target's points: from the metrics aggregation computed, else computed here (a ranking on its own)."""
    if metrics is None:
        metrics = [target_metrics(t) for t in targets]
    return {m.target: m.points for m in metrics}


def decided_groups(ordered: list[str], different: Callable[[str, str], bool]) -> list[list[str]]:
    """The ordered targets cut into groups only where every target above is different from every one below:
    targets not separated are never ranked apart."""
    groups: list[list[str]] = []
    start = 0
    for cut in range(1, len(ordered) + 1):
        if cut == len(ordered) or all(different(x, y) for x in ordered[:cut] for y in ordered[cut:]):
            groups.append(ordered[start:cut])
            start = cut
    return groups


def _decided_ranks(
    composite: dict[str, float], pair: Callable[[str, str], PairComparison]
) -> dict[str, tuple[int, list[str], list[str]]]:
    """Rank, the targets equivalent to it and the ones undecided, all sharing its rank."""
    ordered = sorted(composite, key=lambda n: (-composite[n], n))
    ranks: dict[str, tuple[int, list[str], list[str]]] = {}
    position = 1
    for group in decided_groups(ordered, lambda x, y: pair(x, y).outcome == "different"):
        for name in group:
            others = [o for o in group if o != name]
            equivalent = [o for o in others if pair(name, o).outcome == "equivalent"]
            ranks[name] = (position, equivalent, [o for o in others if o not in equivalent])
        position += len(group)
    return ranks


def _provisional_ranks(composite: dict[str, float], tolerance: float) -> dict[str, tuple[int, list[str], list[str]]]:
    """Fewer than MIN_RUNS runs: ordered by the means, within the tolerance sharing a rank, nothing decided."""
    found = competition_ranks(composite, lambda x, y: within_tolerance(composite[x], composite[y], tolerance))
    return {name: (position, [], others) for name, (position, others) in found.items()}


def rank(
    targets: list[TargetResult],
    config: RankingConfig | None = None,
    metrics: list[TargetMetrics] | None = None,
    looks: tuple[int, int] | None = None,
    design: tuple[int, int] | None = None,
) -> Ranked:
    """Rank succeeded targets by a weighted composite of per-metric scores, ranked apart only where their pairwise
    comparisons decide. `metrics`: the targets' metrics when already computed (aggregation computes them once);
    `looks`: (this look, the most looks) of a sequential design (adaptive repetitions), None for a fixed one;
    or `design`: its (min, max) runs per point, the look then counted from the runs measured."""
    config = config or RankingConfig()
    by_target = _points_of(targets, metrics)
    candidates: dict[str, dict[Key, PointMetrics]] = {}
    flags: dict[str, list[str]] = {}
    rate_notes: dict[str, list[str]] = {}
    for target in targets:
        if target.status != "succeeded":
            continue
        points = by_target[target.name]
        flags[target.name] = _flags(points)
        rate_notes[target.name] = _rate_flags(points)
        complete = {p.key: p for p in points if p.complete}
        if complete:
            candidates[target.name] = complete
    by_name = {t.name: t for t in targets}
    candidates, footing = _on_equal_footing(candidates, by_name, config.allow_unequal_footing)
    keys = _common_points(candidates)
    if not keys and len(candidates) > 1:
        # Clamps on different points left nothing in common: rank the targets that ran in full.
        candidates = {name: points for name, points in candidates.items() if not flags[name]}
        keys = _common_points(candidates)
    if not keys:
        return Ranked(footing=footing)
    candidates = {name: {k: points[k] for k in keys} for name, points in candidates.items()}

    scores = metric_scores(candidates, keys)
    used = [m for m in METRICS if m in scores and config.weights.get(m, 0) > 0]
    weights = {m: config.weights.get(m, 0.0) for m in METRICS}
    if not used:
        used, weights = ["throughput"], {**weights, "throughput": 1.0}
    total = sum(weights[m] for m in used)
    composite = {n: sum(weights[m] * scores[m][n] for m in used) / total for n in candidates}
    runs = min(p.runs for points in candidates.values() for p in points.values())
    look, max_looks = looks or (looks_of(runs, *design) if design else (1, 1))
    margin = config.equivalence_margin_pct / 100
    rule = Rule(look_alpha(look, max_looks, runs), look_alpha(look, max_looks, runs, 2 * ALPHA), margin, look, max_looks)
    pairs = _with_footing(_pairs(by_name, candidates, keys, used, weights, composite, runs, rule), footing)

    def pair(x: str, y: str) -> PairComparison:
        return pairs[(x, y)] if (x, y) in pairs else pairs[(y, x)]

    def metric_ties(metric: RankingMetric) -> Callable[[str, str], bool]:
        if runs < MIN_RUNS or metric not in used:
            return lambda x, y: within_tolerance(scores[metric][x], scores[metric][y], config.tie_tolerance)
        return lambda x, y: metric_tied(pair(x, y), metric)

    per_metric = {m: competition_ranks(scores[m], metric_ties(m)) for m in METRICS if m in scores}
    provisional = runs < MIN_RUNS
    overall = _provisional_ranks(composite, config.tie_tolerance) if provisional else _decided_ranks(composite, pair)
    searched = any(p.slo is not None for points in candidates.values() for p in points.values())
    basis = _describe(weights, used, len(keys), config.tie_tolerance, runs, searched, margin)
    ordered = sorted(composite, key=lambda n: (overall[n][0], -composite[n], n))
    entries = [
        RankEntry(
            rank=overall[name][0],
            target=name,
            score=round(composite[name], 4),
            basis=basis,
            metrics={m: round(scores[m][name], 4) for m in METRICS if m in scores},
            metric_ranks={m: per_metric[m][name][0] for m in METRICS if m in per_metric},
            tied_with=overall[name][1],
            undecided_with=overall[name][2],
            provisional=provisional,
            flags=flags[name] + rate_notes[name],
        )
        for name in ordered
    ]
    single_workload = len({k[0] for k in keys}) == 1
    noise = noise_warnings((p for points in candidates.values() for p in points.values()), single_workload)
    return Ranked(entries, list(pairs.values()), noise, footing)


def _with_footing(
    pairs: dict[tuple[str, str], PairComparison], footing: list[FootingProblem]
) -> dict[tuple[str, str], PairComparison]:
    """Each ranked pair not on equal footing (ranked together only when the matrix allows it) says why."""
    problems = {frozenset((p.a, p.b)): p for p in footing}
    return {
        key: pair.model_copy(update={"unequal_footing": problem.message})
        if (problem := problems.get(frozenset(key))) is not None
        else pair
        for key, pair in pairs.items()
    }


def rank_targets(targets: list[TargetResult], config: RankingConfig | None = None) -> list[RankEntry]:
    """The ranking alone (see rank)."""
    return rank(targets, config).entries


def unranked_reasons(
    targets: list[TargetResult],
    ranking: list[RankEntry],
    metrics: list[TargetMetrics],
    footing: list[FootingProblem] | None = None,
) -> dict[str, str]:
    """Why each target missing from the ranking is missing, from its stored metrics (`footing`: the ranking's,
    CampaignResults.footing)."""
    ranked = {entry.target for entry in ranking}
    points = {m.target: m.points for m in metrics}
    reasons = {}
    for target in targets:
        if target.name in ranked:
            continue
        unequal = [
            p for p in footing or [] if not p.ranked_anyway and target.name in (p.a, p.b) and {p.a, p.b} - {target.name} <= ranked
        ]
        if target.status == "succeeded" and unequal:
            reasons[target.name] = f"not ranked: {'; '.join(p.message for p in unequal)}; to compare them, {unequal[0].fix}"
        elif target.status != "succeeded":
            reasons[target.name] = f"failed: {target.error.kind}: {target.error.message}" if target.error else "failed"
        else:
            flags = _flags(points.get(target.name, []))
            reasons[target.name] = "no complete measurement comparable with the ranked targets" + (
                f" ({'; '.join(flags)})" if flags else ""
            )
    return reasons
