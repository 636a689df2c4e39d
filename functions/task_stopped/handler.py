"""Worker Task Stopped: ECS's task state change (EventBridge) for a stopped worker task fails the step it
left unanswered at once, with ECS's reason: the step of a worker that never ran, or the one a worker that
stopped mid-step held (pgarena.aws.task_stopped reads the event and the worker's slot,
pgarena.campaign.stopped_worker fails the step). One function per region with workers (home, each site),
with no settings: the step is failed in the home region its worker reports to."""

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import FromEnv
from pgarena.aws.task_stopped import TaskStateChange, stopped_worker
from pgarena.campaign.stopped_worker import fail_step


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=TaskStateChange)
def handler(event: TaskStateChange, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(FromEnv)
    worker = stopped_worker(event, deps.read_slot)
    if worker is None:
        return {"failed_step": False}
    failure = fail_step(worker, deps.executions)
    logger.info(
        "worker stopped with its step unanswered",
        kind=worker.error.kind,
        step_id=worker.step_id,
        task_arn=worker.task_arn,
        step_failed=failure.failed,
    )
    return {"failed_step": failure.failed, "step_id": failure.step_id}
