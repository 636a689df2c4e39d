"""The verdict in one paragraph, from the stored ranking and pairwise comparisons (never recomputed). Pure.

Each group sharing a rank says why: a tie (every pair in it equivalent within the margin) or
undecided (with the noise behind it and the runs, and their cost, that would decide it). Each step
down the ranking says what separates the group above from the one below, in the user's units, quoted
by the weakest member above against the best below (no winner's curse): "tuned ranks first: 2.01x
the tps [1.80, 2.24] and p95 latency 49% lower [45%, 53%] than durable at 4 clients", the intervals
those of the decision. With fewer than 3 runs per point nothing is decided: the order is provisional. Targets not on equal footing
(pgarena.analysis.footing) end it: the ones left out and why, or, ranked anyway, the caveat.
"""

from __future__ import annotations

from collections.abc import Callable

from pgarena.model.pairwise import FootingProblem, PairComparison
from pgarena.model.results import CampaignResults, RankEntry


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _groups(ranking: list[RankEntry]) -> list[list[RankEntry]]:
    groups: list[list[RankEntry]] = []
    for entry in ranking:
        if groups and groups[-1][0].rank == entry.rank:
            groups[-1].append(entry)
        else:
            groups.append([entry])
    return groups


def _without_comparisons(ranking: list[RankEntry]) -> str:
    """A results.json written before pairwise comparisons were stored: its ranking, said to rest on scores alone."""
    first = [e.target for e in ranking if e.rank == 1]
    lead = (
        f"{names(first)} share first (composite score {ranking[0].score:.3f})"
        if len(first) > 1
        else f"{first[0]} ranks first with a composite score of {ranking[0].score:.3f}"
    )
    rest = ", ".join(f"{e.target} {e.score:.3f}" for e in ranking if e.rank != 1)
    return f"{lead}{f'; then {rest}' if rest else ''} (this results.json stores no pairwise comparisons: scores alone)."


def footing_notes(ranking: list[RankEntry], comparisons: list[PairComparison], footing: list[FootingProblem]) -> list[str]:
    """A sentence per pair not on equal footing: a caveat where they were ranked together anyway, else
    why one of them was left out and what to change."""
    ranked = {e.target for e in ranking}
    caveats = [p.unequal_footing for p in comparisons if p.unequal_footing]
    notes = [f"Caveat: ranked together on unequal footing (ranking.allow_unequal_footing): {c}." for c in caveats]
    for problem in footing:
        left_out = [n for n in (problem.a, problem.b) if n not in ranked]
        if len(left_out) == 1 and not problem.ranked_anyway:
            notes.append(f"{left_out[0]} is not ranked: {problem.message}; to compare them, {problem.fix}.")
    return notes


def headline(
    ranking: list[RankEntry],
    comparisons: list[PairComparison],
    footing: list[FootingProblem] | None = None,
    phase_cost_usd: float | None = None,
) -> str:
    """What the ranking says and why, then what was not on equal footing; '' when nothing is ranked.
    `phase_cost_usd`: what one more run of every target cost (for what an undecided pair would take)."""
    if not ranking:
        return ""
    notes = footing_notes(ranking, comparisons, footing or [])
    return " ".join([_verdict(ranking, comparisons, phase_cost_usd), *notes])


def phase_cost(results: CampaignResults) -> float | None:
    """What one more run of every ranked point cost, from the campaign's cost (actual, else estimated) over
    its runs per point; None without a cost."""
    if results.cost is None:
        return None
    usd = results.cost.actual_usd if results.cost.actual_usd is not None else results.cost.estimated_usd
    runs = max((c.n_a for p in results.comparisons for c in p.comparisons), default=0)
    return usd / runs if runs and usd else None


def _provisional(ranking: list[RankEntry]) -> str:
    order = ", ".join(f"{e.target} {e.score:.3f}" for e in ranking)
    return f"Not enough runs to decide (fewer than 3 per point): provisional order by the means: {order}."


