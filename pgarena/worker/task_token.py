"""The task token port on Step Functions: the worker's heartbeat and its answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

logger = Logger(service="pgarena-worker")

# Step Functions' answers to a heartbeat once it has stopped waiting for this task (timed out, the
# execution stopped or failed): the step is over for the campaign, so the load must stop too.
TASK_GONE = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})


class SfnTaskToken:
    def __init__(self, sfn: SFNClient, token: str):
        self.sfn, self.token = sfn, token

    def beat(self) -> bool:
        try:
            self.sfn.send_task_heartbeat(taskToken=self.token)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in TASK_GONE:
                logger.warning("heartbeat refused: the task is gone", error=str(error))
                return False
            raise
        return True

    def succeed(self, output: str) -> None:
        self.sfn.send_task_success(taskToken=self.token, output=output)

    def fail(self, error: str, cause: str) -> None:
        self.sfn.send_task_failure(taskToken=self.token, error=error, cause=cause)
