"""A worker task that stopped without answering its step fails that step at once (pgarena.aws.task_stopped),
from ECS's task state change, whatever its stop code: one that never ran, with worker_did_not_start; one that
stopped mid-step, with worker_lost, the step its slot says it held. A worker that held no step (idle, gone,
replaced at its slot), or a token no longer waited for, is left alone."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from functions import dependencies
from functions.task_stopped import handler as task_stopped_handler
from pgarena.aws.deployment import rule_pattern
from pgarena.aws.executions import StepFunctionsExecutions
from pgarena.aws.task_stopped import TaskStateChange, matches, stopped_worker
from pgarena.campaign.stopped_worker import StepFailure, fail_step
from pgarena.local.endpoints import EcsEndpoint, LambdaContext
from pgarena.local.signing import RunKeys, new_credentials
from pgarena.model.errors import Caught, ErrorKind, error_info

EVENT = Path(__file__).parents[1] / "fixtures" / "events" / "ecs_task_stopped_pull_error.json"


def _event(**detail: Any) -> dict[str, Any]:
    event = json.loads(EVENT.read_text())
    event["detail"].update(detail)
    return event


def test_a_task_that_failed_to_start_names_its_step_token_and_ecs_reason():
    # Given ECS's state change for a worker whose image could not be pulled
    change = TaskStateChange.model_validate(_event())

    # When reading which step it leaves unanswered
    worker = stopped_worker(change, _no_slot)

    # Then it is the step's token, and the error carries the stoppedReason and the container's reason
    assert worker is not None
    assert (worker.step_id, worker.task_token) == ("t1/sel/c4/r1/run", "AQCEAAAAKgAAAAMAAAAAAAAAAfake-token")
    assert worker.error.kind == ErrorKind.WORKER_DID_NOT_START
    assert "TaskFailedToStart" in worker.error.message
    assert (
        "CannotPullContainerError: pull image manifest has been retried 7 time(s): failed to resolve ref" in worker.error.message
    )
    assert worker.error.message.count("CannotPullContainerError") == 1  # the container's reason, said once
    assert "fake-token" not in repr(worker)  # the token is never printed


def test_a_containers_own_reason_and_exit_code_are_added():
    container = {"name": "worker", "reason": "CannotStartContainerError: exec format error", "exitCode": 255}
    worker = stopped_worker(
        TaskStateChange.model_validate(_event(stoppedReason="Task failed to start", containers=[container])), _no_slot
    )
    assert worker is not None
    assert worker.error.message.endswith(
        "Task failed to start; container worker: CannotStartContainerError: exec format error: exit code 255"
    )


@pytest.mark.parametrize(
    "detail",
    [
        {"lastStatus": "RUNNING", "stopCode": None},  # not stopped
        {"overrides": {"containerOverrides": [{"name": "worker", "environment": []}]}},  # not a pgarena worker
    ],
)
def test_a_running_task_or_one_that_is_not_a_worker_is_left_alone(detail):
    assert stopped_worker(TaskStateChange.model_validate(_event(**detail)), _no_slot) is None


def _no_slot(region, table, slot):
    pytest.fail("no slot to read")


def test_the_step_fails_with_the_kind_the_campaign_reads_back():
    # Given the unstarted worker and Step Functions answering SendTaskFailure
    worker = stopped_worker(TaskStateChange.model_validate(_event()), _no_slot)
    assert worker is not None
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    error = "WorkerDidNotStart"
    with Stubber(sfn) as stub:
        stub.add_response(
            "send_task_failure", {}, {"taskToken": worker.task_token, "error": error, "cause": worker.error.cause()}
        )

        # When failing its step through the Executions port on Step Functions
        failure = fail_step(worker, lambda region: StepFunctionsExecutions(sfn))

        # Then the call went out as expected, and the Catch's failure reads back as the same error
        stub.assert_no_pending_responses()
    assert failure == StepFailure(step_id="t1/sel/c4/r1/run", failed=True)
    assert error_info(Caught({"Error": error, "Cause": worker.error.cause()})) == worker.error


@pytest.mark.parametrize("code", ["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"])
def test_a_token_no_longer_waited_for_is_not_an_error(code):
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    with Stubber(sfn) as stub:
        stub.add_client_error("send_task_failure", service_error_code=code)
        assert StepFunctionsExecutions(sfn).fail_task("token", "WorkerDidNotStart", "{}") is False


def test_another_send_task_failure_error_is_raised():
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    with Stubber(sfn) as stub, pytest.raises(Exception, match="ThrottlingException"):
        stub.add_client_error("send_task_failure", service_error_code="ThrottlingException")
        StepFunctionsExecutions(sfn).fail_task("token", "WorkerDidNotStart", "{}")


def test_the_handler_ignores_a_running_task(monkeypatch):
    # Given a change of a task still running (no AWS call may be made: no client is reachable)
    monkeypatch.setattr(dependencies, "client", lambda *a, **k: pytest.fail("no call expected"))

    # When the handler gets it / Then it fails no step
    answer = task_stopped_handler.handler(_event(lastStatus="RUNNING"), LambdaContext("pgarena-task-stopped"))
    assert answer == {"failed_step": False}


class _Unstartable:
    """Workers as `docker run` of an image that is not there: the client prints the daemon's refusal, exits 125."""

    def start(self, task_id, env, log):
        return subprocess.Popen(
            ["sh", "-c", "echo 'docker: Error response from daemon: No such image: gone:1.'; exit 125"], stdout=log
        )

    def kill(self, task_id):
        pass

    def container(self, task_id):
        return None

    def never_ran(self, exit_code):
        return exit_code == 125


