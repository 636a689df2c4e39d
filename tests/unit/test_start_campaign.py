"""Scheduled campaigns: the input a schedule starts, and start_campaign for matrices kept in S3."""

import json

import boto3
import pytest
from moto import mock_aws
from pydantic import ValidationError

from functions.start_campaign.handler import handler
from pgarena.local.endpoints import LambdaContext
from pgarena.model.execution import execution_request, scheduled_campaign_id
from pgarena.model.schedule import SCHEDULED_TIME, campaign_input
from tests.conftest import FIXTURES

MATRIX = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())


def test_input_names_the_campaign_after_the_schedule_and_the_scheduled_time():
    # Given a matrix without a cost block / When a schedule's input is written at synth
    payload = campaign_input("nightly", MATRIX)

    # Then the campaign id ends in the keyword EventBridge Scheduler replaces with the firing's time, and
    # the matrix is the same but for the schedule's name in its cost block
    assert payload == {
        "campaign_id": "nightly-<aws.scheduler.scheduled-time>",
        "matrix": {**MATRIX, "cost": {"schedule": "nightly"}},
    }


def test_input_records_the_schedule_in_the_cost_block_and_keeps_the_caps():
    # Given a matrix with caps and no schedule name
    matrix = {**MATRIX, "cost": {"cap_usd": 5.0}}

    # When a schedule starts it / Then the ledger will see the schedule's name; the matrix itself is untouched
    assert campaign_input("nightly", matrix, "2026-11-26T02:00:00Z")["matrix"]["cost"] == {"cap_usd": 5.0, "schedule": "nightly"}
    assert matrix["cost"] == {"cap_usd": 5.0}


def test_a_schedule_name_in_the_matrix_wins():
    matrix = {**MATRIX, "cost": {"schedule": "manual"}}
    assert campaign_input("nightly", matrix, "2026-11-26T02:00:00Z")["matrix"]["cost"]["schedule"] == "manual"


@pytest.fixture
def aws(monkeypatch, aws_credentials):
    for name, value in {
        "RESULTS_BUCKET": "results",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        s3, sfn = boto3.client("s3"), boto3.client("stepfunctions")
        s3.create_bucket(Bucket="results")
        s3.put_object(Bucket="results", Key="matrices/weekly.json", Body=json.dumps(MATRIX).encode())
        definition = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
        arn = sfn.create_state_machine(
            name="campaign", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/sfn"
        )["stateMachineArn"]
        monkeypatch.setenv("STATE_MACHINE_ARN", arn)
        yield sfn


@pytest.fixture
def state_machine_arn(aws):
    return aws.list_state_machines()["stateMachines"][0]["stateMachineArn"]


def test_start_campaign_starts_the_matrix_from_s3(aws):
    # Given a schedule's matrix in the results bucket / When the scheduler invokes start_campaign
    event = {"schedule": "weekly", "matrix_s3_key": "matrices/weekly.json", "scheduled_time": "2026-11-26T02:00:00Z"}
    result = handler(event, LambdaContext(function_name="pgarena-start-campaign"))

    # Then one execution is started, named after the campaign (the schedule and the firing's time), with the
    # matrix and the schedule as its input
    execution = aws.describe_execution(executionArn=result["execution_arn"])
    assert execution["name"] == "weekly-20261126T020000Z"
    assert json.loads(execution["input"]) == {
        "campaign_id": "weekly-20261126T020000Z",
        "matrix": {**MATRIX, "cost": {"schedule": "weekly"}},
    }


@pytest.mark.parametrize("first_ended", [False, True])
def test_a_retried_firing_finds_its_campaign_and_starts_no_second_one(aws, state_machine_arn, first_ended):
    # Given a firing whose campaign was started (still running, or ended)
    event = {"schedule": "weekly", "matrix_s3_key": "matrices/weekly.json", "scheduled_time": "2026-11-26T02:00:00Z"}
    first = handler(event, LambdaContext(function_name="pgarena-start-campaign"))
    if first_ended:
        aws.stop_execution(executionArn=first["execution_arn"])

    # When the scheduler retries the same firing (its execution id is new, its scheduled time the same)
    again = handler(event, LambdaContext(function_name="pgarena-start-campaign"))

    # Then it answers with the first execution, and no second one exists
    assert again == first
    assert len(aws.list_executions(stateMachineArn=state_machine_arn)["executions"]) == 1


def test_an_inline_schedule_s_id_from_the_scheduled_time_is_a_valid_campaign_id():
    # Given the inline input as the scheduler sends it: the keyword replaced by the firing's time
    payload = json.loads(json.dumps(campaign_input("nightly", MATRIX)).replace(SCHEDULED_TIME, "2026-11-26T02:00:00Z"))
    # When the state machine reads it / Then the id is the firing's, in a form S3 keys and execution names take
    assert execution_request(payload, "any-execution-name").campaign_id == "nightly-20261126T020000Z"
    # And the same instant written with an offset is the same campaign
    assert scheduled_campaign_id("nightly-2026-11-26T03:00:00+01:00") == "nightly-20261126T020000Z"


def test_start_campaign_refuses_a_scheduled_time_that_is_not_one(aws, state_machine_arn):
    # Given a scheduled time that is not ISO 8601
    event = {"schedule": "weekly", "matrix_s3_key": "matrices/weekly.json", "scheduled_time": "a b"}

    # When the scheduler invokes start_campaign / Then the event is refused naming the field, and nothing starts
    with pytest.raises(ValidationError) as refused:
        handler(event, LambdaContext(function_name="pgarena-start-campaign"))
    assert [(e["loc"], e["type"]) for e in refused.value.errors()] == [(("scheduled_time",), "string_pattern_mismatch")]
    assert aws.list_executions(stateMachineArn=state_machine_arn)["executions"] == []
