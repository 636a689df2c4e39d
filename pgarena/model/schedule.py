"""Scheduled campaigns: the execution input a schedule starts, from an inline matrix or one kept in S3. Pure.

CDK writes the input of inline schedules at synth (EventBridge Scheduler fills in the execution id
when it fires); the start_campaign function builds the same input for matrices stored in S3
(pgarena.campaign.scheduled).
"""

from __future__ import annotations

import copy
from typing import Any

from pgarena.model.execution import scheduled_campaign_id

# EventBridge Scheduler replaces this keyword in a target's input with the time the firing was scheduled
# for: the same for each retry of one firing (the execution id is new at each attempt), so a retried
# firing gets the campaign id of its first attempt (pgarena.model.execution.scheduled_campaign_id).
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
# Step Functions execution names: at most 80 characters.
EXECUTION_NAME_MAX = 80


def campaign_id(schedule: str, scheduled_time: str) -> str:
    """The input's id: as written at synth, the keyword; as start_campaign sees it, the firing's own id."""
    given = f"{schedule}-{scheduled_time}"
    return given if scheduled_time == SCHEDULED_TIME else scheduled_campaign_id(given)


def campaign_input(schedule: str, matrix: dict[str, Any], scheduled_time: str = SCHEDULED_TIME) -> dict[str, Any]:
    """The state machine's input for one firing of `schedule`; the ledger records the schedule's name."""
    matrix = copy.deepcopy(matrix)
    matrix["cost"] = {**(matrix.get("cost") or {})}
    matrix["cost"].setdefault("schedule", schedule)
    return {"campaign_id": campaign_id(schedule, scheduled_time), "matrix": matrix}
