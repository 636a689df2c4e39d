"""Workers started by ECS RunTask (the pgarena.campaign.ports.Launcher port); the request itself is pure.

A target placed in another region's worker site is launched there: that region's ECS, cluster, task
definition and network, the home stack's task role, and the home region named for the worker to report to.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from pgarena.aws.settings import LauncherEnv
from pgarena.aws.sites import SiteReadError, WorkerSite
from pgarena.aws.throttling import backoff_s, is_throttling, patiently
from pgarena.model.errors import ErrorKind, failure
from pgarena.model.plan import Step

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient

# RunTask's answers that mean "no room now": failures[] reasons (ECS's capacity, Fargate's vCPU limit) and
# throttled calls. Retried here a few times within the function's 60 s, then by the state machine's Retry
# on LaunchFailed, with longer backoffs (statemachines/campaign.asl.json).
CAPACITY_REASON = re.compile(r"capacity|RESOURCE:|limit|throttl|try again|rate exceeded|AGENT", re.IGNORECASE)
LAUNCH_ATTEMPTS = 4
LAUNCH_BACKOFF_CAP_S = 8.0

# RunTask's startedBy: what the stack's rule on stopped tasks (task_stopped) and Ctrl-C's ListTasks pick out.
STARTED_BY = "pgarena"


def client_token(step: Step, task_token: str, attempt: int = 0) -> str:
    """ECS's idempotency token: a launch Lambda retried after a RunTask that did start a task gets that
    task back instead of a second worker. The task token is new for each attempt of the state; `attempt`
    counts RunTasks refused for capacity (no task started), each asked anew."""
    suffix = f"\n{attempt}" if attempt else ""
    return hashlib.sha256(f"{step.step_id}\n{task_token}{suffix}".encode()).hexdigest()[:64]


def capacity_failures(failures: list[Any]) -> bool:
    """Whether RunTask's failures are all "no room now" (worth a retry), not a refusal of the request."""
    return bool(failures) and all(CAPACITY_REASON.search(str(f.get("reason", ""))) for f in failures)


def run_task_request(
    step: Step, task_token: str, env: LauncherEnv, site: WorkerSite | None = None, attempt: int = 0
) -> dict[str, Any]:
    """The RunTask request for one shard, in `site` (default: the home site, from the launcher's env)."""
    remote = site is not None
    site = site or env.home_site
    placement = step.placement
    subnets = (placement.subnets if placement and placement.subnets else None) or site.subnets
    groups = (placement.security_groups if placement and placement.security_groups else None) or site.security_groups
    request: dict[str, Any] = {
        "cluster": site.cluster_arn,
        "taskDefinition": site.task_definition_arn,
        "count": 1,
        "clientToken": client_token(step, task_token, attempt),
        "startedBy": STARTED_BY,
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
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.ecs = ecs
        self.env = env
        self.ecs_in = ecs_in
        self.site_in = site_in
        self.sleep = sleep

    def launch(self, step: Step, task_token: str) -> tuple[str | None, list[Any]]:
        """RunTask, again after a backoff with jitter while ECS is throttled or out of capacity (a few times:
        the state machine retries LaunchFailed past that); the task, or the last failures."""
        ecs, site = self._site_of(step)
        failures: list[Any] = []
        for attempt in range(LAUNCH_ATTEMPTS):
            if attempt:
                self.sleep(backoff_s(attempt - 1, cap_s=LAUNCH_BACKOFF_CAP_S))
            request = run_task_request(step, task_token, self.env, site, attempt)
            response = patiently(
                partial(ecs.run_task, **request),
                retry_on=is_throttling,
                sleep=self.sleep,
                max_attempts=LAUNCH_ATTEMPTS,
            )
            tasks = response.get("tasks") or []
            failures = list(response.get("failures") or [])
            if tasks or not capacity_failures(failures):
                return (tasks[0]["taskArn"] if tasks else None), failures
        return None, failures

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
