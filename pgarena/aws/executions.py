"""The Executions port on Step Functions: start an execution, read one's history as typed events, fail
a step that waits on a task token. Used by start_campaign, finalize_stopped and task_stopped (built by
functions/dependencies.py), which the local runtime runs against its moto server alike."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from pgarena.model.history import HISTORY, HistoryEvent

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

# GetExecutionHistory's largest page.
HISTORY_PAGE = 1000
# SendTaskFailure's answers for a token no longer waited for: the worker answered, or the state gave up.
CLOSED_TOKEN_ERRORS = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})


def execution_arn(state_machine_arn: str, name: str) -> str:
    """arn:aws:states:<region>:<account>:stateMachine:<machine> -> ...:execution:<machine>:<name>."""
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{name}"


class StepFunctionsExecutions:
    def __init__(self, sfn: SFNClient):
        self.sfn = sfn

    def start(self, state_machine_arn: str, name: str, execution_input: dict[str, Any]) -> str:
        # StartExecution is idempotent for the same name and input while the execution runs; one that
        # already ended answers ExecutionAlreadyExists: either way it is the one meant, never a second.
        try:
            response = self.sfn.start_execution(stateMachineArn=state_machine_arn, name=name, input=json.dumps(execution_input))
        except self.sfn.exceptions.ExecutionAlreadyExists:
            return execution_arn(state_machine_arn, name)
        return response["executionArn"]

    def history(self, execution_arn: str) -> list[HistoryEvent]:
        """The whole history, oldest first, 1,000 events a call (the most AWS gives)."""
        pages = self.sfn.get_paginator("get_execution_history").paginate(
            executionArn=execution_arn, PaginationConfig={"PageSize": HISTORY_PAGE}
        )
        return HISTORY.validate_python([event for page in pages for event in page["events"]])

    def fail_task(self, task_token: str, error: str, cause: str) -> bool:
        try:
            self.sfn.send_task_failure(taskToken=task_token, error=error, cause=cause)
        except ClientError as failure:
            if failure.response.get("Error", {}).get("Code") in CLOSED_TOKEN_ERRORS:
                return False
            raise
        return True
