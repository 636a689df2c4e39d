"""Ranking: which target did best. Pure."""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean

from pgarena.results import RankEntry, TargetResult

BASIS = "mean over workloads and client counts of tps relative to the best target (1.0 = best); failed targets are not ranked"


def _throughput(target: TargetResult) -> dict[tuple[str, int | None], float]:
    """Mean tps per (workload, clients) over repetitions."""
    samples: dict[tuple[str, int | None], list[float]] = defaultdict(list)
    for w in target.workloads:
        if w.status == "succeeded" and w.tps is not None:
            samples[(w.name, w.clients)].append(w.tps)
    return {key: fmean(values) for key, values in samples.items()}


def rank_targets(targets: list[TargetResult]) -> list[RankEntry]:
    """Rank succeeded targets by their mean tps relative to the best target per workload point."""
    eligible = {t.name: _throughput(t) for t in targets if t.status == "succeeded"}
    eligible = {name: points for name, points in eligible.items() if points}
    if not eligible:
        return []
    best: dict[tuple[str, int | None], float] = {}
    for points in eligible.values():
        for key, tps in points.items():
            best[key] = max(best.get(key, 0.0), tps)
    scores = {
        name: fmean(points.get(key, 0.0) / best[key] if best[key] > 0 else 0.0 for key in best)
        for name, points in eligible.items()
    }
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [RankEntry(rank=i + 1, target=name, score=round(score, 4), basis=BASIS) for i, (name, score) in enumerate(ordered)]
