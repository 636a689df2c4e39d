"""The local Lambda and ECS endpoints answer only requests signed with one of the run's keys, refuse
RunTask overrides that would run other code, and start workers from a clean environment, never as root."""

import json
import os
import sys

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from pgarena.aws.launch import run_task_request
from pgarena.local.endpoints import EcsEndpoint, LambdaEndpoint, ProcessWorkers, function_arn
from pgarena.local.signing import RunKeys, new_credentials
from pgarena.local.task_env import override_refusal, own_user, process_environment
from tests.unit.test_launch import ENV, step

NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"})


def client(service, credentials, url):
    session = boto3.session.Session(credentials.access_key_id, credentials.secret_access_key, region_name="us-east-1")
    return session.client(service, endpoint_url=url, config=NO_RETRIES)


def overrides(*environment):
    return {"containerOverrides": [{"name": "worker", "environment": [{"name": n, "value": v} for n, v in environment]}]}


@pytest.fixture
def run_key():
    return new_credentials()


@pytest.fixture
def ecs(tmp_path, monkeypatch, run_key):
    # A worker that exits at once, as this run's user: these tests are about what starts one.
    monkeypatch.setattr(sys, "executable", "/bin/true")
    with EcsEndpoint(worker_env={}, logs_dir=tmp_path, keys=RunKeys([run_key])) as endpoint:
        yield endpoint


@pytest.fixture
def lambdas(run_key):
    calls = []
    name = function_arn("validate").rsplit(":", 1)[1]
    with LambdaEndpoint({name: lambda event, context: calls.append(event) or {"ok": True}}, RunKeys([run_key])) as endpoint:
        yield endpoint, name, calls


ATTACK = {
    "cluster": "c",
    "taskDefinition": "td",
    "overrides": overrides(("PYTHONPATH", "/tmp/attacker"), ("PGARENA_STEP", "{}")),
}


def test_an_unsigned_run_task_is_refused_and_starts_no_worker(ecs):
    answer = requests.post(
        ecs.url,
        data=json.dumps(ATTACK),
        headers={"X-Amz-Target": "AmazonEC2ContainerServiceV20141113.RunTask", "Content-Type": "application/x-amz-json-1.1"},
        timeout=10,
    )
    assert answer.status_code == 403
    assert "not SigV4-signed" in answer.json()["message"]
    assert ecs.processes == {}


def test_a_run_task_signed_with_another_key_is_refused_and_starts_no_worker(ecs):
    with pytest.raises(ClientError) as refused:
        client("ecs", new_credentials(), ecs.url).run_task(**ATTACK)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert "a key this run did not issue" in str(refused.value)
    assert ecs.processes == {}


def test_a_run_task_whose_signature_does_not_match_is_refused(ecs, run_key):
    # The run's key id with another secret: only the signature tells them apart
    forged = run_key.__class__(run_key.user, run_key.access_key_id, "not-the-secret")
    with pytest.raises(ClientError, match="signature does not match"):
        client("ecs", forged, ecs.url).run_task(**ATTACK)
    assert ecs.processes == {}


@pytest.mark.parametrize("name", ["PYTHONPATH", "PYTHONSTARTUP", "LD_PRELOAD", "PATH", "AWS_ENDPOINT_URL", "PGARENA_PGBENCH"])
def test_a_signed_run_task_overriding_what_runs_code_is_refused(ecs, run_key, name):
    request = {"cluster": "c", "taskDefinition": "td", "overrides": overrides((name, "/tmp/attacker"), ("PGARENA_STEP", "{}"))}
    with pytest.raises(ClientError) as refused:
        client("ecs", run_key, ecs.url).run_task(**request)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert name in refused.value.response["Error"]["Message"]
    assert ecs.processes == {}


def test_the_launchers_own_overrides_pass():
    request = run_task_request(step(), "token-1", ENV)
    assert override_refusal(request["overrides"]["containerOverrides"][0]["environment"]) is None


def test_a_signed_run_task_starts_its_worker(ecs, run_key):
    answer = client("ecs", run_key, ecs.url).run_task(**{**ATTACK, "overrides": overrides(("PGARENA_STEP", "{}"))})
    assert list(ecs.processes) == [answer["tasks"][0]["taskArn"]]


def test_an_unsigned_or_foreign_invoke_is_refused_and_runs_no_handler(lambdas, run_key):
    endpoint, name, calls = lambdas
    unsigned = requests.post(f"{endpoint.url}/2015-03-31/functions/{name}/invocations", data=b"{}", timeout=10)
    assert unsigned.status_code == 403
    with pytest.raises(ClientError) as refused:
        client("lambda", new_credentials(), endpoint.url).invoke(FunctionName=name, Payload=b"{}")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert calls == []
    # and the run's own caller is answered
    answer = client("lambda", run_key, endpoint.url).invoke(FunctionName=name, Payload=b'{"x": 1}')
    assert json.loads(answer["Payload"].read()) == {"ok": True}
    assert calls == [{"x": 1}]


def test_a_worker_starts_from_a_clean_environment_and_not_as_root(tmp_path, monkeypatch, run_key):
    # Given a coordinator whose environment holds a secret and an interpreter setting of its own
    monkeypatch.setenv("PGARENA_COORDINATOR_ONLY", "secret")
    monkeypatch.setenv("PYTHONPATH", "/tmp/attacker")
    workers = ProcessWorkers(own_user())
    workers.command = ["/bin/sh", "-c", "id -u; env"]  # what the worker's process sees
    with EcsEndpoint(worker_env={"RESULTS_BUCKET": "b"}, logs_dir=tmp_path, keys=RunKeys([run_key]), workers=workers) as ecs:
        # When a task starts
        client("ecs", run_key, ecs.url).run_task(**{**ATTACK, "overrides": overrides(("PGARENA_STEP", "{}"))})
        (process,) = ecs.processes.values()
        assert process.wait(timeout=60) == 0
    uid, *lines = next(tmp_path.glob("worker-*.log")).read_text().splitlines()
    env = dict(line.split("=", 1) for line in lines if "=" in line)
    # Then it has the task's environment and the machine's basics, nothing else of the coordinator's
    assert env["RESULTS_BUCKET"] == "b" and env["PGARENA_STEP"] == "{}"
    assert "PGARENA_COORDINATOR_ONLY" not in env and "PYTHONPATH" not in env
    # and, when the coordinator is root, runs as a user of its own
    if os.geteuid() == 0:
        assert int(uid) != 0
        assert int(uid) == workers.user[0]
    else:
        assert int(uid) == os.geteuid()


def test_the_process_environment_keeps_absolute_path_folders_only():
    env = process_environment({"PGARENA_STEP": "{}"}, own_user=True, machine={"PATH": ".:bin:/usr/bin", "HOME": "/root"})
    assert env["PATH"] == "/usr/bin"
    assert env["HOME"] == "/nonexistent"
    assert env["PGARENA_STEP"] == "{}"
