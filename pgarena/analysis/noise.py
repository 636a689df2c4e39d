"""Noise warnings: points whose runs varied so much that only large differences can show. Pure."""

from __future__ import annotations

from collections.abc import Iterable

from pgarena.analysis.effects import where
from pgarena.model.metrics import PointMetrics
from pgarena.model.pairwise import NoiseWarning

# Per-interval tps CV of a run (the noisiest of the point's runs) above this: the run did not hold a
# steady state (an overloaded host measured 22-44%; a quiet one a few percent).
HIGH_WITHIN_RUN_CV = 0.20
# tps stddev / mean over a point's repetitions above this: runs of the same thing disagree by more
# than the differences a tuning change usually makes.
HIGH_BETWEEN_RUNS_CV = 0.10


def noise_warnings(points: Iterable[PointMetrics], single_workload: bool) -> list[NoiseWarning]:
    warnings = []
    for p in points:
        within = p.stability.cv if p.stability.cv is not None and p.stability.cv > HIGH_WITHIN_RUN_CV else None
        between = p.tps_cv if p.runs > 1 and p.tps_cv > HIGH_BETWEEN_RUNS_CV else None
        if within is None and between is None:
            continue
        said = []
        if within is not None:
            said.append(
                f"{within:.0%} within a run (per-interval CV of its noisiest run; over {HIGH_WITHIN_RUN_CV:.0%} is noisy)"
            )
        if between is not None:
            said.append(f"{between:.0%} between its {p.runs} runs (stddev / mean; over {HIGH_BETWEEN_RUNS_CV:.0%} is noisy)")
        warnings.append(
            NoiseWarning(
                target=p.target,
                workload=p.workload,
                clients=p.clients,
                within_run_cv=within,
                between_runs_cv=between,
                runs=p.runs,
                message=f"{p.target} {where(p.key, single_workload)}: tps varied {' and '.join(said)}: intervals are wide, "
                "small differences cannot be told apart",
            )
        )
    return warnings
