"""The verdict's whole sequential decision, simulated (tests/decision_simulation.py): seeded, so every run
gives the same counts. Design: 3 to 12 runs per point, a look after each run, 5% equivalence margin."""

from __future__ import annotations

import numpy as np
import pytest

from pgarena.analysis.significance import ALPHA
from pgarena.analysis.spending import boundaries, look_alpha, spent
from tests.decision_simulation import simulate


def test_identical_targets_are_called_different_at_most_5_percent_of_6000_campaigns():
    # The design's nominal rate is 5%: 6,000 campaigns (standard error 0.3%) measure it at 4.4%
    found = simulate(6000, ratio=1.0, cv=0.25, seed=7)
    assert found.share(found.different) <= ALPHA


def test_identical_targets_with_uncorrelated_metrics_are_called_different_at_most_5_percent():
    # The worst case for the pair's Bonferroni correction: tps and latency noise independent
    found = simulate(3000, ratio=1.0, cv=0.10, seed=12, correlation=0.0)
    assert found.share(found.different) <= ALPHA


def test_a_1_5x_effect_at_25_percent_noise_is_decided_within_12_runs_in_80_percent():
    found = simulate(500, ratio=1.5, cv=0.25, seed=13)
    assert found.share(found.right_way) >= 0.80
    assert found.mean_runs < 12  # it stops early once decided


def test_identical_targets_at_3_percent_noise_are_equivalent_within_12_runs_in_80_percent():
    found = simulate(500, ratio=1.0, cv=0.03, seed=14)
    assert found.share(found.equivalent) >= 0.80


def test_the_spending_boundaries_spend_alpha_as_the_function_says():
    # Brownian paths at 5 equally spaced looks: the share crossing first at each look is the spent increment
    fractions = (0.2, 0.4, 0.6, 0.8, 1.0)
    bounds = np.array(boundaries(fractions))
    rng = np.random.default_rng(5)
    steps = rng.standard_normal((400_000, 5)) * np.sqrt(np.diff((0.0, *fractions)))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    crossed = np.abs(z) >= bounds
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    increments = np.diff([0.0, *(spent(t) for t in fractions)])
    assert [float((first == k).mean()) for k in range(5)] == pytest.approx(list(increments), abs=0.0015)
    assert float((first >= 0).mean()) == pytest.approx(ALPHA, abs=0.002)


def test_a_single_look_is_a_fixed_design_and_early_looks_are_strict():
    assert look_alpha(1, 1, 5) == ALPHA
    levels = [look_alpha(k, 10, k + 2) for k in range(1, 11)]
    assert levels == sorted(levels) and levels[0] < 0.001 and 0.03 < levels[-1] < ALPHA
