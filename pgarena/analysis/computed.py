"""What aggregation computes from a campaign's targets, once: each run's stability, each target's
metrics (points, intervals, scaling, findings), the ranking with its pairwise comparisons and noise
warnings. results.json stores all of it; every reader (report, CLI, CSVs, `compare`) reads it. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from pgarena.analysis.metrics import campaign_statistics, target_metrics, with_points, with_stability
from pgarena.analysis.ranking import Ranked, rank
from pgarena.model.matrix import RankingConfig
from pgarena.model.metrics import TargetMetrics
from pgarena.model.results import Statistics, TargetResult


@dataclass(frozen=True)
class Computed:
    targets: list[TargetResult]
    metrics: list[TargetMetrics]
    ranked: Ranked
    statistics: Statistics


def compute(targets: list[TargetResult], campaign_id: str, ranking: RankingConfig | None, repetitions: int) -> Computed:
    """Every figure results.json carries beyond the runs themselves, each computed once."""
    runs = [with_stability(t) for t in targets]
    metrics = [target_metrics(t, campaign_id) for t in runs]
    final = [with_points(t, m) for t, m in zip(runs, metrics, strict=True)]
    return Computed(
        targets=final,
        metrics=metrics,
        ranked=rank(final, ranking, metrics),
        statistics=campaign_statistics(final, repetitions),
    )
