"""Is a ratio of two targets' means real? Welch's t-test on the log of the ratio, its interval at any level, and the three outcomes. Pure.

Each target ran a point n times (its repetitions). The ratio of their means, R = mean_a / mean_b, is
compared on the log scale, where a 2x win and a 2x loss are the same distance from 1: log R has the
standard error sqrt(cv_a^2 / n_a + cv_b^2 / n_b) (the delta method: cv the sample stddev over the
mean), the degrees of freedom are Welch-Satterthwaite's, and the 95% interval is
R x exp(+- t(0.975, df) x se). The two-sided p-value is that of t = log R / se. Fewer than
MIN_RUNS repetitions on either side give no interval and no p-value: two runs cannot measure noise.

The interval can be asked at any two-sided level `alpha` (t(1 - alpha / 2, df) in place of
t(0.975, df)): the verdict asks it at its look's level shared over the pair's comparisons
(pgarena.analysis.decision), so the interval printed beside a decision is the one that made it.
Each comparison then has one of three outcomes (`outcome`): different (the interval excludes 1),
equivalent within a margin (the interval lies inside [1 / (1 + margin), 1 + margin]: both one-sided
tests of the TOST reject, pgarena.analysis.significance.decide) or inconclusive (neither).

Holm's step-down correction (kept for readers of older results): sorted by p, the k-th smallest of
m is significant when it and every smaller one passes p x (m - k + 1) <= ALPHA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import fmean, stdev

from pgarena.analysis.intervals import t_975
from pgarena.model.pairwise import Outcome

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


@lru_cache(maxsize=4096)
def t_critical(alpha: float, df: int) -> float:
    """The two-sided critical value: P(|T| >= t) = alpha for Student's t with df degrees of freedom (bisection)."""
    if alpha == ALPHA:
        return t_975(df)  # the table the per-point intervals use: the same figure at 95%
    low, high = 0.0, 1.0
    while two_sided_p(high, df) > alpha:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if two_sided_p(middle, df) > alpha:
            low = middle
        else:
            high = middle
        if high - low < 1e-9 * high:
            break
    return high


@dataclass(frozen=True)
class RatioTest:
    """mean_a / mean_b, its interval at the two-sided level `alpha` and Welch's p-value (None with fewer
    than MIN_RUNS runs on a side); `se` and `df` of the log ratio, for an interval at any other level."""

    ratio: float
    low: float | None = None
    high: float | None = None
    p: float | None = None
    alpha: float = ALPHA
    se: float | None = None
    df: float | None = None

    def interval(self, alpha: float) -> tuple[float, float] | None:
        """The ratio's two-sided interval at level 1 - alpha; None without one."""
        if self.se is None or self.df is None:
            return None
        spread = math.exp(t_critical(alpha, max(1, math.floor(min(self.df, 1e6)))) * self.se) if self.se else 1.0
        return self.ratio / spread, self.ratio * spread


@dataclass(frozen=True)
class Decision:
    """A comparison's outcome and the interval that made it, at its confidence."""

    outcome: Outcome
    low: float | None
    high: float | None
    confidence: float


def decide(test: RatioTest, alpha: float, equivalence_alpha: float, margin: float) -> Decision:
    """Equivalent when the interval at 1 - equivalence_alpha lies within `margin` (relative) of 1 (two one-sided
    tests at equivalence_alpha / 2 each; tested first: a difference inside the margin is one the user called
    negligible), else different when the interval at 1 - alpha excludes 1, else inconclusive. The interval
    returned is the one that decided (the one at 1 - alpha when inconclusive)."""
    tost = test.interval(equivalence_alpha)
    if tost is None:
        return Decision("inconclusive", None, None, 1 - alpha)
    if margin > 0 and tost[0] >= 1 / (1 + margin) and tost[1] <= 1 + margin:
        return Decision("equivalent", *tost, 1 - equivalence_alpha)
    low, high = test.interval(alpha) or tost
    return Decision("different" if low > 1 or high < 1 else "inconclusive", low, high, 1 - alpha)


def ratio_test(a: list[float], b: list[float], alpha: float = ALPHA) -> RatioTest | None:
    """Welch's test of mean(a) / mean(b) on the log scale, its interval at the two-sided level `alpha`;
    None when either mean is not positive (no ratio)."""
    mean_a, mean_b = fmean(a), fmean(b)
    if mean_a <= 0 or mean_b <= 0:
        return None
    ratio = mean_a / mean_b
    if min(len(a), len(b)) < MIN_RUNS:
        return RatioTest(ratio, alpha=alpha)
    return log_ratio_test(ratio, stdev(a) / mean_a, len(a), stdev(b) / mean_b, len(b), alpha)


def log_ratio_test(ratio: float, cv_a: float, n_a: int, cv_b: float, n_b: int, alpha: float = ALPHA) -> RatioTest:  # noqa: PLR0913  # the two sides' figures
    """ratio_test from each side's coefficient of variation and count (what a simulation draws directly)."""
    var_a, var_b = cv_a**2 / n_a, cv_b**2 / n_b
    se = math.sqrt(var_a + var_b)
    if se == 0:  # no noise at all on either side: any difference is exact
        return RatioTest(ratio, ratio, ratio, 1.0 if ratio == 1 else 0.0, alpha, 0.0, math.inf)
    df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    spread = math.exp(t_critical(alpha, max(1, math.floor(df))) * se)
    return RatioTest(ratio, ratio / spread, ratio * spread, two_sided_p(math.log(ratio) / se, df), alpha, se, df)


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given: significant at ALPHA when <= ALPHA."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
