"""Run Worker Task: start one worker (ECS RunTask); the worker answers the state machine's task token."""

import boto3
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.aws.launch import run_task_request
from pgarena.aws.settings import LauncherEnv
from pgarena.model.errors import ErrorKind, failure
from pgarena.model.plan import Step


class LaunchEvent(BaseModel):
    task_token: str
    step: Step


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=LaunchEvent)
def handler(event: LaunchEvent, context: LambdaContext) -> dict:
    request = run_task_request(event.step, event.task_token, LauncherEnv.from_env())
    response = boto3.client("ecs").run_task(**request)
    if response.get("failures") or not response.get("tasks"):
        # A launch failure is transient more often than not: the state machine retries LaunchFailed.
        raise failure(ErrorKind.LAUNCH_FAILED, f"ECS could not start the worker: {response.get('failures')}")
    task_arn = response["tasks"][0]["taskArn"]
    logger.info("worker launched", step_id=event.step.step_id, task_arn=task_arn)
    return {"task_arn": task_arn}
