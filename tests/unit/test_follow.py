"""Following an execution (`pgarena run --aws`, the local runtime): each poll reads only the events since
the last, a throttled call waits and is retried instead of ending the watch, and a stopped campaign's
history is read 1,000 events a call (pgarena.remote.follow, pgarena.aws.throttling)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.stub import Stubber

from pgarena.aws import throttling
from pgarena.aws.executions import StepFunctionsExecutions
from pgarena.remote import follow as follow_module
from pgarena.remote.follow import follow, new_events

ARN = "arn:aws:states:us-east-1:123456789012:execution:campaign:c1"
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:campaign"
T0 = datetime(2026, 11, 25, tzinfo=UTC)


def _event(i: int) -> dict[str, Any]:
    return {"id": i, "timestamp": T0, "type": "PassStateEntered", "stateEnteredEventDetails": {"name": f"S{i}", "input": "{}"}}


def _status(status: str) -> dict[str, Any]:
    return {"executionArn": ARN, "stateMachineArn": MACHINE, "status": status, "startDate": T0}


def _newest_first(*ids: int, next_token: str | None = None) -> dict[str, Any]:
    page: dict[str, Any] = {"events": [_event(i) for i in ids]}
    if next_token:
        page["nextToken"] = next_token
    return page


def _reverse(token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"executionArn": ARN, "reverseOrder": True, "maxResults": 1000}
    if token:
        params["nextToken"] = token
    return params


@pytest.fixture
def sfn():
    # botocore's own retries off: what is tested is the poller's, on top of them
    client = boto3.client(
        "stepfunctions",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


@pytest.fixture
def no_waiting(monkeypatch):
    """Backoffs and poll intervals recorded, not slept (both modules' `time` is the one module)."""
    slept: list[float] = []
    monkeypatch.setattr(throttling.time, "sleep", slept.append)
    assert follow_module.time.sleep == slept.append
    return slept


def test_new_events_stop_at_the_first_event_already_seen(sfn):
    client, stub = sfn
    # Given a history of 7 events of which the first 4 were seen, read newest first
    stub.add_response("get_execution_history", _newest_first(7, 6, 5, 4, 3, 2, 1), _reverse())

    # When reading what is new / Then only events 5 to 7, oldest first, from one call
    assert [e["id"] for e in new_events(client, ARN, after_id=4)] == [5, 6, 7]


def test_new_events_are_right_from_a_service_that_ignores_reverse_order(sfn):
    # moto's server answers the whole history, oldest first, whatever reverseOrder and maxResults say
    # (pgarena.local.interpreter pages it as AWS does)
    client, stub = sfn
    stub.add_response("get_execution_history", _newest_first(1, 2, 3, 4, 5), _reverse())
    assert [e["id"] for e in new_events(client, ARN, after_id=3)] == [4, 5]


def test_new_events_page_on_until_the_seen_one(sfn):
    client, stub = sfn
    stub.add_response("get_execution_history", _newest_first(9, 8, next_token="p2"), _reverse())
    stub.add_response("get_execution_history", _newest_first(7, 6, next_token="p3"), _reverse("p2"))
    assert [e["id"] for e in new_events(client, ARN, after_id=6)] == [7, 8, 9]


def test_new_events_read_the_page_size_asked(sfn):
    # Given a service whose calls cost by the events they answer (the local runtime's moto serializes each)
    client, stub = sfn
    stub.add_response("get_execution_history", _newest_first(9, 8, next_token="p2"), {**_reverse(), "maxResults": 2})
    stub.add_response("get_execution_history", _newest_first(7, 6), {**_reverse("p2"), "maxResults": 2})
    # When reading what is new two events a call / Then each call asked for two
    assert [e["id"] for e in new_events(client, ARN, after_id=6, page_size=2)] == [7, 8, 9]


def test_each_poll_reads_only_new_events_and_the_watch_ends_with_the_execution(sfn, no_waiting):
    client, stub = sfn
    # Given an execution seen running twice, then ended
    stub.add_response("describe_execution", _status("RUNNING"), {"executionArn": ARN})
    stub.add_response("get_execution_history", _newest_first(2, 1), _reverse())
    stub.add_response("describe_execution", _status("RUNNING"), {"executionArn": ARN})
    stub.add_response("get_execution_history", _newest_first(4, 3, 2, 1), _reverse())
    stub.add_response("describe_execution", _status("SUCCEEDED"), {"executionArn": ARN})
    stub.add_response("get_execution_history", _newest_first(5, 4), _reverse())

    # When following it
    polls = [(p.seen, [e.text for e in p.states], p.running) for p in follow(client, ARN, 0.0, poll_s=2.0)]

    # Then each poll reported only its new states, and the last one saw the end (two poll intervals between)
    assert polls == [(0, ["S1", "S2"], True), (2, ["S3", "S4"], True), (4, ["S5"], False)]
    assert no_waiting == [2.0, 2.0]


def test_a_throttled_poll_waits_and_retries_instead_of_ending_the_watch(sfn, no_waiting):
    client, stub = sfn
    # Given Step Functions throttling the status and the history once each, then answering
    stub.add_client_error("describe_execution", service_error_code="ThrottlingException", http_status_code=400)
    stub.add_response("describe_execution", _status("SUCCEEDED"), {"executionArn": ARN})
    stub.add_client_error("get_execution_history", service_error_code="ThrottlingException", http_status_code=400)
    stub.add_response("get_execution_history", _newest_first(1), _reverse())

    # When following
    (poll,) = follow(client, ARN, 0.0)

    # Then the watch went on to the end after two backoffs, each within the first attempt's cap
    assert [e.text for e in poll.states] == ["S1"] and not poll.running
    assert len(no_waiting) == 2 and all(0 <= s < throttling.BACKOFF_BASE_S for s in no_waiting)


def test_a_refusal_that_is_not_throttling_ends_the_watch_at_once(sfn, no_waiting):
    client, stub = sfn
    stub.add_client_error("describe_execution", service_error_code="ExecutionDoesNotExist", http_status_code=400)
    with pytest.raises(ClientError, match="ExecutionDoesNotExist"):
        next(follow(client, ARN, 0.0))
    assert no_waiting == []


def test_backoff_grows_to_its_cap_with_full_jitter():
    assert [throttling.backoff_s(n, rand=lambda: 1.0) for n in (0, 1, 2, 5, 6, 40)] == [1.0, 2.0, 4.0, 30.0, 30.0, 30.0]
    assert throttling.backoff_s(3, rand=lambda: 0.0) == 0.0


def test_patiently_retries_network_blips_and_gives_up_after_max_attempts():
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        raise EndpointConnectionError(endpoint_url="https://states.us-east-1.amazonaws.com")

    with pytest.raises(EndpointConnectionError):
        throttling.patiently(flaky, sleep=lambda s: None, max_attempts=4)
    assert len(calls) == 4


def test_a_stopped_campaigns_history_is_read_1000_events_a_call(sfn):
    client, stub = sfn
    # Given a history of two pages (finalize_stopped reads it whole)
    forward = {"executionArn": ARN, "maxResults": 1000}
    stub.add_response("get_execution_history", {"events": [_event(1), _event(2)], "nextToken": "n"}, forward)
    stub.add_response("get_execution_history", {"events": [_event(3)]}, {**forward, "nextToken": "n"})

    # When reading it through the Executions port / Then every page asked for 1,000 events, and the events
    # come typed: each state entered with its name
    events = StepFunctionsExecutions(client).history(ARN)
    assert [(e.id, e.entered.name if e.entered else None) for e in events] == [(1, "S1"), (2, "S2"), (3, "S3")]
