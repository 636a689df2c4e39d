"""`pgarena resume`: re-run only what failed in a campaign, and combine it with what succeeded.

The unit of a re-run is a step: every step kept in the folder whose raw output is what its worker
uploaded (`steps_to_rerun`'s `kept`) stays as it was measured, raw output included; a step missing,
failed or unverified runs again, after its workload's load on that target (a run needs its data set,
and a re-run campaign starts from a server the lost data may no longer be on), and before its
cleanup, as planned. A consolidation sweep (its phases run targets together) re-runs whole (target,
workload) pairs, as does a campaign whose kept steps are unknown. A re-run is a new measurement under
a new campaign id, never a silent retry: the combined results.json names every campaign it is made
of (`resumed_from`), and each re-run campaign keeps its own folder.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pgarena.analysis.compare import load_results
from pgarena.analysis.computed import compute
from pgarena.analysis.metrics import nominal_clients
from pgarena.model.errors import ErrorInfo
from pgarena.model.layout import RAW_DIR, RESULTS_FILE, inside
from pgarena.model.matrix import Campaign
from pgarena.model.metrics import PointLatency, TargetMetrics
from pgarena.model.plan import Plan, Step
from pgarena.model.results import CampaignResults, LoadResult, TargetResult, WorkloadResult


@dataclass(frozen=True)
class Rerun:
    """One campaign to run: targets that failed the same workloads, with just those workloads."""

    campaign: Campaign
    pairs: dict[str, list[str]]  # target -> workloads re-run on it
    steps: dict[str, list[str]] | None = None  # target -> the step ids re-run on it; None: whole pairs


def steps_to_rerun(plan: Plan, kept: Collection[str]) -> dict[str, list[str]]:
    """Target -> the step ids of the campaign's plan to run again, in the plan's order: every step not in
    `kept` (the ids of the steps that succeeded and whose raw output is verified); with a missing load or
    run, its workload's load first and its cleanup after (when planned), kept or not."""
    again: dict[str, list[str]] = {}
    for target in plan.targets:
        by_workload: dict[str, list[Step]] = {}
        for step in target.steps:
            by_workload.setdefault(step.workload, []).append(step)
        chosen: list[str] = []
        for steps in by_workload.values():
            missing = {s.step_id for s in steps if s.step_id not in kept}
            if any(s.step_id in missing and s.kind != "cleanup" for s in steps):
                missing |= {s.step_id for s in steps if s.kind != "run"}
            chosen += [s.step_id for s in steps if s.step_id in missing]
        if chosen:
            again[target.name] = chosen
    return again


def plan_step_reruns(again: dict[str, list[str]], plan: Plan, matrix: Campaign) -> list[Rerun]:
    """The one campaign that runs the steps `again` names (`steps_to_rerun`), none when there are none."""
    if not again:
        return []
    workloads = {s.step_id: s.workload for t in plan.targets for s in t.steps}
    pairs = {name: list(dict.fromkeys(workloads[i] for i in ids)) for name, ids in again.items()}
    campaign = matrix.model_copy(
        update={
            "targets": [t for t in matrix.targets if t.name in again],
            "workloads": [w for w in matrix.workloads if any(w.name in names for names in pairs.values())],
            "only_steps": [i for ids in again.values() for i in ids],
        }
    )
    return [Rerun(campaign=campaign, pairs=pairs, steps=again)]


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


def _entry_of(step_id: str) -> tuple[str, tuple[str, str, int | None] | tuple[str, int | None, int]]:
    """A plain comparison's step id (`<target>/<workload>/init|cleanup|c<clients>-r<repetition>`) as its
    target and the key of its entry in results.json (`_load_key`, `_run_key`)."""
    target, workload, last = step_id.rsplit("/", 2)
    if last in ("init", "cleanup"):
        return target, (workload, last, None)
    clients, repetition = last.removeprefix("c").split("-r")
    return target, (workload, int(clients), int(repetition))


