"""Whether an adaptive campaign (repetitions {min, max}) needs another phase.

PLACEHOLDER: replaced by the group-sequential design with alpha spending (issue 35). Until then: more runs
while any pair of ranked targets is not separated by Welch's test of their tps ratio (log scale) at some
point, at the level a power spending function (alpha (look / max_looks)^2, Kim and DeMets) gives this look
(unchecked by simulation; its points are not Holm-adjusted). It never stops for equivalence: identical
targets run to the maximum. Only the name and signature are the contract.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

from pgarena.analysis.significance import ratio_test
from pgarena.model.results import CampaignResults

ALPHA = 0.05


def _tps_by_point(results: CampaignResults) -> dict[tuple[str, str, int | None], list[float]]:
    """Each ranked target's succeeded runs' tps, by (target, workload, clients)."""
    ranked = {entry.target for entry in results.ranking}
    runs: dict[tuple[str, str, int | None], list[float]] = defaultdict(list)
    for target in results.targets:
        if target.name not in ranked:
            continue
        for run in target.workloads:
            if run.status == "succeeded" and run.tps is not None:
                runs[(target.name, run.name, run.clients)].append(run.tps)
    return runs


def look_alpha(look: int, max_looks: int) -> float:
    """The level of this look: what the spending function adds since the look before."""
    return ALPHA * ((look / max_looks) ** 2 - ((look - 1) / max_looks) ** 2)


def needs_more(results: CampaignResults, look: int, max_looks: int, margin_pct: float) -> bool:
    """`results`: the campaign's results so far, as Aggregate And Rank builds them; `look`: the repetitions
    run so far of the workload being decided; `max_looks`: its most (repetitions.max); `margin_pct`: the
    equivalence margin (unused by this placeholder)."""
    if look >= max_looks:
        return False
    runs = _tps_by_point(results)
    points = {(workload, clients) for (_, workload, clients) in runs}
    for a, b in combinations(sorted({entry.target for entry in results.ranking}), 2):
        for workload, clients in points:
            tps_a, tps_b = runs.get((a, workload, clients), []), runs.get((b, workload, clients), [])
            if not tps_a or not tps_b:  # a side failed there: more runs would not separate them
                continue
            test = ratio_test(tps_a, tps_b)
            if test is None or test.p is None or test.p >= look_alpha(look, max_looks):
                return True
    return False
