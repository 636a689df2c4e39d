"""Scheduled campaigns: the input a schedule starts, and start_campaign for matrices kept in S3."""

import json

import boto3
import pytest
from moto import mock_aws
from pydantic import ValidationError

from functions.start_campaign.handler import handler
from pgarena.aws.schedule import campaign_input
from pgarena.local.endpoints import LambdaContext
from tests.conftest import FIXTURES

MATRIX = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())


def test_input_names_the_campaign_after_the_schedule_and_the_scheduler_execution():
    # Given a matrix without a cost block / When a schedule's input is written at synth
    payload = campaign_input("nightly", MATRIX)

    # Then the campaign id ends in the keyword EventBridge Scheduler replaces with each invocation's id, and
    # the matrix is the same but for the schedule's name in its cost block
    assert payload == {
        "campaign_id": "nightly-<aws.scheduler.execution-id>",
        "matrix": {**MATRIX, "cost": {"schedule": "nightly"}},
    }


def test_input_records_the_schedule_in_the_cost_block_and_keeps_the_caps():
    # Given a matrix with caps and no schedule name
    matrix = {**MATRIX, "cost": {"cap_usd": 5.0}}

    # When a schedule starts it / Then the ledger will see the schedule's name; the matrix itself is untouched
    assert campaign_input("nightly", matrix, "x1")["matrix"]["cost"] == {"cap_usd": 5.0, "schedule": "nightly"}
    assert matrix["cost"] == {"cap_usd": 5.0}


def test_a_schedule_name_in_the_matrix_wins():
    matrix = {**MATRIX, "cost": {"schedule": "manual"}}
    assert campaign_input("nightly", matrix, "x1")["matrix"]["cost"]["schedule"] == "manual"


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
    event = {"schedule": "weekly", "matrix_s3_key": "matrices/weekly.json", "execution_id": "d32c5kddcf5bb8c3"}
    result = handler(event, LambdaContext(function_name="pgarena-start-campaign"))

    # Then one execution is started, named after the campaign, with the matrix and the schedule as its input
    execution = aws.describe_execution(executionArn=result["execution_arn"])
    assert execution["name"] == "weekly-d32c5kddcf5bb8c3"
    assert json.loads(execution["input"]) == {
        "campaign_id": "weekly-d32c5kddcf5bb8c3",
        "matrix": {**MATRIX, "cost": {"schedule": "weekly"}},
    }


def test_start_campaign_refuses_an_execution_id_that_cannot_name_an_execution(aws, state_machine_arn):
    # Given an execution id with a space (Step Functions execution names allow none)
    event = {"schedule": "weekly", "matrix_s3_key": "matrices/weekly.json", "execution_id": "a b"}

    # When the scheduler invokes start_campaign / Then the event is refused naming the field, and nothing starts
    with pytest.raises(ValidationError) as refused:
        handler(event, LambdaContext(function_name="pgarena-start-campaign"))
    assert [(e["loc"], e["type"]) for e in refused.value.errors()] == [(("execution_id",), "string_pattern_mismatch")]
    assert aws.list_executions(stateMachineArn=state_machine_arn)["executions"] == []
