"""Which change points a campaign's run found first: what finalize alerts on in AWS. Pure.

A change point needs MIN_RUNS runs at its new level before it is confirmed (detect.py), so it is never
at the run that finds it: it is found by the MIN_RUNS-th run after it (or later, once the noise allows).
A change is therefore new at a run when the history through that run has it and the history through the
run before did not: the series is detected twice, with and without the run, and the changes compared.
PELT may move a change by a run as runs are added; two real changes of a series are at least MIN_RUNS
runs apart (a segment holds MIN_RUNS runs or more), so a change of the same direction within fewer runs
of one found before is that one, not a new one.

Both directions are alerted on, each saying which it is: a change for the better is news too (a
provider's upgrade), and an EventBridge rule or an SNS filter policy keeps only `direction: worse`
where that is all a team wants (docs/guide/09-history.md, Alerts).
"""

from __future__ import annotations

from pgarena.analysis.history import trends
from pgarena.analysis.history.index import Found
from pgarena.analysis.history.schema import Change, ChangeAlert, Series
from pgarena.analysis.metrics import stored_metrics
from pgarena.analysis.significance import MIN_RUNS
from pgarena.model import layout
from pgarena.model.results import CampaignResults

# How many of a campaign's latest runs finalize reads to look for a new change (two months of nightly
# runs): every run's results.json is read from the bucket, and a change far older is not news.
WINDOW_RUNS = 60

SeriesKey = tuple[str, str, int | None, str]


def _key(series: Series) -> SeriesKey:
    return (series.target, series.workload, series.clients, series.metric)


def series_only(results: CampaignResults) -> CampaignResults:
    """What history reads of a run and no more: its metrics (computed here when an older results.json stored
    none), each target's facts, and one run of each workload point (trends.point_facts reads the first), without
    its progress series, incidents or raw files. finalize holds up to WINDOW_RUNS runs at once."""
    targets = []
    for target in results.targets:
        seen: set[tuple[str, int | None]] = set()
        kept = []
        for run in target.workloads:
            point = (run.name, run.requested_clients or run.clients)
            if point not in seen:
                seen.add(point)
                kept.append(run.model_copy(update={"progress": [], "incidents": [], "raw": []}))
        targets.append(target.model_copy(update={"workloads": kept}))
    return results.model_copy(update={"metrics": stored_metrics(results), "targets": targets})


def new_changes(before: list[Series], now: list[Series], run: int) -> list[tuple[Series, Change]]:
    """The changes `now` (the series through `run`) has that `before` (through the run before) did not,
    in a series measured at `run` and in its latest comparable segment (a split restarts the series)."""
    earlier = {_key(s): s.changes for s in before}
    found: list[tuple[Series, Change]] = []
    for series in now:
        if not series.points or series.points[-1].run != run:
            continue
        segment_start = series.splits[-1].run if series.splits else series.points[0].run
        known = earlier.get(_key(series), [])
        for change in series.changes:
            if change.run < segment_start:
                continue
            if any(k.direction == change.direction and abs(k.run - change.run) < MIN_RUNS for k in known):
                continue
            found.append((series, change))
    return found


def first_found(
    runs: list[tuple[str, CampaignResults]], campaign_id: str, first_run: int = 1, threshold: float = trends.DEFAULT_THRESHOLD
) -> tuple[int, list[tuple[Series, Change]]]:
    """The number of the run `campaign_id` (one of `runs`: one campaign's, each with its folder or key) and the
    changes it found first. `first_run`: the number of the first of `runs` (older ones were not read).
    Nothing when change points cannot be found (detect.available())."""
    ordered = sorted(runs, key=lambda r: (r[1].started_at, r[1].campaign_id))
    ids = [r.campaign_id for _, r in ordered]
    if campaign_id not in ids:
        raise ValueError(f"run {campaign_id} is not among the runs given")
    position = ids.index(campaign_id)
    number = first_run + position
    through = ordered[: position + 1]
    if not through:
        return number, []
    campaign = through[-1][1].campaign
    now = trends.history(Found(through), campaign, "", threshold, first_run=first_run)
    before = trends.history(Found(through[:-1]), campaign, "", threshold, first_run=first_run) if position else None
    if now.detector is None:
        return number, []
    return number, new_changes(before.series if before is not None else [], now.series, number)


def alert(results: CampaignResults, run: int, series: Series, change: Change, report_keys: list[str]) -> ChangeAlert:
    """The event's detail for one new change found by `results`' run (number `run`), with its reports' keys."""
    since = next(p for p in series.points if p.run == change.run)
    return ChangeAlert(
        campaign=results.campaign,
        campaign_id=results.campaign_id,
        run=run,
        target=series.target,
        workload=series.workload,
        clients=series.clients,
        metric=series.metric,
        unit=series.unit,
        direction=change.direction,
        since_run=change.run,
        since_campaign_id=since.campaign_id,
        since_started_at=change.started_at,
        ratio=change.ratio,
        ci95_low=change.ci95_low,
        ci95_high=change.ci95_high,
        p=change.p,
        message=change.message,
        results_key=layout.results_key(results.campaign_id),
        report_keys=report_keys,
    )
