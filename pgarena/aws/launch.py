"""Workers started by ECS RunTask (the pgarena.campaign.ports.Launcher port); the request itself is pure.

A target placed in another region's worker site is launched there: that region's ECS, cluster, task
definition and network, the home stack's task role, and the home region named for the worker to report to.
A target placed on an external site is launched in the home cluster with launch type EXTERNAL, on the
site's machines only (a placement constraint on their `pgarena.site` attribute).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from pgarena.aws.deployment import STARTED_BY
from pgarena.aws.settings import RESULTS_REGION_VAR, STEP_VAR, TASK_TOKEN_VAR, LauncherEnv
from pgarena.aws.sites import SiteReadError, WorkerSite
from pgarena.aws.throttling import backoff_s, is_throttling, patiently
from pgarena.model.errors import ErrorKind, failure
from pgarena.model.plan import Work
from pgarena.model.sites import site_constraint
from pgarena.model.warm import WorkerSlot

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient

# RunTask's answers that mean "no room now": failures[] reasons (ECS's capacity, Fargate's vCPU limit) and
# throttled calls. Retried here a few times within the function's 60 s, then by the state machine's Retry
# on LaunchFailed, with longer backoffs (statemachines/campaign.asl.json).
CAPACITY_REASON = re.compile(r"capacity|RESOURCE:|limit|throttl|try again|rate exceeded|AGENT", re.IGNORECASE)
LAUNCH_ATTEMPTS = 4
LAUNCH_BACKOFF_CAP_S = 8.0

EXTERNAL_LAUNCH_TYPE = "EXTERNAL"


def container_environment(overrides: Mapping[str, Any]) -> dict[str, str]:
    """The environment RunTask's overrides (a request's, or a described task's) give the worker's container."""
    return {
        item["name"]: item.get("value", "")
        for container in overrides.get("containerOverrides") or []
        for item in container.get("environment", [])
    }


def step_field(environment: Mapping[str, str], name: str) -> str:
    """A field of the step a worker's environment carries ("" when it carries no step, or not as JSON)."""
    try:
        return str(json.loads(environment.get(STEP_VAR) or "{}").get(name, ""))
    except (ValueError, AttributeError):
        return ""


def client_token(step: Work, task_token: str, attempt: int = 0) -> str:
    """ECS's idempotency token: a launch Lambda retried after a RunTask that did start a task gets that
    task back instead of a second worker (moto's and LocalStack's interpreters keep a state's task token
    over its retries; a retry with a new token finds its step on the worker slot instead:
    pgarena.campaign.launch.hand_over). `attempt` counts RunTasks refused for capacity (no task
    started), each asked anew."""
    suffix = f"\n{attempt}" if attempt else ""
    return hashlib.sha256(f"{step.step_id}\n{task_token}{suffix}".encode()).hexdigest()[:64]


def capacity_failures(failures: list[Any]) -> bool:
    """Whether RunTask's failures are all "no room now" (worth a retry), not a refusal of the request."""
    return bool(failures) and all(CAPACITY_REASON.search(str(f.get("reason", ""))) for f in failures)


def run_task_request(  # noqa: PLR0913  # the shard, its token, where it runs, its slot, and the attempt
    step: Work,
    task_token: str,
    env: LauncherEnv,
    site: WorkerSite | None = None,
    slot: WorkerSlot | None = None,
    last: bool = True,
    attempt: int = 0,
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
        "clientToken": client_token(step, task_token, attempt),
        "startedBy": STARTED_BY,
        "overrides": {
            "containerOverrides": [
                {
                    "name": site.container_name,
                    "environment": [
                        {"name": STEP_VAR, "value": step.model_dump_json()},
                        {"name": TASK_TOKEN_VAR, "value": task_token},
                        {"name": "RESULTS_BUCKET", "value": env.results_bucket},
                        {"name": "RESULTS_TABLE", "value": env.results_table},
                        {"name": RESULTS_REGION_VAR, "value": env.region},
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


def external_run_task_request(  # noqa: PLR0913  # the shard, its token, the site, and its slot
    step: Work, task_token: str, env: LauncherEnv, site: str, slot: WorkerSlot | None = None, last: bool = True
) -> dict[str, Any]:
    """The RunTask request for one shard on external site `site`: the home cluster, its EXTERNAL task
    definition (same image and task role as Fargate's, bridge network: no subnets), the site's machines only."""
    request = run_task_request(step, task_token, env, None, slot, last)
    request["taskDefinition"] = env.external_task_definition_arn
    request.pop("capacityProviderStrategy", None)  # Fargate Spot is for Fargate tasks; an external machine is the user's
    request.pop("networkConfiguration", None)  # the home subnets: Fargate's, not the machine's
    request["launchType"] = EXTERNAL_LAUNCH_TYPE
    request["placementConstraints"] = [{"type": "memberOf", "expression": site_constraint(site)}]
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

    def launch(
        self, step: Work, task_token: str, slot: WorkerSlot | None = None, last: bool = True
    ) -> tuple[str | None, list[Any]]:
        """RunTask, again after a backoff with jitter while ECS is throttled or out of capacity (a few times:
        the state machine retries LaunchFailed past that); the task, or the last failures."""
        external = step.placement.site if step.placement else None
        if external is not None:
            request = self._external_request(step, task_token, external, slot, last)
            response = patiently(
                partial(self.ecs.run_task, **request), retry_on=is_throttling, sleep=self.sleep, max_attempts=LAUNCH_ATTEMPTS
            )
            tasks = response.get("tasks") or []
            return (tasks[0]["taskArn"] if tasks else None), list(response.get("failures") or [])
        ecs, site = self._site_of(step)
        failures: list[Any] = []
        for attempt in range(LAUNCH_ATTEMPTS):
            if attempt:
                self.sleep(backoff_s(attempt - 1, cap_s=LAUNCH_BACKOFF_CAP_S))
            request = run_task_request(step, task_token, self.env, site, slot, last, attempt)
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

    def _external_request(self, step: Work, task_token: str, site: str, slot: WorkerSlot | None, last: bool) -> dict[str, Any]:
        sites = self.env.sites
        if not sites.serves_site(site):
            # Validate And Plan refuses this; a stack redeployed without the site since then lands here.
            raise failure(
                ErrorKind.INVALID_MATRIX,
                f"placement.site {site!r}: the stack has no such external site (sites: {sites.describe()})",
            )
        if not self.env.external_task_definition_arn:
            raise failure(ErrorKind.LAUNCH_FAILED, f"external site {site!r}: the launcher has no EXTERNAL task definition")
        return external_run_task_request(step, task_token, self.env, site, slot, last)

    def _site_of(self, step: Work) -> tuple[ECSClient, WorkerSite | None]:
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
