"""The index of finished campaigns under a results root (the `--out` folder campaigns are written to):
each subfolder holding a results.json is one run. Pure, but for `read_runs`, which reads the folders."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from pgarena.analysis.compare import ResultsError, load_results
from pgarena.analysis.headline import headline
from pgarena.analysis.history.schema import CampaignEntry, IndexedRun, RunEntry
from pgarena.model.matrix_json import MAX_RESULTS_BYTES, read_text
from pgarena.model.results import CampaignResults


@dataclass(frozen=True)
class Found:
    """The runs read under a root, oldest first, and the folders that could not be read."""

    runs: list[tuple[str, CampaignResults]]
    unreadable: list[str] = field(default_factory=list)
    # Each folder's workloads as its matrix.json gave them (local runs keep the matrix): name -> settings.
    workloads: dict[str, dict[str, str]] = field(default_factory=dict)


def _flat(value: object, path: str = "") -> dict[str, object]:
    """A workload's settings as dotted paths (run.duration_s), client counts left out: adding a client
    count to the matrix does not change how the others are measured."""
    if not isinstance(value, dict):
        return {path: value}
    flat: dict[str, object] = {}
    for key, inner in value.items():
        if key != "clients":
            flat |= _flat(inner, f"{path}.{key}" if path else str(key))
    return flat


def matrix_workloads(text: str) -> dict[str, str]:
    """Each workload's settings but its client counts, as canonical JSON: what a point's runs must share."""
    try:
        matrix = json.loads(text)
        return {str(w["name"]): json.dumps(_flat(w), sort_keys=True) for w in matrix.get("workloads", [])}
    except (ValueError, TypeError, KeyError, AttributeError):  # not a matrix pgarena wrote: nothing to compare
        return {}


# results.json names its campaign among its first keys (CampaignResults' order): a peek at its head is
# enough to skip another campaign's, and a root may hold hundreds of folders of 1 MB each.
_HEAD_BYTES = 4096
_CAMPAIGN_KEY = re.compile(r'"campaign"\s*:\s*"([^"\\]*)"')


def _named(file: Path, campaign: str) -> bool:
    """Whether the results.json is `campaign`'s, read without validating it (a peek at its head, else the
    whole file); unreadable: yes (so that load_results says why)."""
    try:
        with file.open("rb") as head:
            found = _CAMPAIGN_KEY.search(head.read(_HEAD_BYTES).decode("utf-8", errors="replace"))
        if found is not None:
            return found[1] == campaign
        return bool(json.loads(read_text(file, MAX_RESULTS_BYTES)).get("campaign") == campaign)
    except (OSError, ValueError, AttributeError):
        return True


def read_runs(root: Path, campaign: str | None = None) -> Found:
    """Every `<root>/<folder>/results.json` (of `campaign` only, when given), oldest first; a folder that is not
    a results folder is skipped, one whose results.json does not read is listed with why (the rest still count)."""
    runs: list[tuple[str, CampaignResults]] = []
    unreadable: list[str] = []
    workloads: dict[str, dict[str, str]] = {}
    for file in sorted(root.glob("*/results.json")):
        if campaign is not None and not _named(file, campaign):
            continue
        try:
            runs.append((file.parent.name, load_results(file)))
        except (ResultsError, OSError) as error:
            unreadable.append(str(error) if isinstance(error, ResultsError) else f"{file}: {error}")
            continue
        matrix = file.parent / "matrix.json"
        if matrix.is_file():
            try:
                workloads[file.parent.name] = matrix_workloads(read_text(matrix, MAX_RESULTS_BYTES))
            except (OSError, UnicodeDecodeError) as error:
                unreadable.append(f"{matrix}: {error} (its workloads' settings are not compared)")
    return Found(sorted(runs, key=lambda run: (run[1].started_at, run[1].campaign_id)), unreadable, workloads)


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def run_entry(number: int, folder: str, results: CampaignResults) -> RunEntry:
    cost = results.cost
    return RunEntry(
        run=number,
        campaign_id=results.campaign_id,
        folder=folder,
        started_at=results.started_at,
        finished_at=results.finished_at,
        status=results.status,
        targets=[t.name for t in results.targets],
        failed_targets=[t.name for t in results.targets if t.status == "failed"],
        headline=headline(results.ranking, results.comparisons, results.footing),
        cost_usd=None if cost is None else cost.actual_usd if cost.actual_usd is not None else cost.estimated_usd,
        priced_as_aws=bool(results.targets) and all(t.site == "local" for t in results.targets),
    )


def indexed_run(results: CampaignResults, results_key: str) -> IndexedRun:
    """The index item finalize writes for a run (in AWS): what `history` lists, and where results.json is."""
    entry = run_entry(0, "", results)
    return IndexedRun(
        campaign=results.campaign,
        results_key=results_key,
        **entry.model_dump(
            include={"campaign_id", "started_at", "finished_at", "status", "targets", "failed_targets", "headline", "cost_usd"}
        ),
    )


def runs_of(found: Found, campaign: str, first_run: int = 1) -> list[tuple[RunEntry, CampaignResults]]:
    """The campaign's runs, numbered from `first_run` (1: the first run found) in the order they started."""
    mine = [(folder, r) for folder, r in found.runs if r.campaign == campaign]
    return [(run_entry(i, folder, r), r) for i, (folder, r) in enumerate(mine, start=first_run)]


def campaigns(found: Found) -> list[CampaignEntry]:
    """Each campaign name under the root with its run count and latest run, by name."""
    entries: list[CampaignEntry] = []
    for name in sorted({r.campaign for _, r in found.runs}):
        mine = [r for _, r in found.runs if r.campaign == name]
        entries.append(
            CampaignEntry(
                campaign=name,
                runs=len(mine),
                first_started_at=mine[0].started_at,
                last_started_at=mine[-1].started_at,
                last_status=mine[-1].status,
                last_campaign_id=mine[-1].campaign_id,
            )
        )
    return entries


def short_headline(entry: RunEntry) -> str:
    """The verdict's first sentence, for a table."""
    return _first_sentence(entry.headline)


def cost_text(entry: RunEntry) -> str:
    """'$0.01', or '$0.01 if in AWS' for a local run (it charged nothing: the figure is what the same workers
    would have cost in AWS), '-' when not recorded: the CLI's runs table and the trend page's alike."""
    if entry.cost_usd is None:
        return "-"
    return f"${entry.cost_usd:,.2f}" + (" if in AWS" if entry.priced_as_aws else "")
