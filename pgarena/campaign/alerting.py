"""A finished run's new change points, published (in AWS: an EventBridge event each, and an SNS message
when the stack has a topic). finalize calls it once the run is indexed.

The campaign's latest runs (alerts.WINDOW_RUNS) are read from the index and their results.json from the
bucket, the series detected with and without this run (pgarena.analysis.history.alerts), and each change
this run found first is published. A run whose results.json cannot be read is left out of the series (and
said so): it must not stop every later run's alerts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pgarena.analysis.history import alerts, detect
from pgarena.analysis.history.schema import ChangeAlert, IndexedRun
from pgarena.analysis.significance import MIN_RUNS
from pgarena.campaign.ports import Alerts, CampaignIndex, Documents
from pgarena.model import layout
from pgarena.model.results import CampaignResults


@dataclass(frozen=True)
class Alerted:
    """The alerts found (each published, unless a problem says it was not), and what kept one from being looked
    for or published (one line each)."""

    alerts: list[ChangeAlert] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _read(documents: Documents, run: IndexedRun) -> CampaignResults | str:
    """The run's results, or why they cannot be read."""
    try:
        return alerts.series_only(CampaignResults.model_validate(documents.get_json(run.results_key)))
    # Whatever the store raises (a missing object, a denied read) or a results.json that no longer
    # validates: the run is left out, never the alerts of every later run.
    except Exception as error:
        return f"run {run.campaign_id}: its results ({run.results_key}) could not be read: {error}"


def alert_new_changes(
    results: CampaignResults, reports: list[str], index: CampaignIndex, documents: Documents, publisher: Alerts
) -> Alerted:
    """Publish the change points `results`' run found first; nothing before 2 x MIN_RUNS runs (no change can
    be confirmed), or without the change-point library."""
    indexed = index.runs(results.campaign)
    if len(indexed) < 2 * MIN_RUNS:
        return Alerted()
    if not detect.available():
        return Alerted(problems=[detect.INSTALL_HINT])
    window = indexed[-alerts.WINDOW_RUNS :]
    first_run = len(indexed) - len(window) + 1
    runs: list[tuple[str, CampaignResults]] = []
    problems: list[str] = []
    for run in window:
        read = results if run.campaign_id == results.campaign_id else _read(documents, run)
        if isinstance(read, str):
            problems.append(read)
        else:
            runs.append((run.campaign_id, read))
    if results.campaign_id not in {r.campaign_id for _, r in runs}:  # not indexed yet: finalize records it first
        runs.append((results.campaign_id, results))
    number, found = alerts.first_found(runs, results.campaign_id, first_run)
    report_keys = [layout.report_key(results.campaign_id, name) for name in reports]
    published = [alerts.alert(results, number, series, change, report_keys) for series, change in found]
    if published:
        problems += publisher.publish(published)
    return Alerted(published, problems)
