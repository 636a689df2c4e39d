"""Alpha spending: the level each look of a group-sequential design tests at. Pure.

A campaign with adaptive repetitions looks at its pairs after each phase and stops once every pair
is decided. Testing at 5% at every look would call identical targets different far more than 5% of
the time (each look is another chance). Lan and DeMets' alpha spending keeps the overall rate at
ALPHA: the O'Brien-Fleming-type function alpha(t) = 2 - 2 Phi(z(1 - ALPHA / 2) / sqrt(t)) says how
much of ALPHA may have been spent by information fraction t (runs so far over the most runs), so
early looks, with few runs, test at a tiny level and the last at nearly ALPHA. Look k's boundary c_k
solves P(|Z_1| < c_1, ..., |Z_(k-1)| < c_(k-1), |Z_k| >= c_k) = alpha(t_k) - alpha(t_(k-1)) under
no difference, Z_j the standardized log ratio at look j (a Brownian motion in the information,
Armitage, McPherson and Rowe's recursive integration on a grid). Its nominal two-sided level
2 (1 - Phi(c_k)) is what a look's tests use (with Student's t in place of the normal: the
simulations in tests/unit/test_decisions.py show the error rate this keeps). One look is a fixed
design: ALPHA.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

from pgarena.analysis.significance import ALPHA

_NORMAL = NormalDist()
# Grid step on the Brownian scale (information 1 at the last look): fine enough for 1e-4 on a level.
_STEP = 0.04
_SPAN = 8.0  # standard deviations of the grid on either side


def _phi(x: float) -> float:
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _upper(x: float) -> float:
    """P(Z > x)."""
    return math.erfc(x / math.sqrt(2)) / 2


def spent(t: float, alpha: float = ALPHA) -> float:
    """The O'Brien-Fleming-type spending function: the error allowed by information fraction t."""
    if t <= 0:
        return 0.0
    return 2 * _upper(_NORMAL.inv_cdf(1 - alpha / 2) / math.sqrt(min(t, 1.0)))


def _exit(density: list[tuple[float, float]], step: float, bound: float) -> float:
    """P(continued so far and |S| >= bound at this look): the carried density times each point's tails."""
    scale = math.sqrt(step)
    return sum(w * (_upper((bound - s) / scale) + _upper((bound + s) / scale)) for s, w in density)


def _solve(density: list[tuple[float, float]], step: float, target: float) -> float:
    """The bound on |S| whose exit probability is `target` (bisection: the exit falls as the bound grows)."""
    low, high = 0.0, _SPAN * 2
    for _ in range(100):
        middle = (low + high) / 2
        if _exit(density, step, middle) > target:
            low = middle
        else:
            high = middle
    return high


def _carried(density: list[tuple[float, float]], step: float, bound: float) -> list[tuple[float, float]]:
    """The density (as point masses on the grid) of S at this look on the paths that continue (|S| < bound)."""
    scale = math.sqrt(step)
    count = max(2, math.ceil(2 * bound / _STEP))
    width = 2 * bound / count
    grid = [-bound + (i + 0.5) * width for i in range(count)]
    return [(x, width * sum(w * _phi((x - s) / scale) / scale for s, w in density)) for x in grid]


@lru_cache(maxsize=256)
def boundaries(fractions: tuple[float, ...], alpha: float = ALPHA) -> tuple[float, ...]:
    """The z boundary of each look at these information fractions (increasing, the last 1)."""
    density = [(0.0, 1.0)]  # S_0 = 0
    bounds, previous_t, previous_spent = [], 0.0, 0.0
    for t in fractions:
        target = spent(t, alpha) - previous_spent
        step = t - previous_t
        bound = _solve(density, step, max(target, 1e-15))
        bounds.append(bound / math.sqrt(t))
        density = _carried(density, step, bound)
        previous_t, previous_spent = t, spent(t, alpha)
    return tuple(bounds)


def look_alpha(look: int, max_looks: int, runs: int, alpha: float = ALPHA) -> float:
    """The nominal two-sided level of look `look` of `max_looks`, `runs` runs per point at this look and
    one more run per look after the first (an interleaved phase each), spending `alpha` in all: `alpha`
    for a single look."""
    if max_looks <= 1:
        return alpha
    look = min(max(look, 1), max_looks)
    first = max(1, runs - (look - 1))
    most = first + max_looks - 1
    fractions = tuple((first + j) / most for j in range(max_looks))
    bound = boundaries(fractions, alpha)[look - 1]
    return 2 * _upper(bound)


def looks_of(runs: int, min_runs: int, max_runs: int) -> tuple[int, int]:
    """(this look, the most looks) for `runs` runs per point of a design running min_runs to max_runs."""
    max_looks = max(1, max_runs - min_runs + 1)
    return min(max(1, runs - min_runs + 1), max_looks), max_looks
