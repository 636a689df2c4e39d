"""Resume a local campaign: re-run its missing, failed or unverified steps, combine them with the kept ones."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgarena.analysis.evidence import incomplete
from pgarena.analysis.rerun import (
    Rerun,
    combine,
    copy_raw,
    load_original,
    plan_reruns,
    plan_step_reruns,
    steps_to_rerun,
    with_failed_pairs,
    with_failed_steps,
)
from pgarena.local.endpoints import REGION
from pgarena.local.progress import evidence_failure, kept_steps, salvage, verified_steps
from pgarena.local.runtime import MATRIX_FILE, LocalRuntime
from pgarena.model.errors import ErrorInfo
from pgarena.model.layout import RESULTS_FILE, inside
from pgarena.model.matrix import Campaign, Endpoint
from pgarena.model.results import CampaignResults
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.remote.execution import new_campaign_id
from pgarena.remote.follow import Event
from pgarena.report import folder_writer, publish_results

# A shard's id is its step's with `/s<index>` (pgarena.planning.shards).
SHARD_SUFFIX = re.compile(r"/s\d+$")


class NothingToResume(Exception):
    """Every target of the campaign succeeded."""


@dataclass
class Resumed:
    campaign_id: str
    results_dir: Path
    results: CampaignResults
    reruns: list[str]  # the re-run campaigns' ids, each with its own folder
    wall_s: float
    cancelled: bool = False


def load_folder(folder: Path) -> tuple[CampaignResults, dict[str, Any] | None]:
    """The campaign's results and matrix; a folder the campaign never finished writing (a crash, a
    full disk, a second Ctrl-C) has its results rebuilt from the steps kept there as they finished."""
    if (folder / RESULTS_FILE).exists():
        return load_original(folder)
    matrix_path = folder / MATRIX_FILE
    if not matrix_path.exists():
        raise FileNotFoundError(f"{folder}: neither results.json nor {MATRIX_FILE} there: not a local campaign's folder")
    matrix = json.loads(inside(folder, matrix_path).read_text())
    return salvage(folder, matrix), matrix


def incomplete_evidence(folder: Path) -> dict[str, ErrorInfo]:
    """Step id -> why, for each step whose kept raw output is not what its worker uploaded (missing,
    truncated, another checksum): such a step counts as not run."""
    failures: dict[str, ErrorInfo] = {}
    for summary in kept_steps(folder):
        why = incomplete(folder, summary)
        if why is not None:
            failures[summary.step_id] = evidence_failure(summary, why)
    return failures


def kept_step_ids(folder: Path) -> set[str]:
    """The ids of the steps kept in the folder that succeeded and whose raw output is what their worker
    uploaded: `pgarena resume` keeps them as measured. A sharded step (`<step>/s<i>` each shard) is kept
    when every shard kept there is."""
    kept: dict[str, bool] = {}
    for summary in verified_steps(folder):
        step_id = SHARD_SUFFIX.sub("", summary.step_id)
        kept[step_id] = kept.get(step_id, True) and summary.status == "succeeded"
    return {step_id for step_id, ok in kept.items() if ok}


def plan_resume(original: CampaignResults, matrix: Campaign, folder: Path) -> list[Rerun]:
    """The campaign that re-runs what the folder does not hold verified: step by step, or for a
    consolidation sweep (its targets run together) every failed (target, workload) pair."""
    if matrix.scenario is not None:
        return plan_reruns(original, matrix)
    # Only the step ids matter here: an embedded target is planned at a placeholder endpoint.
    placeholder = Endpoint(host="embedded", user="postgres")
    planned = matrix.model_copy(
        update={
            "targets": [
                t if t.endpoint else t.model_copy(update={"embedded": None, "endpoint": placeholder}) for t in matrix.targets
            ]
        }
    )
    plan = plan_campaign(planned, original.campaign_id)
    return plan_step_reruns(steps_to_rerun(plan, kept_step_ids(folder)), plan, matrix)


def _with_failures(original: CampaignResults, failures: dict[str, ErrorInfo], matrix: Campaign) -> CampaignResults:
    """The original with each step of unverified evidence failed: the step alone, or for a sweep (which
    re-runs whole pairs) its (target, workload) pair."""
    if matrix.scenario is None:
        return with_failed_steps(original, failures)
    return with_failed_pairs(original, {(i.split("/")[-3], i.split("/")[-2]): e for i, e in failures.items()})


def named_sites(campaign: Campaign) -> tuple[str, ...]:
    """The external sites a campaign's targets are placed on, each once, in the targets' order."""
    sites = [target.placement.site for target in campaign.targets if target.placement and target.placement.site]
    return tuple(dict.fromkeys(sites))


def named_regions(campaign: Campaign, home_region: str = REGION) -> tuple[str, ...]:
    """The regions other than home a campaign's targets are placed in, each once, in the targets' order."""
    regions = [target.placement.region for target in campaign.targets if target.placement and target.placement.region]
    return tuple(dict.fromkeys(region for region in regions if region != home_region))


def resume_local(
    folder: Path,
    out_dir: Path | None = None,
    matrix: Campaign | None = None,
    on_event: Callable[[Event], None] = lambda event: None,
    servers_root: Path | None = None,
) -> Resumed:
    """Re-run what failed in the campaign at `folder`; the combined results land in out_dir/<new id>/.

    `matrix` replaces the one kept beside the results (a fixed password_env, a corrected host)."""
    t0 = time.monotonic()
    original, kept_matrix = load_folder(folder)
    if matrix is None:
        if kept_matrix is None:
            raise FileNotFoundError(f"{folder / MATRIX_FILE}: no matrix kept beside the results; pass the matrix")
        matrix = parse_campaign(kept_matrix)
    failures = incomplete_evidence(folder)
    for step_id, failure in failures.items():
        on_event(Event(time.monotonic() - t0, "state", f"Evidence Incomplete {step_id}: {failure.message}"))
    original = _with_failures(original, failures, matrix)
    reruns = plan_resume(original, matrix, folder)
    if not reruns and not (folder / RESULTS_FILE).exists():  # every step was kept: complete the folder itself
        publish_results(original, folder_writer(folder))
        return Resumed(original.campaign_id, folder, original, [], time.monotonic() - t0)
    if not reruns:
        raise NothingToResume(f"every target of {original.campaign_id} succeeded: nothing to re-run")
    out_dir = out_dir or folder.parent
    done: list[tuple[Rerun, CampaignResults, Path]] = []
    cancelled = False
    # The external sites its targets name: the first run served them, or it would have been refused.
    with LocalRuntime(out_dir, servers_root, external_sites=named_sites(matrix), site_regions=named_regions(matrix)) as runtime:
        for rerun in reruns:
            run = runtime.run(rerun.campaign, on_event)
            cancelled = run.results is not None and run.results.status == "cancelled"
            if run.results is not None:
                done.append((rerun, run.results, run.results_dir))
            if cancelled:
                break
    campaign_id = new_campaign_id(matrix.campaign)
    combined = combine(original, [(r, results) for r, results, _ in done], campaign_id, matrix)
    if cancelled:
        combined = combined.model_copy(update={"status": "cancelled"})
    results_dir = out_dir / campaign_id
    results_dir.mkdir(parents=True, exist_ok=True)
    copy_raw(folder, [(r, d) for r, _, d in done], results_dir, original)
    (results_dir / MATRIX_FILE).write_text(matrix.model_dump_json(exclude_none=True, indent=2))
    publish_results(combined, folder_writer(results_dir))
    return Resumed(
        campaign_id, results_dir, combined, [results.campaign_id for _, results, _ in done], time.monotonic() - t0, cancelled
    )
