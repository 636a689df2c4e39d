"""moto's interpreter as AWS behaves: a worker's first heartbeat may arrive before the task's wait begins;
the history is answered a page at a time."""

import json
import time

import boto3
from moto import mock_aws
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackOutcomeSuccess, CallbackPoolManager

from pgarena.local.interpreter import as_aws, history_page


def test_a_heartbeat_for_a_scheduled_task_is_accepted_before_its_wait_begins():
    # Given a task token the interpreter created before invoking the launching Lambda
    pool = CallbackPoolManager(activity_store={})
    pool.add("token")
    assert pool.heartbeat("token") is False  # moto as it is: SendTaskHeartbeat answers InvalidToken
    with as_aws():
        # When the worker beats before the Lambda's answer reached the interpreter
        # Then the beat is accepted, as AWS accepts it
        assert pool.heartbeat("token") is True
        # and once the wait begins, beats reach it
        wait = pool.get("token").setup_heartbeat_endpoint(heartbeat_seconds=1)
        assert pool.heartbeat("token") is True and wait.clear_and_wait() is True
    assert pool.heartbeat("unknown") is False  # a token nobody issued is still refused


def test_a_task_that_answered_before_its_wait_began_is_answered_at_once():
    # Given a step whose worker finished before the launching Lambda's answer reached the interpreter
    pool = CallbackPoolManager(activity_store={})
    pool.add("token")
    outcome = CallbackOutcomeSuccess(callback_id="token", output="{}")
    with as_aws():
        assert pool.notify("token", outcome)
        # When the wait begins, Then it has its answer without waiting for a heartbeat
        wait = pool.get("token").setup_heartbeat_endpoint(heartbeat_seconds=3600)
        assert wait.clear_and_wait() is True and pool.get("token").get_outcome() is outcome


def test_outside_the_runtime_moto_is_left_as_it_is():
    pool = CallbackPoolManager(activity_store={})
    pool.add("token")
    with as_aws():
        pass
    assert pool.heartbeat("token") is False


def test_history_pages_are_read_newest_first_as_aws_answers_them():
    # Given a history of 7 events
    events = [{"id": i} for i in range(1, 8)]
    # When read newest first, 3 a page, Then each page holds the next 3 and a token for the rest
    first = history_page(events, True, 3, None)
    assert [e["id"] for e in first["events"]] == [7, 6, 5]
    second = history_page(events, True, 3, first["nextToken"])
    assert [e["id"] for e in second["events"]] == [4, 3, 2]
    last = history_page(events, True, 3, second["nextToken"])
    assert [e["id"] for e in last["events"]] == [1] and "nextToken" not in last
    # And oldest first with no page size asked: AWS's 100, the whole of this history
    assert history_page(events, False, None, None) == {"events": events}
    # And when events are added between two calls, the next page neither repeats nor skips one
    grown = [*events, {"id": 8}, {"id": 9}]
    assert [e["id"] for e in history_page(grown, True, 3, first["nextToken"])["events"]] == [4, 3, 2]


def test_an_executions_history_is_answered_a_page_at_a_time_in_the_order_asked():
    # Given an execution of moto's interpreter that ran five Pass states
    states = {f"S{i}": {"Type": "Pass", "Next": f"S{i + 1}"} for i in range(4)} | {"S4": {"Type": "Pass", "End": True}}
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), as_aws():
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        machine = sfn.create_state_machine(
            name="m", definition=json.dumps({"StartAt": "S0", "States": states}), roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        arn = sfn.start_execution(stateMachineArn=machine)["executionArn"]
        assert _ended(sfn, arn)
        everything = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        # When it is read newest first, 4 events a call
        newest = sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=4)
        # Then the call answers the 4 newest, and a token that pages on to the rest (AWS's answer; moto's
        # whole history, oldest first, made every poll of a following runtime serialize all of it)
        ids = [e["id"] for e in everything]
        assert len(ids) > 8 and ids == sorted(ids)
        assert [e["id"] for e in newest["events"]] == ids[::-1][:4]
        pages = sfn.get_paginator("get_execution_history").paginate(executionArn=arn, PaginationConfig={"PageSize": 4})
        assert [e["id"] for page in pages for e in page["events"]] == ids


def _ended(sfn, arn: str) -> bool:
    for _ in range(600):  # moto runs the execution in a thread of its own
        if sfn.describe_execution(executionArn=arn)["status"] != "RUNNING":
            return True
        time.sleep(0.05)
    return False
