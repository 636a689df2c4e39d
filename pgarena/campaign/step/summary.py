"""A step's summary: what the tool measured, and a failure written down when no tool run produced one."""

from __future__ import annotations

from dataclasses import dataclass

from aws_lambda_powertools import Logger

from pgarena.campaign.ports import Store
from pgarena.model.errors import ErrorInfo, ErrorKind
from pgarena.model.monitor import ConnectionReport
from pgarena.model.plan import Step
from pgarena.model.results import StepSummary, WorkerFacts, now_iso
from pgarena.tools.runner import Measured

logger = Logger(service="pgarena-worker")


@dataclass(frozen=True)
class ToolExit:
    """How the step's tool run went, besides what it measured."""

    exit_code: int | None
    started_at: str
    finished_at: str
    wall_s: float
    version: str | None = None


def summarize(
    step: Step, measured: Measured, ran: ToolExit, raw: list[str], connections: ConnectionReport | None = None
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
        started_at=ran.started_at,
        finished_at=ran.finished_at,
        wall_s=round(ran.wall_s, 3),
        exit_code=ran.exit_code,
        tool_version=ran.version,
        tps=measured.tps,
        tps_including_connections=measured.tps_including_connections,
        latency_ms=measured.latency,
        transactions=measured.transactions,
        failed_transactions=measured.failed_transactions,
        progress=measured.progress,
        warmup_s=step.spec.warmup_s,
        load_s=measured.load_s,
        load_phases_s=measured.load_phases_s,
        latency_histogram=measured.histogram,
        series=measured.series,
        barrier=measured.barrier,
        tool_figures=measured.tool_figures,
        connections=connections,
        raw=raw,
        error=error,
    )


def with_lock_waits(error: ErrorInfo | None, connections: ConnectionReport | None) -> ErrorInfo | None:
    """A timed-out step says what its sessions were waiting on, when the monitor saw them wait on a lock."""
    if error is None or error.kind != ErrorKind.TIMEOUT or connections is None or not connections.lock_waits:
        return error
    waits = "; ".join(wait.describe() for wait in connections.lock_waits)
    return error.model_copy(update={"message": f"{error.message}; the monitor last saw {waits}"})


def record_failure(step: Step, store: Store, error: ErrorInfo, worker: WorkerFacts) -> None:
    """A failure before the tool produced a summary is still written down, with its kind and message and
    the worker that had it: the summary, not the task token's cause, is what results.json is built from
    (moto also drops the cause of SendTaskFailure: moto/stepfunctions/responses.py passes only `error`)."""
    now = now_iso()
    try:
        summary = summarize(step, Measured(error=error), ToolExit(None, now, now, 0.0), [error.raw] if error.raw else [])
        store.put_summary(summary.model_copy(update={"worker": worker}))
    except Exception:  # best effort: the state machine still gets the failure
        logger.exception("could not record the failure", step_id=step.step_id)
