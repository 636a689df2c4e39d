"""The verdict in one paragraph, from the stored ranking and pairwise comparisons (never recomputed). Pure.

Each group of tied targets says why it ties, and each step down the ranking says what separates the
group above from the one below, in the user's units: "tuned ranks first: 2.01x the tps [1.80, 2.24]
and p95 latency 49% lower [45%, 53%] than durable at 4 clients." Targets not on equal footing
(pgarena.analysis.footing) end it: the ones left out and why, or, ranked anyway, the caveat.
"""

from __future__ import annotations

from pgarena.model.pairwise import FootingProblem, PairComparison
from pgarena.model.results import RankEntry


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
        f"{names(first)} tie for first (composite score {ranking[0].score:.3f})"
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


def headline(ranking: list[RankEntry], comparisons: list[PairComparison], footing: list[FootingProblem] | None = None) -> str:
    """What the ranking says and why, then what was not on equal footing; '' when nothing is ranked."""
    if not ranking:
        return ""
    notes = footing_notes(ranking, comparisons, footing or [])
    return " ".join([_verdict(ranking, comparisons), *notes])


def _verdict(ranking: list[RankEntry], comparisons: list[PairComparison]) -> str:
    if len(ranking) == 1:
        return f"{ranking[0].target} is the only ranked target."
    if not comparisons:
        return _without_comparisons(ranking)
    pairs = {(p.a, p.b): p for p in comparisons}

    def reason(x: str, y: str) -> str:
        found = pairs.get((x, y)) or pairs.get((y, x))
        return found.reason if found else "no comparison stored"

    sentences = []
    groups = _groups(ranking)
    for i, group in enumerate(groups):
        leader = group[0].target
        place = "first" if i == 0 else ordinal(group[0].rank)
        if len(group) > 1:
            others = [e.target for e in group[1:]]
            why = (
                reason(leader, others[0])
                if len(others) == 1
                else "; ".join(f"{leader} and {other}: {reason(leader, other)}" for other in others)
            )
            sentences.append(f"{names([e.target for e in group])} tie for {place}: {why}.")
        if i + 1 < len(groups):
            below = groups[i + 1][0].target
            if i == 0 and len(group) == 1:
                sentences.append(f"{leader} ranks first: {reason(leader, below)}.")
            else:
                sentences.append(f"{below} ranks {ordinal(groups[i + 1][0].rank)}; {leader}: {reason(leader, below)}.")
    return " ".join(sentences)
