"""Scheduled campaigns: the execution input a schedule starts, from an inline matrix or one kept in S3.

CDK writes the input of inline schedules at synth (EventBridge Scheduler fills in the execution id
when it fires); the start_campaign function builds the same input for matrices stored in S3.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pgarena.aws.deployment import campaign_input

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_stepfunctions import SFNClient

# Step Functions execution names: at most 80 characters.
EXECUTION_NAME_MAX = 80


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
