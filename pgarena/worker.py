"""The worker: runs one step's benchmark tool next to the target and reports to the state machine.

The Fargate container's entrypoint and the local runtime's worker processes both run `main()`.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import boto3
from aws_lambda_powertools import Logger

from pgarena.barrier import wait_at_barrier
from pgarena.credentials import resolve_password
from pgarena.latency import pgbench_log_series
from pgarena.errors import ErrorInfo, PgarenaError
from pgarena.monitor import ConnectionReport, Monitor
from pgarena.plan import WORKER_HARD_STOP_GRACE_S, Step
from pgarena.results import Barrier, StepSummary
from pgarena.settings import WorkerEnv
from pgarena.store import ResultStore
from pgarena.tools import KILLED, TOOLS, Measured

logger = Logger(service="pgarena-worker")

# The exit code of a worker ended by its hard stop (timeout(1)'s).
HARD_STOP_EXIT_CODE = 124

# Raw output is uploaded this often while the tool runs, so a killed worker leaves what it had.
UPLOAD_EVERY_S = 15.0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def tool_version(binary: str) -> str | None:
    try:
        return subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout.strip() or None
    except OSError:
        return None


def run_tool(argv: list[str], env: dict[str, str], raw_path: Path, timeout_s: float, on_chunk=None) -> int:
    """Run the tool with stdout and stderr merged into raw_path, echoing lines as they come."""
    last_upload = time.monotonic()
    deadline = time.monotonic() + timeout_s
    with raw_path.open("w") as raw, subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, bufsize=1
    ) as proc:
        killer = threading.Timer(timeout_s, proc.kill)
        killer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                raw.write(line)
                raw.flush()
                print(line, end="", flush=True)
                if on_chunk and time.monotonic() - last_upload > UPLOAD_EVERY_S:
                    on_chunk()
                    last_upload = time.monotonic()
            code = proc.wait()
        finally:
            killer.cancel()
    if time.monotonic() > deadline:
        return KILLED
    return code


def summarize(
    step: Step,
    measured: Measured,
    exit_code: int | None,
    started_at: str,
    finished_at: str,
    wall_s: float,
    raw: list[str],
    version: str | None,
    connections: ConnectionReport | None = None,
) -> StepSummary:
    """What the step measured: every figure is one the tool printed or logged in the raw output."""
    error = measured.error
    if error is not None and raw:
        error = error.model_copy(update={"raw": raw[0]})
    return StepSummary(
        campaign_id=step.campaign_id,
        step_id=step.step_id,
        target=step.target,
        workload=step.workload,
        kind=step.kind,
        tool=step.tool,
        repetition=step.repetition,
        clients=step.clients,
        requested_clients=step.requested_clients,
        status="failed" if error else "succeeded",
        started_at=started_at,
        finished_at=finished_at,
        wall_s=round(wall_s, 3),
        exit_code=exit_code,
        tool_version=version,
        tps=measured.tps,
        tps_including_connections=measured.tps_including_connections,
        latency_ms=measured.latency,
        transactions=measured.transactions,
        failed_transactions=measured.failed_transactions,
        progress=measured.progress,
        load_s=measured.load_s,
        load_phases_s=measured.load_phases_s,
        latency_histogram=measured.histogram,
        series=measured.series,
        barrier=measured.barrier,
        extra=measured.extra,
        connections=connections,
        raw=raw,
        error=error,
    )


def _gzip(path: Path) -> Path:
    target = path.parent / "upload" / (path.name + ".gz")
    target.parent.mkdir(exist_ok=True)
    with path.open("rb") as source, gzip.open(target, "wb") as out:
        shutil.copyfileobj(source, out)
    return target


def run_step(step: Step, store: ResultStore, workdir: Path) -> StepSummary:
    tool = TOOLS[step.tool]
    argv, tool_env = tool.command(step, resolve_password(step.endpoint), workdir)
    env = {**os.environ, **tool_env}
    raw_path = workdir / f"{step.tool}.log"
    raw_key = f"{step.raw_prefix}/{step.tool}.log"
    logger.info("step starting", step_id=step.step_id, argv=argv)  # argv holds no secret: the environment does
    barrier = _barrier(step, store)
    started_at, t0 = _now(), time.monotonic()
    with _monitor(step, workdir) as monitor:
        exit_code = run_tool(argv, env, raw_path, step.timeout_s, on_chunk=lambda: store.put_file(raw_key, raw_path))
    wall_s, finished_at = time.monotonic() - t0, _now()
    raw = [store.put_file(raw_key, raw_path)]  # upload before parsing: the raw output is the evidence
    for artifact in tool.artifacts(workdir):
        raw.append(store.put_file(f"{step.raw_prefix}/{artifact.name}.gz", _gzip(artifact), "application/gzip"))
    connections = None
    if monitor is not None:
        series_key = store.put_file(f"{step.raw_prefix}/monitor.jsonl", monitor.series_path, "application/x-ndjson")
        connections = monitor.report().model_copy(update={"raw": series_key})
        raw.append(series_key)
    measured = tool.measure(step, raw_path.read_text(errors="replace"), exit_code, workdir)
    series = pgbench_log_series(tool.artifacts(workdir)) if step.shards > 1 else None
    if series is not None:
        series_path = workdir / "upload" / "series.json"
        series_path.parent.mkdir(exist_ok=True)
        series_path.write_text(series.model_dump_json())
        measured.series = store.put_file(f"{step.raw_prefix}/series.json", series_path, "application/json")
        raw.append(measured.series)
    measured.barrier = barrier
    summary = summarize(
        step, measured, exit_code, started_at, finished_at, wall_s, raw, tool_version(argv[0]), connections
    )
    store.put_json(f"{step.raw_prefix}/summary.json", summary.model_dump(mode="json"))
    store.put_summary(summary)
    logger.info("step finished", step_id=step.step_id, status=summary.status, tps=summary.tps, wall_s=summary.wall_s)
    return summary


def _barrier(step: Step, store: ResultStore) -> Barrier | None:
    """Shards of one step start their measured run together."""
    if step.shards <= 1:
        return None
    start_at, complete = wait_at_barrier(store.dynamodb, store.table, step.campaign_id, step.group_id, step.shard, step.shards)
    return Barrier(start_epoch=start_at, all_arrived=complete, released_epoch=time.time())


@contextmanager
def _monitor(step: Step, workdir: Path) -> Iterator[Monitor | None]:
    """Runs are watched by the live monitor; loads are not (one connection, nothing to watch)."""
    if step.kind != "run":
        yield None
        return
    with Monitor(step.endpoint, step.application_name, step.monitor_interval_s, workdir / "monitor.jsonl") as monitor:
        yield monitor


@contextmanager
def heartbeat(sfn, task_token: str, every_s: float) -> Iterator[None]:
    """Tell Step Functions the worker is alive; a worker that dies stops beating and is detected."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every_s):
            try:
                sfn.send_task_heartbeat(taskToken=task_token)
            except Exception as error:  # a missed beat is not fatal; the next one may pass
                logger.warning("heartbeat failed", error=str(error))

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def _exit_now() -> None:
    sys.stdout.flush()
    os._exit(HARD_STOP_EXIT_CODE)


