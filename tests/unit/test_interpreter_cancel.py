"""Issue 34.13: StopExecution (Ctrl-C's cancel) while a Map iteration runs ends the execution ABORTED
without the interpreter crashing on its own event details or printing its parse trees."""

import json
import logging
import time

import boto3
from moto import mock_aws

from pgarena.local.interpreter import INTERPRETER_LOGGER, as_aws

PROGRAM_LOGGER = "moto.stepfunctions.parser.asl.component.program.program"
COMPONENT_LOGGER = "moto.stepfunctions.parser.asl.component.eval_component"
# A Map whose iteration waits, caught as the campaign's Maps are: the stop comes while it waits.
DEFINITION = {
    "StartAt": "Each",
    "States": {
        "Each": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "Iterator": {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 2, "End": True}}},
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught", "ResultPath": "$.failure"}],
            "End": True,
        },
        "Caught": {"Type": "Pass", "End": True},
    },
}
DEADLINE_S = 120
POLL_S = 0.05


def _wait_for(condition) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(POLL_S)
    return False


def test_a_stop_during_a_map_iteration_aborts_it_without_an_interpreter_error(caplog):
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), as_aws():
        # The interpreter's own crash report (its components' logs are quiet under as_aws) is listened to
        caplog.set_level(logging.ERROR, logger=PROGRAM_LOGGER)
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        machine = sfn.create_state_machine(
            name="m", definition=json.dumps(DEFINITION), roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"items": [1]}))["executionArn"]

        def history():
            return [e["type"] for e in sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]]

        # Given an execution waiting inside a Map iteration
        assert _wait_for(lambda: "WaitStateEntered" in history())
        # When it is stopped as Ctrl-C stops a campaign
        sfn.stop_execution(executionArn=arn, error="Cancelled", cause="stopped by the user")
        # Then the iteration is aborted and the execution ends ABORTED, with no interpreter crash
        assert _wait_for(lambda: "MapIterationAborted" in history())
        assert _wait_for(lambda: "ExecutionAborted" in history() or "MapStateAborted" in history())
        assert sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"
    assert "computation ended with exception" not in caplog.text
    assert "has no attribute 'get'" not in caplog.text


def test_the_interpreters_parse_trees_are_not_logged_while_the_runtime_runs():
    with as_aws():
        assert logging.getLogger(COMPONENT_LOGGER).getEffectiveLevel() > logging.ERROR
    assert logging.getLogger(INTERPRETER_LOGGER).level == logging.NOTSET  # restored afterwards
