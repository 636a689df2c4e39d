"""The index of finished campaigns under a results root (the `--out` folder campaigns are written to):
each subfolder holding a results.json is one run. Pure, but for `read_runs`, which reads the folders."""

from __future__ import annotations

import json
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


def read_runs(root: Path) -> Found:
    """Every `<root>/<folder>/results.json`, oldest first; a folder that is not a results folder is skipped,
    one whose results.json does not read is listed with why (the rest still count)."""
    runs: list[tuple[str, CampaignResults]] = []
    unreadable: list[str] = []
    workloads: dict[str, dict[str, str]] = {}
    for file in sorted(root.glob("*/results.json")):
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


def runs_of(found: Found, campaign: str) -> list[tuple[RunEntry, CampaignResults]]:
    """The campaign's runs, numbered from 1 in the order they started."""
    mine = [(folder, r) for folder, r in found.runs if r.campaign == campaign]
    return [(run_entry(i, folder, r), r) for i, (folder, r) in enumerate(mine, start=1)]


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
