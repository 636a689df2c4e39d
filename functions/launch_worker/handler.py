"""Run Worker Task: hand the step to its phase's warm worker, or start one (ECS RunTask); Preflight On
Site: start the target's preflight as a worker on its site. The worker answers the state machine's task token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.dependencies import Dependencies, client
from functions.observability import logger, tracer
from pgarena.aws.launch import EcsLauncher
from pgarena.aws.settings import LauncherEnv
from pgarena.aws.sites import ssm_site_reader
from pgarena.campaign.launch import launch, launch_preflight
from pgarena.model.plan import ShardRef, TargetRef

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_ssm import SSMClient


def _ecs_in(region: str) -> ECSClient:
    return cast("ECSClient", client("ecs", region))


def _ssm_in(region: str) -> SSMClient:
    return cast("SSMClient", client("ssm", region))


# Created once per Lambda container: each site's parameter is read at its first launch only.
_site_in = ssm_site_reader(_ssm_in)


class LaunchEvent(TargetRef):
    """A shard by its indices (the step itself is in preflight's answer: the state never carries it), or,
    with no step, the target's preflight on its site."""

    task_token: str
    step: int | None = None
    shard: int = 0


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=LaunchEvent)
def handler(event: LaunchEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(LauncherEnv)
    launcher = EcsLauncher(cast("ECSClient", client("ecs")), deps.env, ecs_in=_ecs_in, site_in=_site_in)
    if event.step is None:
        task, worker = launch_preflight(event, event.task_token, deps.records, launcher, deps.env.sites)
        logger.info("preflight launched on its site", target=task.target, site=task.site, worker=worker)
        return {"task_arn": worker, "started": True}
    shard = ShardRef(campaign_id=event.campaign_id, phase=event.phase, target=event.target, step=event.step, shard=event.shard)
    step, worker, started = launch(shard, event.task_token, deps.records, launcher, deps.worker_slots)
    logger.info("worker launched" if started else "step handed to the phase's worker", step_id=step.step_id, worker=worker)
    return {"task_arn": worker, "started": started}