def with_failed_steps(results: CampaignResults, failures: dict[str, ErrorInfo]) -> CampaignResults:
    """The results with each step in `failures` (step id -> why) failed with its error, the rest as they
    were: a step whose kept evidence turned out incomplete, until its re-run replaces it."""
    keyed: dict[str, dict[Any, ErrorInfo]] = {}
    for step_id, error in failures.items():
        name, key = _entry_of(step_id)
        keyed.setdefault(name, {})[key] = error

    def failed(item: Any, error: ErrorInfo | None) -> Any:
        return item.model_copy(update={"status": "failed", "error": error}) if error else item

    targets = []
    for target in results.targets:
        errors = keyed.get(target.name, {})
        if errors:
            target = target.model_copy(
                update={
                    "status": "failed",
                    "error": target.error or next(iter(errors.values())),
                    "loads": [failed(l, errors.get(_load_key(l))) for l in target.loads],
                    "workloads": [failed(w, errors.get(_run_key(w))) for w in target.workloads],
                }
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


def _load_key(load: LoadResult) -> tuple[str, str, int | None]:
    return (load.workload, load.kind, load.phase)


def _run_key(run: WorkloadResult) -> tuple[str, int | None, int]:
    # The step id names the clients the matrix asked for: a clamped run's requested_clients.
    return (run.name, run.requested_clients or run.clients, run.repetition)


def _combined_target(kept: TargetResult, rerun: TargetResult, workloads: list[str], by_step: bool) -> TargetResult:
    """The original's pairs that succeeded, the re-run's for the workloads that failed; `by_step`: the
    original's every step but those the re-run ran again, in the original's order."""
    if by_step:
        loads_again = {_load_key(l): l for l in rerun.loads}
        runs_again = {_run_key(w): w for w in rerun.workloads}
        loads = [loads_again.get(_load_key(l), l) for l in kept.loads]
        loads += [l for key, l in loads_again.items() if key not in {_load_key(k) for k in kept.loads}]
        runs = [runs_again.get(_run_key(w), w) for w in kept.workloads]
        runs += [w for key, w in runs_again.items() if key not in {_run_key(k) for k in kept.workloads}]
    else:
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
    replaced: dict[str, tuple[TargetResult, list[str], bool]] = {}
    for rerun, results in reruns:
        by_name = {t.name: t for t in results.targets}
        for name, workloads in rerun.pairs.items():
            if name in by_name:
                replaced[name] = (_moved(by_name[name], results.campaign_id, campaign_id), workloads, rerun.steps is not None)
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
    computed = replace(computed, metrics=_with_merged_latency(computed.metrics, original, reruns))
    return computed.results(
        campaign_id=campaign_id,
        campaign=original.campaign,
        started_at=original.started_at,
        finished_at=max([original.finished_at, *(r.finished_at for _, r in reruns)]),
        resumed_from=[*original.resumed_from, original.campaign_id, *(r.campaign_id for _, r in reruns)],
        run_order=original.run_order,  # the re-runs' own orders are in their results.json
    )


def _with_merged_latency(
    metrics: list[TargetMetrics], original: CampaignResults, reruns: list[tuple[Rerun, CampaignResults]]
) -> list[TargetMetrics]:
    """Each point's merged latency from the campaign its runs all come from (results.json keeps no histograms to
    merge again): the original's, or a re-run's for the pairs it ran whole; a point re-run step by step mixes
    runs of two campaigns and has none."""
    kept: dict[tuple[str, str, int | None], PointLatency] = {
        (m.target, p.workload, p.clients): p.merged_latency for m in original.metrics for p in m.points if p.merged_latency
    }
    for rerun, results in reruns:
        for name, workloads in rerun.pairs.items():
            if rerun.steps is not None:  # the points it ran a step of: the runs it did not are the original's
                ran = {(w.name, nominal_clients(w)) for t in results.targets if t.name == name for w in t.workloads}
                kept = {k: v for k, v in kept.items() if not (k[0] == name and (k[1], k[2]) in ran)}
                continue
            kept = {k: v for k, v in kept.items() if not (k[0] == name and k[1] in workloads)}
            kept |= {
                (m.target, p.workload, p.clients): p.merged_latency
                for m in results.metrics
                if m.target == name
                for p in m.points
                if p.workload in workloads and p.merged_latency
            }
    return [
        m.model_copy(
            update={
                "points": [p.model_copy(update={"merged_latency": kept.get((m.target, p.workload, p.clients))}) for p in m.points]
            }
        )
        for m in metrics
    ]


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
    step_of: dict[str, Path] = {}  # a step re-run on its own: its folder over the original's pair
    for rerun, folder in reruns:
        for name, workloads in rerun.pairs.items():
            preflight_of[name] = folder
            for workload in workloads:
                if rerun.steps is None:
                    rerun_of[(name, workload)] = folder
        for step_id in [i for ids in (rerun.steps or {}).values() for i in ids]:
            step_of[step_id] = folder
    for target in original.targets:
        names = {l.workload for l in target.loads} | {w.name for w in target.workloads}
        for workload in names | {w for (t, w) in rerun_of if t == target.name}:
            source = rerun_of.get((target.name, workload), original_dir)
            _copy_raw_of(source, out_dir, target.name, workload)
        _copy_raw_of(preflight_of.get(target.name, original_dir), out_dir, target.name, "preflight")
    for step_id, folder in step_of.items():
        stale = inside(out_dir, out_dir / RAW_DIR / step_id)
        if stale.is_dir():  # the original's unverified copy: not a file of it stays beside the re-run's
            shutil.rmtree(stale)
        _copy_raw_of(folder, out_dir, *step_id.split("/"))


def load_original(folder: Path) -> tuple[CampaignResults, dict[str, Any] | None]:
    """The campaign's results.json and the matrix it ran (kept beside it as matrix.json)."""
    results = load_results(inside(folder, folder / RESULTS_FILE))
    matrix_path = folder / "matrix.json"
    matrix: dict[str, Any] | None = json.loads(inside(folder, matrix_path).read_text()) if matrix_path.exists() else None
    return results, matrix