def _within(
    group: list[RankEntry], reason: Callable[[str, str], str], pair: Callable[[str, str], PairComparison | None], place: str
) -> str:
    """A group sharing a rank: a tie when every pair in it is equivalent, else undecided, each pair saying why."""
    pairs = [(x.target, y.target) for i, x in enumerate(group) for y in group[i + 1 :]]
    equivalent = all((found := pair(x, y)) is not None and found.outcome == "equivalent" for x, y in pairs)
    said = names([e.target for e in group])
    why = reason(*pairs[0]) if len(pairs) == 1 else "; ".join(f"{x} and {y}: {reason(x, y)}" for x, y in pairs)
    if equivalent:
        return f"{said} tie for {place} (score {group[0].score:.3f}): {why}."
    return f"{said} share {place}: {why}."


def _verdict(ranking: list[RankEntry], comparisons: list[PairComparison], phase_cost_usd: float | None = None) -> str:
    if len(ranking) == 1:
        return f"{ranking[0].target} is the only ranked target."
    if not comparisons:
        return _without_comparisons(ranking)
    if any(e.provisional for e in ranking):
        return _provisional(ranking)
    return " ".join(_sentences(_groups(ranking), _Pairs(comparisons, phase_cost_usd)))


class _Pairs:
    """The stored pairs, either way round, and each one's reason (with what deciding it would cost)."""

    def __init__(self, comparisons: list[PairComparison], phase_cost_usd: float | None) -> None:
        self.pairs = {(p.a, p.b): p for p in comparisons}
        self.phase_cost_usd = phase_cost_usd

    def pair(self, x: str, y: str) -> PairComparison | None:
        return self.pairs.get((x, y)) or self.pairs.get((y, x))

    def reason(self, x: str, y: str) -> str:
        found = self.pair(x, y)
        if found is None:
            return "no comparison stored"
        if not (found.runs_needed and found.comparisons and self.phase_cost_usd):
            return found.reason
        more = found.runs_needed - min(c.n_a for c in found.comparisons)
        return f"{found.reason} (about ${more * self.phase_cost_usd:,.2f} more)" if more > 0 else found.reason


def _sentences(groups: list[list[RankEntry]], pairs: _Pairs) -> list[str]:
    sentences = []
    for i, group in enumerate(groups):
        place = "first" if i == 0 else ordinal(group[0].rank)
        if len(group) > 1:
            sentences.append(_within(group, pairs.reason, pairs.pair, place))
        if i + 1 < len(groups):
            # No winner's curse: the group above is quoted by its weakest member against the best below.
            weakest, below = group[-1].target, groups[i + 1][0].target
            lower = names([e.target for e in groups[i + 1]])
            if i == 0 and len(group) == 1:
                sentences.append(f"{weakest} ranks first: {pairs.reason(weakest, below)}.")
            else:
                verb = "rank" if len(groups[i + 1]) > 1 else "ranks"
                sentences.append(f"{lower} {verb} {ordinal(groups[i + 1][0].rank)}; {weakest}: {pairs.reason(weakest, below)}.")
    return sentences


def rank_label(entry: RankEntry) -> str:
    """The rank as tables print it: '1=' tied (equivalent), '1?' undecided or provisional, '1' decided."""
    if entry.provisional or entry.undecided_with:
        return f"{entry.rank}?"
    return f"{entry.rank}{'=' if entry.tied_with else ''}"


def score_label(entry: RankEntry) -> str:
    """The score, marked where its rank is shared: the score alone does not separate the targets."""
    if entry.provisional:
        return f"{entry.score:.3f} (provisional)"
    if entry.undecided_with:
        return f"{entry.score:.3f} (undecided with {names(entry.undecided_with)})"
    if entry.tied_with:
        return f"{entry.score:.3f} (tie)"
    return f"{entry.score:.3f}"
