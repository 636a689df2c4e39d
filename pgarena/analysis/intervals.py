"""Confidence intervals over a point's repetitions. Pure.

A point's figure (tps, p95, p99) is measured once per repetition; its 95% confidence interval is
Student's t-interval: mean +- t(0.975, n - 1) x stddev / sqrt(n), stddev the sample standard
deviation (n - 1). It assumes the repetitions are independent draws around the point's true value,
which interleaving the targets' repetitions (pgarena.planning.planner) makes closer to true: drift over
the campaign spreads over every target instead of biasing the one that ran last.
With one repetition there is no interval: nothing measured the run-to-run noise.
"""

from __future__ import annotations

import math
from statistics import fmean, stdev

from pgarena.model.figures import Interval

METHOD = "95% Student t-interval over repetitions: mean +- t(0.975, n-1) x sample stddev / sqrt(n)"
SINGLE_RUN_NOTE = "1 run per point: no confidence interval"

# t(0.975, df), two-sided 95%, from the standard tables (df 1-30 exact to 3 decimals, then sparse).
_T_975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
    11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
    21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
    40: 2.021, 60: 2.000, 120: 1.980,
}  # fmt: skip
_Z_975 = 1.960  # the normal limit, df -> infinity


def t_975(df: int) -> float:
    """t(0.975, df). Between tabulated df the next smaller df's value is used: the interval errs wide."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df in _T_975:
        return _T_975[df]
    if df > max(_T_975):
        return _Z_975
    return _T_975[max(k for k in _T_975 if k < df)]


def interval(values: list[float]) -> Interval | None:
    """Mean, sample stddev, n and the 95% t-interval; None without values; no interval with one."""
    if not values:
        return None
    n, mean = len(values), fmean(values)
    if n == 1:
        return Interval(n=1, mean=mean)
    sd = stdev(values)
    half = t_975(n - 1) * sd / math.sqrt(n)
    return Interval(n=n, mean=mean, stddev=sd, ci95_low=mean - half, ci95_high=mean + half)


def relative_half_width(value: Interval | None) -> float:
    """Half the interval's width over its mean; 0 when there is no interval (one run) or no mean."""
    if value is None or value.half_width is None or not value.mean:
        return 0.0
    return value.half_width / abs(value.mean)


def _bounds(value: Interval) -> tuple[float, float]:
    """The 95% interval's ends; the mean twice when there is no interval."""
    if value.ci95_low is None or value.ci95_high is None:
        return value.mean, value.mean
    return value.ci95_low, value.ci95_high


def overlap(a: Interval, b: Interval) -> bool:
    """Do the two 95% intervals overlap? Points without an interval overlap only when equal."""
    (low_a, high_a), (low_b, high_b) = _bounds(a), _bounds(b)
    return low_a <= high_b and low_b <= high_a
