"""What a cancel stopped, one line each: the execution, then every worker task StopTask reached, by target."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pgarena.aws.launch import step_field


def _environment(task: Mapping[str, Any]) -> dict[str, str]:
    overrides = task.get("overrides", {}).get("containerOverrides", [])
    return {item["name"]: item["value"] for override in overrides for item in override.get("environment", [])}


def stopped_lines(campaign_id: str, task_arns: list[str], tasks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """`stopped the execution of campaign X`, then `stopped worker task <id> (target t)` per task."""
    lines = [f"stopped the execution of campaign {campaign_id}"]
    for arn in dict.fromkeys(task_arns):
        target = step_field(_environment(tasks.get(arn, {})), "target")
        lines.append(f"stopped worker task {arn.rsplit('/', 1)[-1]}" + (f" (target {target})" if target else ""))
    return lines
