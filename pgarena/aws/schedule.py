"""Scheduled campaigns: the execution input a schedule starts, from an inline matrix or one kept in S3.

CDK writes the input of inline schedules at synth (EventBridge Scheduler fills in the execution id
when it fires); the start_campaign function builds the same input for matrices stored in S3.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_stepfunctions import SFNClient

# EventBridge Scheduler replaces this keyword in a target's input with the id of each invocation.
SCHEDULER_EXECUTION_ID = "<aws.scheduler.execution-id>"
# Step Functions execution names: at most 80 characters.
EXECUTION_NAME_MAX = 80


def campaign_id(schedule: str, execution_id: str) -> str:
    return f"{schedule}-{execution_id}"


def campaign_input(schedule: str, matrix: dict[str, Any], execution_id: str = SCHEDULER_EXECUTION_ID) -> dict[str, Any]:
    """The state machine's input for one firing of `schedule`; the ledger records the schedule's name."""
    matrix = copy.deepcopy(matrix)
    matrix["cost"] = {**(matrix.get("cost") or {})}
    matrix["cost"].setdefault("schedule", schedule)
    return {"campaign_id": campaign_id(schedule, execution_id), "matrix": matrix}


def start_from_s3(
    s3: S3Client, sfn: SFNClient, bucket: str, key: str, state_machine_arn: str, schedule: str, execution_id: str
) -> str:
    """Read the schedule's matrix from the bucket and start its campaign; return the execution's ARN.

    The execution is named after the campaign: a retried invocation with the same execution id
    meets the running execution (StartExecution is idempotent for the same name and input).
    """
    matrix = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    payload = campaign_input(schedule, matrix, execution_id)
    response = sfn.start_execution(
        stateMachineArn=state_machine_arn,
        name=payload["campaign_id"][:EXECUTION_NAME_MAX],
        input=json.dumps(payload),
    )
    return response["executionArn"]
