"""A container worker that cannot start (its image is not there) fails its step through ECS's task state
change (the local ECS stand-in sends it to the task_stopped function, as EventBridge's rule does in AWS),
long before the heartbeat timeout would: the step's error is `worker_did_not_start` with the reason."""

from __future__ import annotations

import subprocess

import pytest

from pgarena.local import containers
from pgarena.local.runtime import LocalRuntime
from pgarena.planning.campaign import parse_campaign
from tests.integration.test_container_workers import MATRIX as CONTAINER_MATRIX

pytestmark = pytest.mark.integration

MISSING_IMAGE = "pgarena-worker:not-built-anywhere"
# Long enough that a step failed within the test's own timeout can only have failed through the stop.
HEARTBEAT_TIMEOUT_S = 300
# test_container_workers' campaign, with a heartbeat timeout far past what the test waits
MATRIX = {**CONTAINER_MATRIX, "campaign": "did-not-start", "heartbeat_timeout_s": HEARTBEAT_TIMEOUT_S}


@pytest.fixture
def missing_image(monkeypatch):
    """A Docker daemon (tools/docker-here.sh), and workers started from an image that does not exist."""
    result = subprocess.run(
        ["bash", str(containers.REPO_ROOT / containers.DOCKER_HERE)], capture_output=True, text=True, timeout=1800, check=False
    )
    assert result.returncode == 0, f"{containers.DOCKER_HERE} failed:\n{result.stderr}"
    monkeypatch.setenv("DOCKER_HOST", result.stdout.strip().rsplit("export DOCKER_HOST=", 1)[-1])
    assert containers._docker("image", "inspect", MISSING_IMAGE).returncode != 0
    monkeypatch.setattr(containers, "build_image", lambda: MISSING_IMAGE)


@pytest.fixture
def runtime(missing_image, tmp_path):
    # The strict runtime, its workers containers of an image that is not there
    with LocalRuntime(tmp_path, aws_strict=True) as rt:
        yield rt


# The campaign alone (not the runtime's start: a synth, the assets), well under the heartbeat timeout.
@pytest.mark.timeout(120, func_only=True)
def test_a_container_worker_that_cannot_start_fails_its_step_with_the_reason(runtime):
    # Given the strict runtime with workers that cannot start
    # When a campaign runs (heartbeat timeout 300 s)
    run = runtime.run(parse_campaign(MATRIX))
    (execution,) = runtime.sfn.list_executions(stateMachineArn=runtime.machine_arn)["executions"]
    history = runtime.sfn.get_execution_history(executionArn=execution["executionArn"], maxResults=1000)["events"]

    # Then the campaign ends with its target failed: its first step's worker did not start, and the error
    # says why, in Docker's words (ECS's stoppedReason in AWS)
    assert run.results is not None, run.error
    (target,) = run.results.targets
    assert target.status == "failed"
    assert target.error is not None
    assert target.error.kind == "worker_did_not_start", target.error
    assert "CannotStartContainerError" in target.error.message and MISSING_IMAGE in target.error.message
    # and the failure came from the stop, sent with SendTaskFailure, not from a heartbeat timeout
    failed = [e["taskFailedEventDetails"] for e in history if e["type"] == "TaskFailed"]
    assert failed and {f["error"] for f in failed} == {"WorkerDidNotStart"}
    assert not [e for e in history if e["type"] == "TaskTimedOut"]
