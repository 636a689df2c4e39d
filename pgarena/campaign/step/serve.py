"""An assigned step (or a target's preflight on its site) served in a worker: run under its heartbeat and
hard stop, recorded, then its task token answered."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from aws_lambda_powertools import Logger

from pgarena.campaign.ports import TaskToken
from pgarena.campaign.preflight import preflight
from pgarena.campaign.step.run import run_step
from pgarena.campaign.step.slot import best_effort
from pgarena.campaign.step.stops import hard_stop, heartbeat, heartbeat_every_s
from pgarena.campaign.step.summary import record_failure
from pgarena.campaign.step.worker import StepWorker
from pgarena.model.errors import ErrorInfo, ErrorKind, WorkerStopped, error_info, error_name
from pgarena.model.plan import WORKER_HARD_STOP_GRACE_S, PreflightTask, Step
from pgarena.model.results import PreflightOrigin, WorkerFacts
from pgarena.model.warm import Assignment

logger = Logger(service="pgarena-worker")


def serve_step(
    assignment: Assignment, worker: StepWorker, step_of_worker: int, before_answer: Callable[[], object] = lambda: None
) -> ErrorInfo | None:
    """Run one assigned step under its heartbeat and hard stop, record it, call `before_answer` (a warm
    worker renews its slot's beat, so that the next step's offer finds it live), then answer the task
    token. The step's error, None when it succeeded."""
    step = assignment.step
    token = worker.token(assignment.task_token)
    with hard_stop(step.timeout_s + WORKER_HARD_STOP_GRACE_S, worker.exit_now):
        beat_s = heartbeat_every_s(worker.heartbeat_s, step.heartbeat_timeout_s)
        with heartbeat(token, beat_s, worker.stop), tempfile.TemporaryDirectory(prefix="pgarena-") as tmp:
            error = _recorded_run(step, worker, Path(tmp), step_of_worker)
        if error is None or error.kind != ErrorKind.WORKER_STOPPED:
            best_effort(before_answer)
        if error is None:
            _answer(token, step.step_id, output=json.dumps({"step_id": step.step_id}))
        else:
            _answer(token, step.step_id, failed=(error.kind, error.cause()))
    return error


def _recorded_run(step: Step, worker: StepWorker, workdir: Path, step_of_worker: int) -> ErrorInfo | None:
    """The step run, its summary stored (a failure's too, when the run made none); its error, if any."""
    try:
        return run_step(step, worker, workdir, step_of_worker).error
    except (WorkerStopped, Exception) as failure:  # told to the state machine rather than leave it waiting
        error = error_info(failure)
        if error.kind == ErrorKind.WORKER_CRASHED:
            logger.exception("worker crashed", step_id=step.step_id)
    record_failure(step, worker.store, error, WorkerFacts(worker_id=worker.worker_id, step_of_worker=step_of_worker))
    return error


def serve_preflight(
    task: PreflightTask, task_token: str, worker: StepWorker, before_answer: Callable[[], object]
) -> ErrorInfo | None:
    """The target's preflight here, on its site (pgarena.campaign.preflight: the same use case as the home
    function's, leasing in the results table), under a heartbeat and hard stop as a step; the task token
    answered with preflight's answer, or with its failure named as the function's would be."""
    assert worker.records is not None and worker.leases is not None  # the wiring gives a worker both
    token = worker.token(task_token)
    origin = PreflightOrigin(site=task.site, runner="worker", worker_id=worker.worker_id)
    error, answer = None, None
    with hard_stop(task.timeout_s + WORKER_HARD_STOP_GRACE_S, worker.exit_now):
        with heartbeat(token, heartbeat_every_s(worker.heartbeat_s, task.heartbeat_timeout_s), worker.stop):
            try:
                ref, server = preflight(task.ref, worker.store, worker.records, worker.leases, origin)
                answer = ref.model_dump_json()
                logger.info("preflight passed", target=task.target, site=task.site, allowed=server.allowed)
            except (WorkerStopped, Exception) as failure:  # told to the state machine rather than leave it waiting
                error = error_info(failure)
                logger.warning("preflight failed", target=task.target, kind=error.kind, error=error.message)
        if error is None:
            best_effort(before_answer)
        if answer is not None:
            _answer(token, task.target, output=answer)
        else:
            assert error is not None
            _answer(token, task.target, failed=(error_name(error.kind), error.cause()))
    return error


def _answer(token: TaskToken, what: str, output: str | None = None, failed: tuple[str, str] | None = None) -> None:
    """Succeed with output, or fail with (error, cause); `what` (a step, a target) names it in the log."""
    try:
        if failed is None:
            assert output is not None
            token.succeed(output)
        else:
            token.fail(*failed)
    except Exception as unsent:  # the execution was stopped or timed out: the summary is what counts
        logger.warning("state machine not told", about=what, error=str(unsent))