class _Unexecutable(_Unstartable):
    def start(self, task_id, env, log):
        raise PermissionError(13, "Permission denied", "/usr/bin/worker")


def _run_task(endpoint: EcsEndpoint, credentials) -> str:
    session = boto3.session.Session(credentials.access_key_id, credentials.secret_access_key, region_name="us-east-1")
    client = session.client("ecs", endpoint_url=endpoint.url)
    environment = [{"name": "PGARENA_TASK_TOKEN", "value": "tok"}, {"name": "PGARENA_STEP", "value": '{"step_id": "s1"}'}]
    return client.run_task(
        cluster="c",
        taskDefinition="td",
        startedBy="pgarena",
        overrides={"containerOverrides": [{"name": "worker", "environment": environment}]},
    )["tasks"][0]["taskArn"]


@pytest.mark.parametrize(
    ("workers", "reason"),
    [(_Unstartable(), "No such image: gone:1."), (_Unexecutable(), "Permission denied")],
    ids=["container-refused", "exec-failed"],
)
def test_the_local_ecs_reports_a_worker_that_never_ran_as_ecs_does(tmp_path, workers, reason):
    # Given the local ECS stand-in with workers that cannot start, and a rule's target collecting changes
    credentials = new_credentials()
    changes: list[dict[str, Any]] = []
    with EcsEndpoint({}, tmp_path, RunKeys([credentials]), workers=workers, on_stopped=changes.append) as endpoint:
        # When RunTask starts one (it succeeds, as ECS's does: the task stops afterwards)
        task_arn = _run_task(endpoint, credentials)
        for process in list(endpoint.processes.values()):
            process.wait(timeout=60)
        for thread in [t for t in threading.enumerate() if t.name.startswith("task-")]:
            thread.join(timeout=60)

    # Then one state change went out, in ECS's shape, that task_stopped reads as the step's unstarted worker
    assert len(changes) == 1
    worker = stopped_worker(TaskStateChange.model_validate(changes[0]), _no_slot)
    assert worker is not None and worker.task_arn == task_arn and worker.step_id == "s1" and worker.task_token == "tok"
    assert changes[0]["detail-type"] == "ECS Task State Change" and changes[0]["detail"]["startedBy"] == "pgarena"
    assert reason in worker.error.message


