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


GCP = "gcp-us-central1"
GCP_INSTANCE = "arn:aws:ecs:us-east-1:000000000000:container-instance/pgarena-local/gcp"


@pytest.fixture
def with_instances(tmp_path, monkeypatch):
    """The endpoint with one registered external instance of site gcp-us-central1."""
    credentials = new_credentials()
    monkeypatch.setattr(sys, "executable", "/bin/true")
    instances = {GCP_INSTANCE: {"pgarena.site": GCP}}
    with EcsEndpoint(worker_env={}, logs_dir=tmp_path, keys=RunKeys([credentials]), instances=instances) as endpoint:
        session = boto3.session.Session(credentials.access_key_id, credentials.secret_access_key, region_name="us-east-1")
        yield endpoint, session.client("ecs", endpoint_url=endpoint.url)


def run_external(client, token, site):
    return client.run_task(
        cluster="c",
        taskDefinition="external-td",
        clientToken=token,
        launchType="EXTERNAL",
        placementConstraints=[{"type": "memberOf", "expression": f"attribute:pgarena.site == {site}"}],
        overrides={"containerOverrides": [{"name": "worker", "environment": [{"name": "PGARENA_STEP", "value": "{}"}]}]},
    )


def test_an_external_task_is_placed_on_the_instance_with_the_site_s_attribute(with_instances):
    endpoint, client = with_instances
    # When an EXTERNAL task is run with a constraint its registered instance meets
    (task,) = run_external(client, "t1", GCP)["tasks"]
    # Then it is placed there and its worker started
    assert (task["launchType"], task["containerInstanceArn"]) == ("EXTERNAL", GCP_INSTANCE)
    assert list(endpoint.processes) == [task["taskArn"]]


def test_an_external_task_no_instance_meets_fails_as_ecs_does_and_starts_nothing(with_instances):
    endpoint, client = with_instances
    response = run_external(client, "t1", "azure-eastus")
    assert response["tasks"] == []
    assert response["failures"] == [{"arn": "c", "reason": "MemberOf placement constraint unsatisfied."}]
    assert endpoint.processes == {}


def test_an_external_task_with_no_instance_registered_fails(ecs):
    endpoint, client = ecs
    assert run_external(client, "t1", GCP)["failures"][0]["reason"] == "MemberOf placement constraint unsatisfied."
    assert endpoint.processes == {}


def test_placement_constraints_on_a_fargate_task_are_refused(with_instances):
    _, client = with_instances
    with pytest.raises(client.exceptions.InvalidParameterException, match="not supported for the Fargate launch type"):
        client.run_task(
            cluster="c",
            taskDefinition="td",
            launchType="FARGATE",
            placementConstraints=[{"type": "memberOf", "expression": f"attribute:pgarena.site == {GCP}"}],
        )
