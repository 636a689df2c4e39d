"""Worker Task Stopped: the step a stopped worker leaves unanswered is failed at once, with the worker's
error, instead of at its heartbeat timeout (which worker counts is pgarena.aws.task_stopped's rule)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pgarena.campaign.ports import Executions
from pgarena.model.errors import error_name
from pgarena.model.stopped import StoppedWorker


@dataclass(frozen=True)
class StepFailure:
    step_id: str
    failed: bool  # False: its token was no longer waited for (the worker answered, or the state gave up)


def fail_step(worker: StoppedWorker, executions_in: Callable[[str | None], Executions]) -> StepFailure:
    """Fail the worker's step with its error, as every Catch reads a kind back (its class-name form), in
    the home region the worker reports to: its state machine issued the token (`executions_in(None)`:
    this region's own)."""
    executions = executions_in(worker.home_region)
    failed = executions.fail_task(worker.task_token, error_name(worker.error.kind), worker.error.cause())
    return StepFailure(worker.step_id, failed)
