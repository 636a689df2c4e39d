"""Worker Task Stopped: ECS's task state change (EventBridge) for a stopped worker task fails the step it
left unanswered at once, with ECS's reason: the step of a worker that never ran, or the one a worker that
stopped mid-step held (pgarena.aws.task_stopped). One function per region with workers (home, each site):
the step is failed in the home region its worker reports to."""

from typing import Any

import boto3
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.observability import logger, tracer
from pgarena.aws.task_stopped import TaskStateChange, fail_step, stopped_worker


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=TaskStateChange)
def handler(event: TaskStateChange, context: LambdaContext) -> dict[str, Any]:
    worker = stopped_worker(event)
    if worker is None:
        return {"failed_step": False}
    failed = fail_step(boto3.client("stepfunctions", region_name=worker.home_region), worker)
    logger.info(
        "worker stopped with its step unanswered",
        kind=worker.error.kind,
        step_id=worker.step_id,
        task_arn=worker.task_arn,
        step_failed=failed,
    )
    return {"failed_step": failed, "step_id": worker.step_id}
