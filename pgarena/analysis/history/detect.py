"""Change points of one comparable series: ruptures' PELT proposes them, Welch's test confirms them.

ruptures (an optional extra, `pip install 'pgarena[history]'`) searches the log values, scaled by the
series' own run-to-run noise, for the segmentation minimising the squared error plus a penalty per
change (PELT, exact). Each proposed change is then kept only when the runs after it differ from the
runs before it (back to the previous change) beyond noise: the ratio of their means by Welch's t on the
log values (pgarena.analysis.significance, as the ranking compares targets), p below ALPHA, and at least
`threshold` in size. A change needs MIN_RUNS runs on each side, so it is reported from the third run at
its new level on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median

from pgarena.analysis.significance import ALPHA, MIN_RUNS, ratio_test

LIBRARY = "ruptures"
INSTALL_HINT = (
    "change points need ruptures, the history extra: in a pgarena checkout .venv/bin/pip install -e '.[history]', "
    "else pip install 'pgarena[history]'"
)
# PELT's penalty per change, in units of the series' noise variance, times log(n): BIC's form, raised
# until seeded noise without steps gave no false change (tests/unit/test_history_detect.py).
PENALTY = 4.0
# The noise is never taken below this (relative): a series of identical figures is not infinitely precise.
MIN_NOISE = 0.002


class DetectorMissing(RuntimeError):
    """ruptures is not installed: its message says how to install it."""


@dataclass(frozen=True)
class Step:
    """A confirmed change: index of the first value at the new level, and the ratio after / before."""

    index: int
    ratio: float
    low: float
    high: float
    p: float
    before: int
    after: int


def method() -> str:
    return (
        f"ruptures PELT (l2 on log values over their noise, penalty {PENALTY:g} x log n), each change confirmed by "
        f"Welch's t on log values (p < {ALPHA}), {MIN_RUNS}+ runs each side"
    )


def available() -> bool:
    try:
        import ruptures  # noqa: F401  # an optional extra: probed, not required
    except ImportError:
        return False
    return True


def _noise(logs: list[float]) -> float:
    """The run-to-run noise of log values, robust to steps: the median absolute successive difference
    over (0.6745 x sqrt 2), the standard deviation it estimates for normal noise."""
    diffs = [abs(b - a) for a, b in zip(logs, logs[1:], strict=False)]
    return max(MIN_NOISE, median(diffs) / (0.6745 * math.sqrt(2))) if diffs else MIN_NOISE


def proposed(values: list[float]) -> list[int]:
    """PELT's change indices (first value of each new segment), before any confirmation."""
    try:
        import numpy as np  # ruptures' own dependency: only with the extra
        import ruptures  # an optional extra
    except ImportError as missing:
        raise DetectorMissing(INSTALL_HINT) from missing
    if len(values) < 2 * MIN_RUNS or min(values) <= 0:
        return []
    logs = [math.log(v) for v in values]
    sigma = _noise(logs)
    signal = np.array([(x - logs[0]) / sigma for x in logs]).reshape(-1, 1)
    ends = ruptures.Pelt(model="l2", min_size=MIN_RUNS, jump=1).fit(signal).predict(pen=PENALTY * math.log(len(values)))
    return [int(end) for end in ends[:-1]]  # the last end is the series' length


def confirm(values: list[float], candidates: list[int], threshold: float) -> list[Step]:
    """The candidates whose runs after differ from the runs before (each side up to its neighbours)."""
    steps: list[Step] = []
    bounds = [0, *candidates, len(values)]
    for i, index in enumerate(candidates, start=1):
        before, after = values[bounds[i - 1] : index], values[index : bounds[i + 1]]
        test = ratio_test(after, before)
        if test is None or test.p is None or test.low is None or test.high is None:
            continue
        if test.p < ALPHA and abs(math.log(test.ratio)) >= math.log1p(threshold):
            steps.append(Step(index, test.ratio, test.low, test.high, test.p, len(before), len(after)))
    return steps


def changes(values: list[float], threshold: float) -> list[Step]:
    """The confirmed change points of one comparable series of positive figures."""
    return confirm(values, proposed(values), threshold)
