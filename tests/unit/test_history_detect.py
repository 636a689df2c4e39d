"""The change-point detector on synthetic nightly series of known steps and seeded noise.

Each series has 24 runs of log-normal noise (3% run to run) and 0, 1 or 2 steps (drawn 1:2:1), each
at least 4 runs from an end and 6 runs from the other step, up or down; a found change
counts as a hit when it is within one run of a step not hit yet. Precision and recall over 300 series
per regime must hold what the detector was tuned to (detect.PENALTY); they are printed for the record
(pytest -s):

- clear steps (10% to 30%): precision >= 0.97, recall >= 0.97
- subtle steps (6% to 15%, 2 to 5 times the noise): precision >= 0.95, recall >= 0.85
- no step at all: at most 2% of the series show a change
"""

import math
import random

import pytest

from pgarena.analysis.history import detect

RUNS = 24
NOISE = 0.03
SERIES = 300


def _series(rng: random.Random, low: float, high: float, steps: int) -> tuple[list[float], list[int]]:
    where: list[int] = []
    while len(where) < steps:
        p = rng.randint(4, RUNS - 4)
        if all(abs(p - q) >= 6 for q in where):
            where.append(p)
    size = {p: rng.choice([-1, 1]) * rng.uniform(low, high) for p in where}
    level, values = 1000.0, []
    for i in range(RUNS):
        level *= 1 + size.get(i, 0.0)
        values.append(level * math.exp(rng.gauss(0, NOISE)))
    return values, sorted(where)


def _score(low: float, high: float, seed: int) -> tuple[float, float, int]:
    rng = random.Random(seed)
    hits = false = missed = 0
    for _ in range(SERIES):
        values, steps = _series(rng, low, high, rng.choice([0, 1, 1, 2]))
        hit: set[int] = set()
        for step in detect.changes(values, threshold=0.05):
            near = [p for p in steps if abs(p - step.index) <= 1 and p not in hit]
            if near:
                hit.add(near[0])
            else:
                false += 1
        hits += len(hit)
        missed += len(steps) - len(hit)
    return hits / (hits + false), hits / (hits + missed), hits


@pytest.mark.parametrize(
    ("low", "high", "min_precision", "min_recall"), [(0.10, 0.30, 0.97, 0.97), (0.06, 0.15, 0.95, 0.85)], ids=["clear", "subtle"]
)
def test_precision_and_recall_on_seeded_steps(low, high, min_precision, min_recall):
    precision, recall, hits = _score(low, high, seed=42)
    print(f"\nsteps {low:.0%} to {high:.0%}, noise {NOISE:.0%}, {SERIES} series of {RUNS} runs: "
          f"precision {precision:.3f}, recall {recall:.3f} ({hits} steps found)")  # fmt: skip
    assert precision >= min_precision and recall >= min_recall


def test_noise_alone_rarely_shows_a_change():
    rng = random.Random(7)
    flagged = sum(bool(detect.changes(_series(rng, 0, 0, 0)[0], threshold=0.05)) for _ in range(SERIES))
    print(f"\nno step, noise {NOISE:.0%}: {flagged} of {SERIES} series showed a change")
    assert flagged / SERIES <= 0.02


def test_a_step_below_the_threshold_is_not_reported():
    rng = random.Random(3)
    values = [1000 * (1.03 if i >= 12 else 1) * math.exp(rng.gauss(0, 0.002)) for i in range(RUNS)]
    assert detect.changes(values, threshold=0.05) == []
    (step,) = detect.changes(values, threshold=0.01)
    assert step.index == 12 and abs(step.ratio - 1.03) < 0.005 and step.low < step.ratio < step.high


def test_a_short_series_needs_three_runs_each_side():
    # Five runs: no change can have three runs on both sides of it
    assert detect.proposed([100, 100, 100, 50, 50]) == []
    values = [100.0, 101.0, 99.0, 60.0, 61.0, 59.5]
    (step,) = detect.changes(values, threshold=0.05)
    assert step.index == 3 and step.before == step.after == 3