def test_the_step_is_failed_in_the_home_region_the_worker_reports_to(monkeypatch):
    # Given the stop of a worker in a site region, whose overrides name the home region it reports to
    environment = [*_event()["detail"]["overrides"]["containerOverrides"][0]["environment"]]
    environment.append({"name": "RESULTS_REGION", "value": "us-east-1"})
    event = _event(taskArn="arn:aws:ecs:eu-west-1:111122223333:task/pgarena-workers/abc")
    event["detail"]["overrides"]["containerOverrides"][0]["environment"] = environment
    regions = []

    class Sfn:
        def send_task_failure(self, **kwargs):
            pass

    def client(service, region=None):
        regions.append((service, region))
        return Sfn()

    monkeypatch.setattr(dependencies, "client", client)
    # When this region's task_stopped function gets it (its own region eu-west-1)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    answer = task_stopped_handler.handler(event, LambdaContext("pgarena-task-stopped"))
    # Then it fails the step through the home region's Step Functions, where the token was issued
    assert answer["failed_step"] is True
    assert regions == [("stepfunctions", "us-east-1")]


def test_a_rule_takes_its_own_cluster_s_stopped_pgarena_tasks_only():
    home = "arn:aws:ecs:us-east-1:111122223333:cluster/PgarenaCluster"
    site = "arn:aws:ecs:eu-west-1:111122223333:cluster/pgarena-workers"
    stopped = _event()
    # The fixture's stop is the home cluster's: the home rule takes it, a site's does not
    assert matches(rule_pattern(home), stopped)
    assert not matches(rule_pattern(site), stopped)
    assert matches(rule_pattern(site), _event(clusterArn=site))
    # nor any rule a running task, a task pgarena did not start, or an event of another source
    assert not matches(rule_pattern(home), _event(lastStatus="RUNNING"))
    assert not matches(rule_pattern(home), _event(startedBy="ecs-svc/123"))
    assert not matches(rule_pattern(home), {**stopped, "source": "aws.states"})
    without = _event()
    del without["detail"]["startedBy"]
    assert not matches(rule_pattern(home), without)


class _Runs(_Unstartable):
    """Workers that run until killed."""

    def start(self, task_id, env, log):
        return subprocess.Popen(["sleep", "600"], stdout=log)


def test_the_local_ecs_reports_a_worker_that_ran_and_stopped_as_ecs_does(tmp_path):
    # Given the local ECS stand-in, two running workers, and a rule's target collecting changes
    credentials = new_credentials()
    changes: list[dict[str, Any]] = []
    with EcsEndpoint({}, tmp_path, RunKeys([credentials]), workers=_Runs(), on_stopped=changes.append) as endpoint:
        killed, stopped = _run_task(endpoint, credentials), _run_task(endpoint, credentials)
        # When one is killed (SIGKILL: out of memory, its host gone) and the other stopped by StopTask
        endpoint.processes[killed].kill()
        endpoint.stop_task(stopped, reason="campaign cancelled")
        for process in list(endpoint.processes.values()):
            process.wait(timeout=60)
        for thread in [t for t in threading.enumerate() if t.name.startswith("task-")]:
            thread.join(timeout=60)

    # Then each stop went out as ECS sends it for a task that ran: its start, its stop code, its exit code
    details = {change["detail"]["taskArn"]: change["detail"] for change in changes}
    assert set(details) == {killed, stopped}
    assert details[killed]["stopCode"] == "EssentialContainerExited" and details[killed]["containers"][0]["exitCode"] == 137
    assert details[stopped]["stopCode"] == "UserInitiated" and details[stopped]["stoppedReason"] == "campaign cancelled"
    assert all(detail["startedAt"] for detail in details.values())
    # And task_stopped reads them as stops of workers that ran (no slot: the step it was started with)
    worker = stopped_worker(TaskStateChange.model_validate(changes[0]), lambda *a: pytest.fail("no slot"))
    assert worker is not None and worker.error.kind == ErrorKind.WORKER_LOST and worker.task_token == "tok"
