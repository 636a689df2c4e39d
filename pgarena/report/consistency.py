"""A results.json read back (`pgarena report`, `compare`, a run's S3 copy) may be hand-edited or crafted: every
target its ranking, comparisons and footing name must be one of its targets, or the reports would read
figures that are not there. Said plainly, not as a KeyError's traceback."""

from __future__ import annotations

from pgarena.model.results import CampaignResults

MAX_NAMED = 3


class InconsistentResultsError(ValueError):
    """results.json names a target it does not hold."""


def missing_targets(results: CampaignResults) -> list[str]:
    """Where results.json names a target it does not hold: `ranking[0].target 'x'`, one entry each."""
    names = {t.name for t in results.targets}
    named = [
        *((f"ranking[{i}].target", e.target) for i, e in enumerate(results.ranking)),
        *((f"ranking[{i}].tied_with", n) for i, e in enumerate(results.ranking) for n in e.tied_with),
        *((f"comparisons[{i}].{side}", getattr(p, side)) for i, p in enumerate(results.comparisons) for side in "ab"),
        *((f"footing[{i}].{side}", getattr(p, side)) for i, p in enumerate(results.footing) for side in "ab"),
    ]
    return [f"{where} {name!r}" for where, name in named if name not in names]


def check_consistent(results: CampaignResults) -> CampaignResults:
    missing = missing_targets(results)
    if missing:
        more = f" (and {len(missing) - MAX_NAMED} more)" if len(missing) > MAX_NAMED else ""
        raise InconsistentResultsError(
            f"results.json of campaign {results.campaign_id!r} is inconsistent: {', '.join(missing[:MAX_NAMED])}{more} "
            "names a target its targets list does not hold: it was edited or damaged; restore the results.json the campaign wrote"
        )
    return results
