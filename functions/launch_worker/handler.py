"""Run Worker Task: hand the step to its phase's warm worker, or start one (ECS RunTask); Preflight On
Site: start the target's preflight as a worker on its site. The worker answers the state machine's task token."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import LauncherEnv
from pgarena.campaign.launch import launch, launch_preflight
from pgarena.model.plan import ShardRef, TargetRef


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
    if event.step is None:
        on_site = launch_preflight(event, event.task_token, deps.records, deps.launcher, deps.env.sites)
        logger.info("preflight launched on its site", target=on_site.task.target, site=on_site.task.site, worker=on_site.worker)
        return {"task_arn": on_site.worker, "started": True}
    shard = ShardRef(campaign_id=event.campaign_id, phase=event.phase, target=event.target, step=event.step, shard=event.shard)
    launched = launch(shard, event.task_token, deps.records, deps.launcher, deps.worker_slots)
    logger.info(
        "worker launched" if launched.started else "step handed to the phase's worker",
        step_id=launched.step.step_id,
        worker=launched.worker,
    )
    return {"task_arn": launched.worker, "started": launched.started}
