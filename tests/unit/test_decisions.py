"""The verdict's whole sequential decision, simulated (tests/decision_simulation.py): seeded, so every run
gives the same counts. Design: 3 to 12 runs per point, a look after each run, 5% equivalence margin."""

from __future__ import annotations

import numpy as np
import pytest

from pgarena.analysis.ranking import rank
from pgarena.analysis.sequential import looks_of, needs_more, pair_decisions
from pgarena.analysis.significance import ALPHA
from pgarena.analysis.spending import boundaries, look_alpha, spent
from pgarena.model.results import CampaignResults, TargetResult
from tests.decision_simulation import simulate
from tests.unit.test_verdict import runs, target


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


def _results(*targets: TargetResult, design: tuple[int, int] | None = None) -> CampaignResults:
    ranked = rank(list(targets), design=design)
    return CampaignResults(
        campaign_id="c",
        campaign="c",
        started_at="",
        finished_at="",
        targets=list(targets),
        ranking=ranked.entries,
        comparisons=ranked.comparisons,
    )


def test_another_phase_runs_while_a_pair_is_undecided_and_looks_remain():
    # Given two targets 5% apart with 19% between-run noise over 5 runs: undecided
    results = _results(target("a", runs(877.0, 161.74, 10.0, 3.0)), target("b", runs(835.5, 161.74, 10.0, 3.0)))
    assert [p.outcome for p in pair_decisions(results, 3, 10, 5.0)] == ["inconclusive"]
    # Then another phase is needed before the last look, and none at it
    assert needs_more(results, 3, 10, 5.0) and not needs_more(results, 10, 10, 5.0)


def test_a_decided_pair_needs_no_more_phases():
    # Given sync-off 2x sync-on with 10% noise over 5 runs (look 3 of 10: min 3 runs)
    off, on = target("off", runs(2000.0, 200.0, 5.0, 0.5)), target("on", runs(1000.0, 100.0, 7.0, 0.7))
    results = _results(off, on, design=(3, 12))
    # Then the stored decision is the look's (5 runs of 3 to 12: look 3 of 10) and needs_more agrees: stop
    assert results.comparisons[0].outcome == "different"
    assert (results.comparisons[0].look, results.comparisons[0].max_looks) == (3, 10)
    assert not needs_more(results, 3, 10, 5.0)


def test_the_same_difference_needs_more_evidence_at_an_early_look():
    # Given 1.3x apart with 10% noise over 5 runs: decided in a fixed design of 5 runs...
    a, b = target("a", runs(1300.0, 130.0, 5.0, 0.5)), target("b", runs(1000.0, 100.0, 5.0, 0.5))
    fixed = _results(a, b)
    assert fixed.comparisons[0].outcome == "different"
    # ...but at look 3 of 10 the spending level is far stricter: another phase
    assert pair_decisions(fixed, 3, 10, 5.0)[0].outcome == "inconclusive" and needs_more(fixed, 3, 10, 5.0)


def test_looks_count_from_the_minimum_runs():
    assert looks_of(3, 3, 12) == (1, 10) and looks_of(12, 3, 12) == (10, 10) and looks_of(5, 5, 5) == (1, 1)
