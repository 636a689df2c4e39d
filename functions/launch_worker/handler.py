"""Run Worker Task: start one worker (ECS RunTask); the worker answers the state machine's task token."""

import boto3
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.launch import run_task_request
from pgarena.aws.settings import LauncherEnv
from pgarena.aws.store import ResultStore
from pgarena.model.errors import ErrorKind, failure


class LaunchEvent(BaseModel):
    """A shard by its indices: the step itself is in preflight's answer (the state never carries it)."""

    task_token: str
    campaign_id: str
    phase: int
    target: int  # the target's index in the phase
    step: int  # the step's index in the target's steps
    shard: int


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=LaunchEvent)
def handler(event: LaunchEvent, context: LambdaContext) -> dict[str, object]:
    env = LauncherEnv.from_env()
    groups = CampaignState(ResultStore(env.results_bucket, env.results_table)).preflight(
        event.campaign_id, event.phase, event.target
    )
    step = groups.steps[event.step].shards[event.shard]
    request = run_task_request(step, event.task_token, env)
    response = boto3.client("ecs").run_task(**request)
    if response.get("failures") or not response.get("tasks"):
        # A launch failure is transient more often than not: the state machine retries LaunchFailed.
        raise failure(ErrorKind.LAUNCH_FAILED, f"ECS could not start the worker: {response.get('failures')}")
    task_arn = response["tasks"][0]["taskArn"]
    logger.info("worker launched", step_id=step.step_id, task_arn=task_arn)
    return {"task_arn": task_arn}
