"""Reports built from results.json: CSV tables, a Markdown summary and a self-contained HTML report.

`write_reports` hands each file to a `write(name, data, content_type)` callback, so the same code
writes to S3 in the aggregate Lambda and to a folder from the CLI.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pgarena.model.layout import RESULTS_FILE
from pgarena.model.results import CampaignResults
from pgarena.report.consistency import InconsistentResultsError, check_consistent
from pgarena.report.render import render_html, render_markdown
from pgarena.report.tables import TABLES, to_csv
from pgarena.report.view import Report, build_report

JSON = "application/json"
CSV = "text/csv; charset=utf-8"
CONTENT_TYPES = {
    "report.html": "text/html; charset=utf-8",
    "summary.md": "text/markdown; charset=utf-8",
    **{name: CSV for name in TABLES},
}
REPORT_FILES = tuple(CONTENT_TYPES)

Writer = Callable[[str, bytes, str], object]  # what it returns is ignored
log = logging.getLogger(__name__)


def build_reports(results: CampaignResults) -> dict[str, bytes]:
    """Every report file's name (relative to the campaign folder) and content."""
    report = build_report(check_consistent(results))
    files = {name: to_csv(table(report)) for name, table in TABLES.items()}
    files["summary.md"] = render_markdown(report).encode()
    files["report.html"] = render_html(report).encode()
    return {name: files[name] for name in REPORT_FILES}


def write_reports(results: CampaignResults, write: Writer) -> list[str]:
    """Build the reports and pass each one to `write(name, data, content_type)`; returns the names."""
    files = build_reports(results)
    for name, data in files.items():
        write(name, data, CONTENT_TYPES[name])
    return list(files)


def publish_results(results: CampaignResults, write: Writer) -> list[str]:
    """results.json (the contract) first, then the reports: a report that cannot be built never loses
    results.json (it can be rebuilt later with `pgarena report`). Returns the reports written."""
    write(RESULTS_FILE, results.model_dump_json(indent=2).encode(), JSON)
    try:
        return write_reports(results, write)
    except Exception:
        log.exception("reports not written for %s", results.campaign_id)
        return []


def folder_writer(folder: Path) -> Writer:
    folder.mkdir(parents=True, exist_ok=True)

    def write(name: str, data: bytes, content_type: str) -> None:
        (folder / name).write_bytes(data)

    return write


def write_to_folder(results: CampaignResults, folder: Path) -> list[Path]:
    """The reports only (results.json is already there): what `pgarena report` rebuilds."""
    return [folder / name for name in write_reports(results, folder_writer(folder))]


__all__ = [
    "REPORT_FILES",
    "RESULTS_FILE",
    "InconsistentResultsError",
    "Report",
    "build_report",
    "build_reports",
    "check_consistent",
    "folder_writer",
    "publish_results",
    "write_reports",
    "write_to_folder",
]
