"""`pgarena resume`: re-run only what failed in a campaign, and combine it with what succeeded.

The unit of a re-run is a (target, workload) pair that failed: its load and all its runs run again
(a run needs its load, and the repetitions of a point are compared within one load). Pairs that
succeeded are kept as they were measured, raw output included. A re-run is a new measurement under
a new campaign id, never a silent retry: the combined results.json names every campaign it is made
of (`resumed_from`), and each re-run campaign keeps its own folder.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgarena.analysis.compare import load_results
from pgarena.analysis.computed import compute
from pgarena.model.errors import ErrorInfo
from pgarena.model.layout import RAW_DIR, RESULTS_FILE, inside
from pgarena.model.matrix import Campaign
from pgarena.model.results import CampaignResults, LoadResult, TargetResult, WorkloadResult


@dataclass(frozen=True)
class Rerun:
    """One campaign to run: targets that failed the same workloads, with just those workloads."""

    campaign: Campaign
    pairs: dict[str, list[str]]  # target -> workloads re-run on it


def failed_pairs(results: CampaignResults) -> dict[str, list[str]]:
    """Target name -> the workloads that failed on it (in the matrix's order), for every target that failed."""
    failed: dict[str, list[str]] = {}
    for target in results.targets:
        if target.status == "succeeded":
            continue
        names = [load.workload for load in target.loads if load.status == "failed"]
        names += [w.name for w in target.workloads if w.status == "failed"]
        if not names:  # failed with nothing listed under it: the whole target
            names = [load.workload for load in target.loads] + [w.name for w in target.workloads]
        failed[target.name] = list(dict.fromkeys(names))
    return failed


def with_failed_pairs(results: CampaignResults, failures: dict[tuple[str, str], ErrorInfo]) -> CampaignResults:
    """The results with each (target, workload) in `failures` failed with its error (its target too), so
    that `plan_reruns` re-runs it: a pair whose kept evidence turned out incomplete."""

    def failed(item: Any, pair: tuple[str, str]) -> Any:
        error = failures.get(pair)
        return item.model_copy(update={"status": "failed", "error": error}) if error else item

    targets = []
    for target in results.targets:
        loads = [failed(load, (target.name, load.workload)) for load in target.loads]
        runs = [failed(run, (target.name, run.name)) for run in target.workloads]
        errors = [
            failures[(target.name, w)]
            for w in [*(l.workload for l in target.loads), *(w.name for w in target.workloads)]
            if (target.name, w) in failures
        ]
        if errors:
            target = target.model_copy(
                update={"status": "failed", "error": target.error or errors[0], "loads": loads, "workloads": runs}
            )
        targets.append(target)
    return results.model_copy(update={"targets": targets})


def plan_reruns(results: CampaignResults, matrix: Campaign) -> list[Rerun]:
    """The campaigns that re-run the failed pairs: one per distinct set of failed workloads, so that no
    target runs a workload that had succeeded on it."""
    failed = failed_pairs(results)
    groups: dict[tuple[str, ...], list[str]] = {}
    order = [w.name for w in matrix.workloads]
    for target in matrix.targets:
        if target.name in failed:
            # Workloads the matrix no longer has (an edited matrix) cannot be re-run.
            names = tuple(w for w in order if w in failed[target.name]) or tuple(order)
            groups.setdefault(names, []).append(target.name)
    reruns = []
    for names, targets in groups.items():
        campaign = matrix.model_copy(
            update={
                "targets": [t for t in matrix.targets if t.name in targets],
                "workloads": [w for w in matrix.workloads if w.name in names],
            }
        )
        reruns.append(Rerun(campaign=campaign, pairs={t: list(names) for t in targets}))
    return reruns


def _repoint(value: Any, old: str, new: str) -> Any:
    """Raw pointers written as full keys (`<campaign_id>/raw/...`) follow the files into the new folder."""
    if isinstance(value, str) and value.startswith(f"{old}/"):
        return f"{new}/" + value[len(old) + 1 :]
    if isinstance(value, dict):
        return {k: _repoint(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_repoint(v, old, new) for v in value]
    return value


def _moved(target: TargetResult, old: str, new: str) -> TargetResult:
    return TargetResult.model_validate(_repoint(target.model_dump(mode="json"), old, new))


def _combined_target(kept: TargetResult, rerun: TargetResult, workloads: list[str]) -> TargetResult:
    """The original's pairs that succeeded, the re-run's for the workloads that failed."""
    loads = [l for l in kept.loads if l.workload not in workloads] + [l for l in rerun.loads if l.workload in workloads]
    runs = [w for w in kept.workloads if w.name not in workloads] + [w for w in rerun.workloads if w.name in workloads]
    results: list[LoadResult | WorkloadResult] = [*loads, *runs]
    errors = [x.error for x in results if x.status == "failed" and x.error is not None]
    error = rerun.error or (errors[0] if errors else None)
    return rerun.model_copy(
        update={
            "status": "failed" if error or any(x.status == "failed" for x in results) else "succeeded",
            "error": error,
            "server": rerun.server or kept.server,
            "loads": loads,
            "workloads": runs,
        }
    )


def combine(
    original: CampaignResults,
    reruns: list[tuple[Rerun, CampaignResults]],
    campaign_id: str,
    matrix: Campaign,
) -> CampaignResults:
    """One results.json: every target of the original, in its order, each pair from where it succeeded
    last. Raw pointers are rewritten to `campaign_id` (copy the files with `copy_raw`)."""
    replaced: dict[str, tuple[TargetResult, list[str]]] = {}
    for rerun, results in reruns:
        by_name = {t.name: t for t in results.targets}
        for name, workloads in rerun.pairs.items():
            if name in by_name:
                replaced[name] = (_moved(by_name[name], results.campaign_id, campaign_id), workloads)
    targets = []
    for target in original.targets:
        kept = _moved(target, original.campaign_id, campaign_id)
        if target.name in replaced:
            kept = _combined_target(kept, *replaced[target.name])
        targets.append(kept)
    # The kept runs' figures are computed again with the re-runs': the ranking and comparisons span both.
    computed = compute(
        [t.model_copy(update={"points": []}) for t in targets], campaign_id, matrix.ranking, matrix.max_repetitions
    )
    return computed.results(
        campaign_id=campaign_id,
        campaign=original.campaign,
        started_at=original.started_at,
        finished_at=max([original.finished_at, *(r.finished_at for _, r in reruns)]),
        resumed_from=[*original.resumed_from, original.campaign_id, *(r.campaign_id for _, r in reruns)],
        run_order=original.run_order,  # the re-runs' own orders are in their results.json
    )


def _copy_tree(source: Path, target: Path) -> None:
    # symlinks=True: a link in a (tampered) folder is copied as a link, its target never read
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)


def _copy_raw_of(source: Path, out_dir: Path, *parts: str) -> None:
    """raw/<target>/<part> from one folder to the other: names come from results.json, so both must stay inside."""
    _copy_tree(inside(source, source / RAW_DIR / Path(*parts)), inside(out_dir, out_dir / RAW_DIR / Path(*parts)))


def copy_raw(original_dir: Path, reruns: list[tuple[Rerun, Path]], out_dir: Path, original: CampaignResults) -> None:
    """Bring every kept pair's raw output into the combined folder: the original's for pairs that
    succeeded there, the re-run's for the pairs it ran (preflight records from the latest)."""
    rerun_of: dict[tuple[str, str], Path] = {}
    preflight_of: dict[str, Path] = {}
    for rerun, folder in reruns:
        for name, workloads in rerun.pairs.items():
            preflight_of[name] = folder
            for workload in workloads:
                rerun_of[(name, workload)] = folder
    for target in original.targets:
        names = {l.workload for l in target.loads} | {w.name for w in target.workloads}
        for workload in names | {w for (t, w) in rerun_of if t == target.name}:
            source = rerun_of.get((target.name, workload), original_dir)
            _copy_raw_of(source, out_dir, target.name, workload)
        _copy_raw_of(preflight_of.get(target.name, original_dir), out_dir, target.name, "preflight")


def load_original(folder: Path) -> tuple[CampaignResults, dict[str, Any] | None]:
    """The campaign's results.json and the matrix it ran (kept beside it as matrix.json)."""
    results = load_results(inside(folder, folder / RESULTS_FILE))
    matrix_path = folder / "matrix.json"
    matrix: dict[str, Any] | None = json.loads(inside(folder, matrix_path).read_text()) if matrix_path.exists() else None
    return results, matrix
