"""Issue 34.13: a cancel says what it stopped, one line each."""

import json

from pgarena.aws.settings import STEP_VAR
from pgarena.local.stopped import stopped_lines


def _task(target: str) -> dict:
    step = json.dumps({"target": target, "campaign_id": "c-1"})
    return {"overrides": {"containerOverrides": [{"name": "worker", "environment": [{"name": STEP_VAR, "value": step}]}]}}


def test_one_line_for_the_execution_then_one_per_worker_task():
    tasks = {"arn:aws:ecs:us-east-1:1:task/cluster/abc": _task("first"), "arn:aws:ecs:us-east-1:1:task/cluster/def": {}}
    # a task StopTask reached twice (the runtime looks twice) is said once
    lines = stopped_lines("c-1", [*tasks, "arn:aws:ecs:us-east-1:1:task/cluster/abc"], tasks)
    assert lines == [
        "stopped the execution of campaign c-1",
        "stopped worker task abc (target first)",
        "stopped worker task def",
    ]
