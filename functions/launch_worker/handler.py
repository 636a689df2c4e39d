"""Run Worker Task: hand the step to its phase's warm worker, or start one (ECS RunTask); the worker
answers the state machine's task token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.dependencies import Dependencies, client
from functions.observability import logger, tracer
from pgarena.aws.launch import EcsLauncher
from pgarena.aws.settings import LauncherEnv
from pgarena.aws.sites import ssm_site_reader
from pgarena.campaign.launch import launch
from pgarena.model.plan import ShardRef

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_ssm import SSMClient


def _ecs_in(region: str) -> ECSClient:
    return cast("ECSClient", client("ecs", region))


def _ssm_in(region: str) -> SSMClient:
    return cast("SSMClient", client("ssm", region))


# Created once per Lambda container: each site's parameter is read at its first launch only.
_site_in = ssm_site_reader(_ssm_in)


class LaunchEvent(ShardRef):
    """A shard by its indices: the step itself is in preflight's answer (the state never carries it)."""

    task_token: str


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=LaunchEvent)
def handler(event: LaunchEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(LauncherEnv)
    launcher = EcsLauncher(cast("ECSClient", client("ecs")), deps.env, ecs_in=_ecs_in, site_in=_site_in)
    step, worker, started = launch(event, event.task_token, deps.records, launcher, deps.worker_slots)
    logger.info("worker launched" if started else "step handed to the phase's worker", step_id=step.step_id, worker=worker)
    return {"task_arn": worker, "started": started}
