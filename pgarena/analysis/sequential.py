"""Repetitions until decided: after each phase, is another one needed? Pure.

A campaign with adaptive repetitions ("repetitions": {"min": 3, "max": 12}) looks at its ranked
pairs after each interleaved phase from the min-th run on: look 1 with min runs per point, look k
with min + k - 1, at most max_looks = max - min + 1 looks. At each look every pair's comparisons are
decided at that look's level (pgarena.analysis.spending: O'Brien-Fleming-type alpha spending, so the
chance of calling identical targets different stays at 5% over all the looks), shared over the
pair's comparisons (Bonferroni), with the equivalence margin: each pair is different, equivalent or
inconclusive (pgarena.analysis.comparisons). Another phase runs while a pair is inconclusive and
looks remain. The final verdict is the ranking at the last look, at the same level
(pgarena.analysis.ranking.rank with `looks`), so the error rates the simulations in
tests/unit/test_decisions.py measure are the verdict's.
"""

from __future__ import annotations

from pgarena.analysis.comparisons import Rule, outcome_of, redecided
from pgarena.analysis.significance import ALPHA, MIN_RUNS
from pgarena.analysis.spending import look_alpha, looks_of
from pgarena.model.pairwise import PairComparison
from pgarena.model.results import CampaignResults

__all__ = ["looks_of", "needs_more", "pair_decision", "pair_decisions"]


def pair_decision(pair: PairComparison, look: int, max_looks: int, margin_pct: float) -> PairComparison:
    """The pair decided at this look's level from its stored comparisons (their ratios, noise and counts)."""
    runs = min((min(c.n_a, c.n_b) for c in pair.comparisons), default=0)
    if pair.basis == "means" or runs < MIN_RUNS or not pair.comparisons:
        return pair.model_copy(update={"outcome": "inconclusive", "look": look, "max_looks": max_looks})
    rule = Rule(look_alpha(look, max_looks, runs), look_alpha(look, max_looks, runs, 2 * ALPHA), margin_pct / 100)
    comparisons = [redecided(c, rule.levels(len(pair.comparisons))) for c in pair.comparisons]
    outcome = outcome_of(comparisons, pair.composite_ci95)
    return pair.model_copy(update={"comparisons": comparisons, "outcome": outcome, "look": look, "max_looks": max_looks})


def pair_decisions(results: CampaignResults, look: int, max_looks: int, margin_pct: float) -> list[PairComparison]:
    """Every ranked pair decided at this look (the pairs the final verdict ranks on, at the last look)."""
    return [pair_decision(p, look, max_looks, margin_pct) for p in results.comparisons]


def needs_more(results: CampaignResults, look: int, max_looks: int, margin_pct: float) -> bool:
    """Run another phase? Yes while a ranked pair is inconclusive at this look and looks remain."""
    if look >= max_looks:
        return False
    return any(p.outcome == "inconclusive" for p in pair_decisions(results, look, max_looks, margin_pct))
