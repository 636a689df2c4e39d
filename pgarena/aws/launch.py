"""The ECS RunTask request that starts a worker for one step. Pure."""

from __future__ import annotations

from pgarena.aws.settings import LauncherEnv
from pgarena.model.plan import Step


def run_task_request(step: Step, task_token: str, env: LauncherEnv) -> dict:
    placement = step.placement
    subnets = (placement.subnets if placement and placement.subnets else None) or env.subnet_list
    groups = (placement.security_groups if placement and placement.security_groups else None) or env.security_group_list
    request: dict = {
        "cluster": env.cluster_arn,
        "taskDefinition": env.task_definition_arn,
        "launchType": env.launch_type,
        "count": 1,
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
    if subnets:
        request["networkConfiguration"] = {
            "awsvpcConfiguration": {"subnets": subnets, "securityGroups": groups, "assignPublicIp": env.assign_public_ip}
        }
    return request
