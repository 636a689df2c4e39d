"""Workers started by ECS RunTask (the pgarena.campaign.ports.Launcher port); the request itself is pure.

A target placed in another region's worker site is launched there: that region's ECS, cluster, task
definition and network, the home stack's task role, and the home region named for the worker to report to.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgarena.aws.settings import LauncherEnv
from pgarena.aws.sites import SiteReadError, WorkerSite
from pgarena.model.errors import ErrorKind, failure
from pgarena.model.plan import Step
from pgarena.model.warm import WorkerSlot

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient


def client_token(step: Step, task_token: str) -> str:
    """ECS's idempotency token: a launch Lambda retried after a RunTask that did start a task gets that
    task back instead of a second worker. The task token is new for each attempt of the state."""
    return hashlib.sha256(f"{step.step_id}\n{task_token}".encode()).hexdigest()[:64]


def run_task_request(  # noqa: PLR0913  # the shard, its token, where it runs, and its slot
    step: Step,
    task_token: str,
    env: LauncherEnv,
    site: WorkerSite | None = None,
    slot: WorkerSlot | None = None,
    last: bool = True,
) -> dict[str, Any]:
    """The RunTask request for one shard, in `site` (default: the home site, from the launcher's env); a
    worker given its `slot` stays for the slot's next step unless this one is its `last`."""
    remote = site is not None
    site = site or env.home_site
    placement = step.placement
    subnets = (placement.subnets if placement and placement.subnets else None) or site.subnets
    groups = (placement.security_groups if placement and placement.security_groups else None) or site.security_groups
    request: dict[str, Any] = {
        "cluster": site.cluster_arn,
        "taskDefinition": site.task_definition_arn,
        "count": 1,
        "clientToken": client_token(step, task_token),
        "startedBy": "pgarena",
        "overrides": {
            "containerOverrides": [
                {
                    "name": site.container_name,
                    "environment": [
                        {"name": "PGARENA_STEP", "value": step.model_dump_json()},
                        {"name": "PGARENA_TASK_TOKEN", "value": task_token},
                        {"name": "RESULTS_BUCKET", "value": env.results_bucket},
                        {"name": "RESULTS_TABLE", "value": env.results_table},
                        {"name": "RESULTS_REGION", "value": env.region},
                        *(
                            [
                                {"name": "PGARENA_WORKER_SLOT", "value": slot.model_dump_json()},
                                {"name": "PGARENA_LAST_STEP", "value": "true" if last else "false"},
                            ]
                            if slot is not None
                            else []
                        ),
                    ],
                }
            ]
        },
    }
    # A site's task definition has no task role of its own: its workers run as the home stack's.
    if remote and env.task_role_arn:
        request["overrides"]["taskRoleArn"] = env.task_role_arn
    # Fargate Spot when the stack enables it (a capacity provider strategy and a launch type exclude each other)
    if site.capacity_provider:
        request["capacityProviderStrategy"] = [{"capacityProvider": site.capacity_provider, "weight": 1}]
    else:
        request["launchType"] = site.launch_type
    if subnets:
        request["networkConfiguration"] = {
            "awsvpcConfiguration": {"subnets": subnets, "securityGroups": groups, "assignPublicIp": site.assign_public_ip}
        }
    return request


class EcsLauncher:
    """RunTask in the target's site: home through `ecs`, another region through `ecs_in(region)` with the
    site `site_in(region)` reads (pgarena.aws.sites.ssm_site_reader)."""

    def __init__(
        self,
        ecs: ECSClient,
        env: LauncherEnv,
        ecs_in: Callable[[str], ECSClient] | None = None,
        site_in: Callable[[str], WorkerSite] | None = None,
    ):
        self.ecs = ecs
        self.env = env
        self.ecs_in = ecs_in
        self.site_in = site_in

    def launch(
        self, step: Step, task_token: str, slot: WorkerSlot | None = None, last: bool = True
    ) -> tuple[str | None, list[Any]]:
        ecs, site = self._site_of(step)
        response = ecs.run_task(**run_task_request(step, task_token, self.env, site, slot, last))
        tasks = response.get("tasks") or []
        return (tasks[0]["taskArn"] if tasks else None), list(response.get("failures") or [])

    def _site_of(self, step: Step) -> tuple[ECSClient, WorkerSite | None]:
        region = step.placement.region if step.placement else None
        sites = self.env.sites
        if not sites.serves(region):
            # Validate And Plan refuses this; a stack redeployed without the site since then lands here.
            raise failure(
                ErrorKind.INVALID_MATRIX,
                f"placement.region {region!r}: the stack has no worker site there (sites: {sites.describe()})",
            )
        if region is None or not sites.is_remote(region):
            return self.ecs, None
        if self.ecs_in is None or self.site_in is None:
            raise failure(ErrorKind.LAUNCH_FAILED, f"this launcher cannot reach the worker site in {region}")
        try:
            site = self.site_in(region)
        except SiteReadError as error:
            raise failure(ErrorKind.LAUNCH_FAILED, str(error)) from None
        return self.ecs_in(region), site
