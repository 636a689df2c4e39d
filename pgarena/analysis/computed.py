"""What aggregation computes from a campaign's targets, once: each run's stability, each target's
metrics (points, intervals, scaling, findings), the ranking with its pairwise comparisons and noise
warnings. results.json stores all of it; every reader (report, CLI, CSVs, `compare`) reads it. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pgarena.analysis.findings import run_findings, server_findings
from pgarena.analysis.metrics import campaign_statistics, target_metrics, with_points, with_stability
from pgarena.analysis.ranking import Ranked, rank
from pgarena.model.matrix import RankingConfig
from pgarena.model.metrics import Finding, TargetMetrics
from pgarena.model.results import CampaignResults, Statistics, TargetResult


@dataclass(frozen=True)
class Computed:
    targets: list[TargetResult]
    metrics: list[TargetMetrics]
    ranked: Ranked
    statistics: Statistics
    findings: list[Finding] = field(default_factory=list)

    def results(self, **campaign: Any) -> CampaignResults:
        """The campaign's results: every computed figure, with what `campaign` says of the campaign itself
        (its id, name, times, run order...)."""
        return CampaignResults(
            targets=self.targets,
            ranking=self.ranked.entries,
            comparisons=self.ranked.comparisons,
            noise=self.ranked.noise,
            footing=self.ranked.footing,
            metrics=self.metrics,
            statistics=self.statistics,
            findings=self.findings,
            **campaign,
        )


def compute(
    targets: list[TargetResult],
    campaign_id: str,
    ranking: RankingConfig | None,
    repetitions: int,
    design: tuple[int, int] | None = None,
) -> Computed:
    """Every figure results.json carries beyond the runs themselves, each computed once. `design`: the (min, max)
    runs per point when repetitions are adaptive (pgarena.analysis.sequential), None for a fixed number."""
    runs = [with_stability(t) for t in targets]
    # The server's counters' findings beside the runs' own (they are incidents too: a hot row's lock waits were).
    metrics = [target_metrics(t, campaign_id) for t in runs]
    metrics = [m.model_copy(update={"findings": [*m.findings, *run_findings(t)]}) for t, m in zip(runs, metrics, strict=True)]
    final = [with_points(t, m) for t, m in zip(runs, metrics, strict=True)]
    return Computed(
        targets=final,
        metrics=metrics,
        ranked=rank(final, ranking, metrics, design=design),
        statistics=campaign_statistics(final, repetitions),
        findings=server_findings(final),
    )
