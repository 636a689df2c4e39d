"""What the verdict's sequential decision resolves: simulated campaigns (tests/decision_simulation.py).

    .venv/bin/python bench/decisions.py [--campaigns 1000]

Prints, for a design of 3 to 12 runs per point (a look after each run, 5% equivalence margin): the share of
identical targets called different, the share of a 1.5x effect at 25% between-run CV decided, the share of
identical targets at 3% CV shown equivalent, and the smallest effect decided the right way in 80% of
campaigns at 10% and 30% between-run CV.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.decision_simulation import simulate  # the repository's root on the path first


def smallest_decided(cv: float, campaigns: int, power: float = 0.8) -> float:
    """The smallest ratio (on a 1% grid, bisected) decided the right way in `power` of the campaigns."""
    low, high = 1.0, 4.0
    while high - low > 0.01:
        middle = (low + high) / 2
        found = simulate(campaigns, ratio=middle, cv=cv, seed=3)
        low, high = (low, middle) if found.share(found.right_way) >= power else (middle, high)
    return high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=1000)
    n = parser.parse_args().campaigns
    same = simulate(4 * n, 1.0, 0.25, seed=1)  # a rate near 5%: four times the campaigns to measure it
    print(f"identical targets, CV 25%: called different in {same.share(same.different):.1%} of {4 * n} campaigns")
    effect = simulate(n, 1.5, 0.25, seed=2)
    print(f"1.5x at CV 25%: decided in {effect.share(effect.right_way):.1%}, {effect.mean_runs:.1f} runs per point on average")
    quiet = simulate(n, 1.0, 0.03, seed=4)
    print(
        f"identical at CV 3%: equivalent within 5% in {quiet.share(quiet.equivalent):.1%}, {quiet.mean_runs:.1f} runs on average"
    )
    for cv in (0.10, 0.30):
        print(f"smallest effect decided in 80% at CV {cv:.0%}: {smallest_decided(cv, n):.2f}x")


if __name__ == "__main__":
    main()
