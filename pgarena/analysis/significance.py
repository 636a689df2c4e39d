"""Is a ratio of two targets' means real? Welch's t-test on the log of the ratio, and Holm's correction. Pure.

Each target ran a point n times (its repetitions). The ratio of their means, R = mean_a / mean_b, is
compared on the log scale, where a 2x win and a 2x loss are the same distance from 1: log R has the
standard error sqrt(cv_a^2 / n_a + cv_b^2 / n_b) (the delta method: cv the sample stddev over the
mean), the degrees of freedom are Welch-Satterthwaite's, and the 95% interval is
R x exp(+- t(0.975, df) x se). The two-sided p-value is that of t = log R / se. Fewer than
MIN_RUNS repetitions on either side give no interval and no p-value: two runs cannot measure noise.

Holm's step-down correction keeps the chance of any false "different" in a family of comparisons
at ALPHA: sorted by p, the k-th smallest of m is significant when it and every smaller one passes
p x (m - k + 1) <= ALPHA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean, stdev

from pgarena.analysis.intervals import t_975

ALPHA = 0.05
# Fewer repetitions than this on either side: no interval, the targets are ranked by their means.
MIN_RUNS = 3

_EPSILON = 1e-14
_MAX_TERMS = 300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _EPSILON else _EPSILON)
    result = d
    for m in range(1, _MAX_TERMS):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _EPSILON else _EPSILON)
            c = 1.0 + numerator / c
            c = c if abs(c) > _EPSILON else _EPSILON
            result *= c * d
        if abs(c * d - 1.0) < 1e-12:
            break
    return result


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df (not necessarily whole) degrees of freedom."""
    return _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


@dataclass(frozen=True)
class RatioTest:
    """mean_a / mean_b, its 95% interval and p-value (None with fewer than MIN_RUNS runs on a side)."""

    ratio: float
    low: float | None = None
    high: float | None = None
    p: float | None = None


def ratio_test(a: list[float], b: list[float]) -> RatioTest | None:
    """Welch's test of mean(a) / mean(b) on the log scale; None when either mean is not positive (no ratio)."""
    mean_a, mean_b = fmean(a), fmean(b)
    if mean_a <= 0 or mean_b <= 0:
        return None
    ratio = mean_a / mean_b
    if min(len(a), len(b)) < MIN_RUNS:
        return RatioTest(ratio)
    var_a = (stdev(a) / mean_a) ** 2 / len(a)
    var_b = (stdev(b) / mean_b) ** 2 / len(b)
    se = math.sqrt(var_a + var_b)
    if se == 0:  # no noise at all on either side: any difference is exact
        return RatioTest(ratio, ratio, ratio, 1.0 if ratio == 1 else 0.0)
    df = (var_a + var_b) ** 2 / (var_a**2 / (len(a) - 1) + var_b**2 / (len(b) - 1))
    spread = math.exp(t_975(max(1, math.floor(df))) * se)
    return RatioTest(ratio, ratio / spread, ratio * spread, two_sided_p(math.log(ratio) / se, df))


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given: significant at ALPHA when <= ALPHA."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
