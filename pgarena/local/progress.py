"""Nothing finished is lost: a local campaign's results land in its folder as they arrive.

Each step's raw output and summary (raw/<step_id>/summary.json, written by the worker) are copied
into the results folder when the step ends, and the execution's input is kept beside matrix.json.
A crash, a full disk or a second Ctrl-C therefore leaves a folder that `pgarena resume` completes:
`salvage` rebuilds results.json from what the folder holds.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.cancel import stopped_outcomes
from pgarena.analysis.evidence import incomplete
from pgarena.campaign.leases import campaign_of
from pgarena.local.leases import FileLeases
from pgarena.model import layout
from pgarena.model.errors import DiskFull, ErrorInfo, ErrorKind
from pgarena.model.results import CampaignResults, StepSummary, TargetResult, now_iso
from pgarena.model.series import SeriesOnDemand, ShardSeries
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# The execution's input (the matrix with embedded servers' endpoints, the campaign id, the start),
# kept so a folder without results.json can still be aggregated.
EXECUTION_FILE = "execution.json"
SUMMARY_FILE = "summary.json"
INTERRUPTED_MESSAGE = "interrupted before this target's steps finished"


class Interrupted(Exception):
    """The campaign was interrupted while it was being cancelled (a second Ctrl-C)."""

    def __init__(self, folder: Path):
        super().__init__(str(folder))
        self.folder = folder


def _write_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def write_local(path: Path, data: bytes) -> None:
    """Every file the local runtime writes into a results folder goes through here: a full disk
    becomes a `disk_full` error naming the file (the caller says what was kept)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_bytes(path, data)
    except OSError as error:
        if error.errno == errno.ENOSPC:
            raise DiskFull(f"no space left on device writing {path}") from None
        raise


def download(s3: S3Client, bucket: str, prefix: str, out_dir: Path) -> int:
    """Copy every object under `prefix` to out_dir/<key>; returns how many."""
    count = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            write_local(out_dir / item["Key"], s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read())
            count += 1
    return count


def keep_step(s3: S3Client, bucket: str, summary: StepSummary, out_dir: Path) -> None:
    """A finished step's raw output and summary, into the campaign's folder now."""
    prefix = layout.step_raw_prefix(summary.campaign_id, summary.step_id)
    download(s3, bucket, prefix + "/", out_dir)
    path = out_dir / f"{prefix}/{SUMMARY_FILE}"
    if not path.exists():  # the worker writes one beside its raw output; a lost worker's comes from the table
        write_local(path, summary.model_dump_json(indent=2).encode())


def keep_execution(folder: Path, campaign_id: str, matrix: dict[str, Any], started_at: str) -> None:
    data = {"campaign_id": campaign_id, "started_at": started_at, "matrix": matrix}
    write_local(folder / EXECUTION_FILE, json.dumps(data, indent=2).encode())


def kept_steps(folder: Path) -> list[StepSummary]:
    paths = sorted((folder / layout.RAW_DIR).glob(f"**/{SUMMARY_FILE}"))
    return [StepSummary.model_validate_json(layout.inside(folder, p).read_text()) for p in paths]


def evidence_failure(summary: StepSummary, why: str) -> ErrorInfo:
    return ErrorInfo(
        kind=ErrorKind.EVIDENCE_INCOMPLETE,
        message=f"step {summary.step_id}'s kept raw output is incomplete: {why}; `pgarena resume` re-runs it",
    )


def verified_steps(folder: Path) -> list[StepSummary]:
    """The steps kept in the folder, each whose raw output is not what its worker uploaded (missing,
    truncated, another checksum) turned failed with `evidence_incomplete`: it counts as not run."""
    steps = []
    for summary in kept_steps(folder):
        why = incomplete(folder, summary)
        if why is not None:
            summary = summary.model_copy(update={"status": "failed", "error": evidence_failure(summary, why), "series": None})
        steps.append(summary)
    return steps


def disk_full(error: DiskFull, folder: Path) -> DiskFull:
    """The full-disk error with what the folder kept and how to complete it."""
    kept = len(kept_steps(folder)) if folder.exists() else 0
    return DiskFull(
        f"{error}; kept {kept} finished step(s) in {folder}: free some space, then `pgarena resume {folder}` "
        "re-runs what is missing"
    )


def salvage(folder: Path, matrix: dict[str, Any]) -> CampaignResults:
    """results.json rebuilt from a folder the campaign never finished writing: every step kept there
    as it finished, the rest failed (`cancelled`), so that resume re-runs exactly those."""
    campaign_id = folder.name
    now = now_iso()
    execution_path = folder / EXECUTION_FILE
    if not execution_path.exists():  # stopped before its execution started: every target is still to run
        campaign = parse_campaign(matrix)
        error = ErrorInfo(kind=ErrorKind.CANCELLED, message=INTERRUPTED_MESSAGE)
        targets = [TargetResult(name=t.name, provider=t.provider, status="failed", error=error) for t in campaign.targets]
        return CampaignResults(
            campaign_id=campaign_id, campaign=campaign.campaign, started_at=now, finished_at=now, targets=targets, ranking=[]
        ).model_copy(update={"status": "cancelled"})
    execution = json.loads(layout.inside(folder, execution_path).read_text())
    plan = plan_campaign(parse_campaign(execution["matrix"]), execution["campaign_id"])
    outcomes, summaries = stopped_outcomes(plan, [], verified_steps(folder))
    root = folder.parent
    # Each path is checked now (a tampered folder is refused before anything is aggregated), read when merged.
    series = SeriesOnDemand(
        {s.step_id: layout.inside(folder, root / s.series) for s in summaries if s.series},
        lambda path: ShardSeries.model_validate_json(path.read_text()),
    )
    raw_keys = [str(p.relative_to(root)) for p in folder.glob(f"{layout.RAW_DIR}/**/*") if p.is_file()]
    results = aggregate(plan, outcomes, summaries, execution["started_at"], now, None, series, raw_keys)
    interrupted = any(step.failure for outcome in outcomes for step in outcome.steps)
    return results.model_copy(update={"status": "cancelled" if interrupted else "completed"})


def release_leases(lease_dir: Path, campaign_id: str) -> None:
    """Give back whatever a campaign still holds in the shared local lease files (it ended without
    reaching Release Connection Lease: a crash, a full disk, a second Ctrl-C)."""
    if not lease_dir.is_dir():
        return
    leases = FileLeases(lease_dir)
    for path in lease_dir.glob("*.json"):
        key = path.stem
        record = leases.read(key)
        for holder in {h.holder for h in record.holders} | {w.holder for w in record.queue}:  # its place in a queue too
            if campaign_of(holder) == campaign_id:
                leases.release(key, holder)
