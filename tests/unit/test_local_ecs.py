"""The local ECS endpoint enforces what ECS does: idempotent RunTask by clientToken, the override limit."""

import sys

import boto3
import pytest
from botocore.exceptions import ClientError

from pgarena.local.endpoints import MAX_OVERRIDES_CHARS, EcsEndpoint
from pgarena.local.signing import RunKeys, new_credentials


@pytest.fixture
def ecs(tmp_path, monkeypatch):
    credentials = new_credentials()
    # A worker that exits at once: this test is about the endpoint, not the worker.
    monkeypatch.setattr(sys, "executable", "/bin/true")
    with EcsEndpoint(worker_env={}, logs_dir=tmp_path, keys=RunKeys([credentials])) as endpoint:
        session = boto3.session.Session(credentials.access_key_id, credentials.secret_access_key, region_name="us-east-1")
        yield endpoint, session.client("ecs", endpoint_url=endpoint.url)


def run(client, token, value="{}"):
    return client.run_task(
        cluster="c",
        taskDefinition="td",
        clientToken=token,
        overrides={"containerOverrides": [{"name": "worker", "environment": [{"name": "PGARENA_STEP", "value": value}]}]},
    )


def test_a_retried_run_task_with_the_same_client_token_starts_no_second_worker(ecs):
    endpoint, client = ecs
    first, retried = run(client, "t1"), run(client, "t1")
    assert first["tasks"][0]["taskArn"] == retried["tasks"][0]["taskArn"]
    assert len(endpoint.processes) == 1
    run(client, "t2")
    assert len(endpoint.processes) == 2


def test_overrides_past_ecs_limit_are_refused(ecs):
    endpoint, client = ecs
    with pytest.raises(ClientError, match="at most 8192") as refused:
        run(client, "t3", value="x" * MAX_OVERRIDES_CHARS)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterException"
    assert endpoint.processes == {}