@contextmanager
def hard_stop(after_s: float, on_expiry: Callable[[], None] = _exit_now) -> Iterator[None]:
    """End the process `after_s` from now, whatever it is doing (a hung upload, a wedged monitor): the
    container's only process exits, so the Fargate task stops and stops billing."""

    def expire() -> None:
        logger.error("hard stop: the worker outlived its step's timeout", after_s=after_s)
        on_expiry()

    timer = threading.Timer(after_s, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _cause(error: ErrorInfo) -> str:
    return json.dumps({"errorType": error.kind, "errorMessage": error.message[:8000], "raw": error.raw})


def _record_failure(step: Step, store: ResultStore, error: ErrorInfo) -> None:
    """A failure before the tool produced a summary is still written down, with its kind and message:
    the summary, not the task token's cause, is what results.json is built from (moto also drops the
    cause of SendTaskFailure: moto/stepfunctions/responses.py passes only `error`)."""
    now = _now()
    try:
        store.put_summary(summarize(step, Measured(error=error), None, now, now, 0.0, [], None))
    except Exception:  # best effort: the state machine still gets the failure
        logger.exception("could not record the failure", step_id=step.step_id)


def main() -> int:
    env = WorkerEnv.from_env()
    step = Step.model_validate_json(env.step)
    with hard_stop(step.timeout_s + WORKER_HARD_STOP_GRACE_S):
        sfn = boto3.client("stepfunctions")
        store = ResultStore(env.results_bucket, env.results_table)
        with heartbeat(sfn, env.task_token, env.heartbeat_s), tempfile.TemporaryDirectory(prefix="pgarena-") as tmp:
            summary = None
            try:
                summary = run_step(step, store, Path(tmp))
                error = summary.error
            except PgarenaError as failure:
                error = failure.info()
            except Exception as crash:  # report any crash to the state machine rather than leave it waiting
                logger.exception("worker crashed", step_id=step.step_id)
                error = ErrorInfo(kind="worker_crashed", message=f"{type(crash).__name__}: {crash}")
            if summary is None:
                _record_failure(step, store, error)
        if error is None:
            sfn.send_task_success(taskToken=env.task_token, output=json.dumps({"step_id": step.step_id}))
            return 0
        sfn.send_task_failure(taskToken=env.task_token, error=error.kind, cause=_cause(error))
        return 1


if __name__ == "__main__":
    sys.exit(main())
