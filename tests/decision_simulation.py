"""Simulated campaigns through the verdict's sequential decision (tests/unit/test_decisions.py, bench/decisions.py).

Each campaign is one pair of targets, a and b, measured on tps (higher is better) and p95 latency
(lower is better), a's true tps `ratio` times b's and its latency 1 / `ratio` times b's, each run's
figure drawn with lognormal between-run noise of coefficient of variation `cv` (seeded numpy), a
run's latency noise correlated with its tps noise (`correlation`, -0.8 by default on the log scale:
in pgbench's closed loop a slow run is slow on both; 0 is the worst case for the pair's
Bonferroni correction, which tests/unit/test_decisions.py also runs). From
`min_runs` runs per point on, after each run (a phase), the pair is decided exactly as a campaign
decides it (pgarena.analysis.sequential.pair_decision: the look's alpha spending, simultaneous
intervals, the equivalence margin); a campaign stops at the first look where the pair is different
or equivalent, or at `max_runs`. The pair is oriented as the ranking orients it: a is the target with
the higher observed tps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pgarena.analysis.sequential import looks_of, pair_decision
from pgarena.model.matrix import RankingMetric
from pgarena.model.pairwise import MetricComparison, PairComparison


@dataclass(frozen=True)
class Simulated:
    campaigns: int
    different: int  # decided different, the truly better target (or either, for identical ones) above
    right_way: int  # decided different with the truly better target (a when ratio > 1) above
    equivalent: int
    inconclusive: int
    mean_runs: float  # runs per point at the look the campaign stopped

    def share(self, count: int) -> float:
        return count / self.campaigns


def _comparison(metric: RankingMetric, higher: bool, values: np.ndarray, n: int) -> MetricComparison:
    """values: (2, n) a's and b's runs."""
    means = values.mean(axis=1)
    cvs = values.std(axis=1, ddof=1) / means
    return MetricComparison(
        metric=metric,
        figure="tps" if higher else "p95 latency",
        higher_is_better=higher,
        workload="w",
        clients=4,
        n_a=n,
        n_b=n,
        mean_a=float(means[0]),
        mean_b=float(means[1]),
        ratio=float(means[0] / means[1]),
        cv_a=float(cvs[0]),
        cv_b=float(cvs[1]),
    )


def simulate(  # noqa: PLR0913  # the design and the truth it is run against
    campaigns: int,
    ratio: float,
    cv: float,
    min_runs: int = 3,
    max_runs: int = 12,
    margin_pct: float = 5.0,
    seed: int = 0,
    correlation: float = -0.8,
) -> Simulated:
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv**2))
    # (campaign, metric, target, run): standard normal, latency's correlated with tps's, then lognormal with
    # mean 1, then a's true ratio on each metric
    z = rng.standard_normal((campaigns, 2, 2, max_runs))
    z[:, 1] = correlation * z[:, 0] + math.sqrt(1 - correlation**2) * z[:, 1]
    runs = np.exp(sigma * z - sigma**2 / 2)
    runs[:, 0, 0, :] *= ratio
    runs[:, 1, 0, :] /= ratio
    counts = {"different": 0, "right_way": 0, "equivalent": 0, "inconclusive": 0}
    stopped = 0
    for campaign in range(campaigns):
        for n in range(min_runs, max_runs + 1):
            look, max_looks = looks_of(n, min_runs, max_runs)
            values = runs[campaign, :, :, :n]
            flip = values[0, 0].mean() < values[0, 1].mean()  # the ranking puts the higher composite first
            if flip:
                values = values[:, ::-1, :]
            pair = PairComparison(
                a="a",
                b="b",
                basis="intervals",
                comparisons=[_comparison("throughput", True, values[0], n), _comparison("latency", False, values[1], n)],
                outcome="inconclusive",
                reason="",
            )
            outcome = pair_decision(pair, look, max_looks, margin_pct).outcome
            if outcome != "inconclusive" or n == max_runs:
                break
        counts[outcome] += 1
        if outcome == "different" and (ratio == 1 or (ratio > 1) != flip):
            counts["right_way"] += 1
        stopped += n
    return Simulated(
        campaigns, counts["different"], counts["right_way"], counts["equivalent"], counts["inconclusive"], stopped / campaigns
    )
