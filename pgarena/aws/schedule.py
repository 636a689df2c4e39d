"""Scheduled campaigns: the execution input a schedule starts, from an inline matrix or one kept in S3.

CDK writes the input of inline schedules at synth (EventBridge Scheduler fills in the execution id
when it fires); the start_campaign function builds the same input for matrices stored in S3.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from pgarena.model.execution import scheduled_campaign_id

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_stepfunctions import SFNClient

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


def start_from_s3(
    s3: S3Client, sfn: SFNClient, bucket: str, key: str, state_machine_arn: str, schedule: str, scheduled_time: str
) -> str:
    """Read the schedule's matrix from the bucket and start its campaign; return the execution's ARN.

    The execution is named after the campaign, whose id comes from the firing's scheduled time: a
    retried invocation meets the running execution (StartExecution is idempotent for the same name and
    input), or the one that already ended (whose ARN it returns: nothing is started twice).
    """
    matrix = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    payload = campaign_input(schedule, matrix, scheduled_time)
    name = payload["campaign_id"][:EXECUTION_NAME_MAX]
    try:
        response = sfn.start_execution(stateMachineArn=state_machine_arn, name=name, input=json.dumps(payload))
    except sfn.exceptions.ExecutionAlreadyExists:
        return execution_arn(state_machine_arn, name)
    return response["executionArn"]


def execution_arn(state_machine_arn: str, name: str) -> str:
    """arn:aws:states:<region>:<account>:stateMachine:<machine> -> ...:execution:<machine>:<name>."""
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{name}"
