"""Workers started by ECS RunTask (the pgarena.campaign.ports.Launcher port); the request itself is pure."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from pgarena.aws.settings import LauncherEnv
from pgarena.model.plan import Step

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient


def client_token(step: Step, task_token: str) -> str:
    """ECS's idempotency token: a launch Lambda retried after a RunTask that did start a task gets that
    task back instead of a second worker. The task token is new for each attempt of the state."""
    return hashlib.sha256(f"{step.step_id}\n{task_token}".encode()).hexdigest()[:64]


def run_task_request(step: Step, task_token: str, env: LauncherEnv) -> dict[str, Any]:
    placement = step.placement
    subnets = (placement.subnets if placement and placement.subnets else None) or env.subnet_list
    groups = (placement.security_groups if placement and placement.security_groups else None) or env.security_group_list
    request: dict[str, Any] = {
        "cluster": env.cluster_arn,
        "taskDefinition": env.task_definition_arn,
        "count": 1,
        "clientToken": client_token(step, task_token),
        "startedBy": "pgarena",
        "overrides": {
            "containerOverrides": [
                {
                    "name": env.container_name,
                    "environment": [
                        {"name": "PGARENA_STEP", "value": step.model_dump_json()},
                        {"name": "PGARENA_TASK_TOKEN", "value": task_token},
                        {"name": "RESULTS_BUCKET", "value": env.results_bucket},
                        {"name": "RESULTS_TABLE", "value": env.results_table},
                    ],
                }
            ]
        },
    }
    # Fargate Spot when the stack enables it (a capacity provider strategy and a launch type exclude each other)
    if env.capacity_provider:
        request["capacityProviderStrategy"] = [{"capacityProvider": env.capacity_provider, "weight": 1}]
    else:
        request["launchType"] = env.launch_type
    if subnets:
        request["networkConfiguration"] = {
            "awsvpcConfiguration": {"subnets": subnets, "securityGroups": groups, "assignPublicIp": env.assign_public_ip}
        }
    return request


class EcsLauncher:
    def __init__(self, ecs: ECSClient, env: LauncherEnv):
        self.ecs = ecs
        self.env = env

    def launch(self, step: Step, task_token: str) -> tuple[str | None, list[Any]]:
        response = self.ecs.run_task(**run_task_request(step, task_token, self.env))
        tasks = response.get("tasks") or []
        return (tasks[0]["taskArn"] if tasks else None), list(response.get("failures") or [])
