"""The worker: runs one step's benchmark tool next to the target and reports to the state machine.

The Fargate container's entrypoint and the local runtime's worker processes both run `main()`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import boto3
from aws_lambda_powertools import Logger

from pgarena.credentials import resolve_password
from pgarena.errors import ErrorInfo, PgarenaError, classify
from pgarena.monitor import ConnectionReport, Monitor
from pgarena.parsers.pgbench import PgbenchReport, parse_pgbench
from pgarena.pgbench import init_args, libpq_env, pgbench_binary, run_args
from pgarena.plan import Step
from pgarena.results import Latency, ProgressSample, StepSummary
from pgarena.settings import WorkerEnv
from pgarena.store import ResultStore

logger = Logger(service="pgarena-worker")

# Raw output is uploaded this often while the tool runs, so a killed worker leaves what it had.
UPLOAD_EVERY_S = 15.0
# How many of the tool's last error lines go into an error message.
ERROR_LINES = 3


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
        return -9
    return code


def _failure(step: Step, report: PgbenchReport, exit_code: int | None, text: str) -> ErrorInfo | None:
    if exit_code == -9:
        return ErrorInfo(kind="timeout", message=f"pgbench ran past the step's {step.timeout_s} s timeout and was killed")
    if step.kind == "run" and (report.summary is None or report.summary.tps is None) and exit_code == 0:
        return ErrorInfo(kind="tool_failed", message="pgbench exited 0 but printed no tps")
    if exit_code == 0 and not report.aborted:
        return None
    lines = report.errors or [line for line in text.splitlines() if line.strip()]
    message = " | ".join(lines[-ERROR_LINES:]) or f"pgbench exited with code {exit_code}"
    return ErrorInfo(kind=classify(text) or "tool_failed", message=message)


def summarize(
    step: Step,
    report: PgbenchReport,
    exit_code: int | None,
    text: str,
    started_at: str,
    finished_at: str,
    wall_s: float,
    raw: list[str],
    version: str | None,
    connections: ConnectionReport | None = None,
) -> StepSummary:
    """What the step measured, from the parsed report only: every figure is one pgbench printed."""
    error = _failure(step, report, exit_code, text)
    if error is not None and raw:
        error = error.model_copy(update={"raw": raw[0]})
    s = report.summary
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
        tps=s.tps if s else None,
        tps_including_connections=s.tps_including_connections if s else None,
        latency_ms=Latency(avg=s.latency_avg_ms, stddev=s.latency_stddev_ms) if s else Latency(),
        transactions=s.transactions if s else None,
        failed_transactions=s.failed_transactions if s else None,
        progress=[ProgressSample(elapsed_s=p.elapsed_s, tps=p.tps, latency_avg_ms=p.latency_avg_ms) for p in report.progress],
        load_s=report.init.total_s if report.init else None,
        load_phases_s=report.init.phases_s if report.init else {},
        connections=connections,
        raw=raw,
        error=error,
    )


def run_step(step: Step, store: ResultStore, workdir: Path) -> StepSummary:
    binary = pgbench_binary()
    args = init_args(step.init) if step.kind == "init" else run_args(step.run)
    argv = [binary, *args]
    env = {**os.environ, **libpq_env(step.endpoint, resolve_password(step.endpoint), step.application_name)}
    raw_path = workdir / "pgbench.log"
    raw_key = f"{step.raw_prefix}/pgbench.log"
    logger.info("step starting", step_id=step.step_id, argv=argv)  # argv holds no secret: libpq env does
    started_at, t0 = _now(), time.monotonic()
    with _monitor(step, workdir) as monitor:
        exit_code = run_tool(argv, env, raw_path, step.timeout_s, on_chunk=lambda: store.put_file(raw_key, raw_path))
    wall_s, finished_at = time.monotonic() - t0, _now()
    raw = [store.put_file(raw_key, raw_path)]  # upload before parsing: the raw output is the evidence
    connections = None
    if monitor is not None:
        series_key = store.put_file(f"{step.raw_prefix}/monitor.jsonl", monitor.series_path, "application/x-ndjson")
        connections = monitor.report().model_copy(update={"raw": series_key})
        raw.append(series_key)
    text = raw_path.read_text(errors="replace")
    summary = summarize(
        step, parse_pgbench(text), exit_code, text, started_at, finished_at, wall_s, raw, tool_version(binary), connections
    )
    store.put_json(f"{step.raw_prefix}/summary.json", summary.model_dump(mode="json"))
    store.put_summary(summary)
    logger.info("step finished", step_id=step.step_id, status=summary.status, tps=summary.tps, wall_s=summary.wall_s)
    return summary


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


def _cause(error: ErrorInfo) -> str:
    return json.dumps({"errorType": error.kind, "errorMessage": error.message[:8000], "raw": error.raw})


def main() -> int:
    env = WorkerEnv.from_env()
    step = Step.model_validate_json(env.step)
    sfn = boto3.client("stepfunctions")
    store = ResultStore(env.results_bucket, env.results_table)
    with heartbeat(sfn, env.task_token, env.heartbeat_s), tempfile.TemporaryDirectory(prefix="pgarena-") as tmp:
        try:
            summary = run_step(step, store, Path(tmp))
            error = summary.error
        except PgarenaError as failure:
            error = failure.info()
        except Exception as crash:  # report any crash to the state machine rather than leave it waiting
            logger.exception("worker crashed", step_id=step.step_id)
            error = ErrorInfo(kind="worker_crashed", message=f"{type(crash).__name__}: {crash}")
    if error is None:
        sfn.send_task_success(taskToken=env.task_token, output=json.dumps({"step_id": step.step_id}))
        return 0
    sfn.send_task_failure(taskToken=env.task_token, error=error.kind, cause=_cause(error))
    return 1


if __name__ == "__main__":
    sys.exit(main())
