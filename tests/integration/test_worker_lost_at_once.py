"""A warm worker killed mid-step fails its step at once (issue 34, finding 4): the local ECS stand-in sees its
process exit and sends ECS's task state change to the task_stopped function, as EventBridge's rule does in
AWS, which finds the step the worker held in its slot and fails it with `worker_lost` and ECS's reason.

The heartbeat timeout is 590 s and the test's own time far below it: only the stop can have failed the
step, and the recorded failure says so (WorkerLost sent with SendTaskFailure, no TaskTimedOut)."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
from pathlib import Path

import pytest

from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.runtime import LocalRuntime
from pgarena.model.layout import raw_key
from pgarena.planning.campaign import parse_campaign
from tests.integration.test_faults import FAST, target, wait_for_run, wait_for_text

pytestmark = pytest.mark.integration
log = logging.getLogger(__name__)

# Far past the test's own time; below the run's timeout (its 300 s plus the 300 s margin), as validation requires.
HEARTBEAT_TIMEOUT_S = 590
RUN = "lost/tpcb/c2-r1"


@pytest.fixture(scope="module")
def server():
    pg = EmbeddedProcess("lost-at-once", FAST)
    pg.start()
    yield pg
    pg.stop()


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    with LocalRuntime(tmp_path_factory.mktemp("lost-at-once")) as rt:
        yield rt


def _warm_worker(runtime, step_id: str) -> int:
    """The pid of the campaign's one worker (one target, one shard: the phase's warm worker), which was
    started for another step (the load): its step's token is not the one in its task's overrides."""
    (pid,) = [p.pid for p in list(runtime.workers.processes.values()) if p.poll() is None]
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    started_for = next(e[len(b"PGARENA_STEP=") :] for e in environ if e.startswith(b"PGARENA_STEP="))
    assert json.loads(started_for)["step_id"] != step_id
    return pid


def _kill_mid_run(server, runtime, campaign_id, killed: list[int], errors: list[str]) -> None:
    try:
        wait_for_run(server.endpoint)
        wait_for_text(runtime, raw_key(campaign_id, RUN, "pgbench.log"), "progress:")
        pid = _warm_worker(runtime, RUN)
        os.killpg(pid, signal.SIGKILL)  # the worker and the tool it started, as a Fargate task dies
        killed.append(pid)
        log.warning("killed the warm worker %d mid-step", pid)  # shown with a failure: the kill happened
    except Exception as error:  # reported by the test
        errors.append(f"{type(error).__name__}: {error}")


# The campaign alone, far under its 590 s heartbeat timeout: a step failed in this time failed by the stop.
@pytest.mark.timeout(300, func_only=True)
def test_a_warm_worker_killed_mid_step_fails_its_step_at_once(server, runtime):
    # Given a campaign whose load and run go to one warm worker, heartbeat timeout 590 s
    campaign = parse_campaign(
        {
            "campaign": "lost-at-once",
            "heartbeat_timeout_s": HEARTBEAT_TIMEOUT_S,
            "connections": {"policy": "fail", "monitor_interval_s": 0.5, "lease_wait_s": 0},
            "targets": [target("lost", server)],
            "workloads": [
                {
                    "name": "tpcb",
                    "tool": "pgbench",
                    "init": {"scale": 1},
                    "run": {"clients": 2, "jobs": 1, "duration_s": 300, "progress_s": 1},
                }
            ],
        }
    )
    execution = runtime.start(campaign)
    killed: list[int] = []
    errors: list[str] = []
    # When the worker is killed (SIGKILL) while it runs the phase's second step
    injector = threading.Thread(target=_kill_mid_run, args=(server, runtime, execution.campaign_id, killed, errors))
    injector.start()
    run = runtime.wait(execution)
    injector.join(timeout=60)
    assert errors == [] and len(killed) == 1

    # Then the campaign ended, its run failed as worker_lost with ECS's reason for the stop
    assert run.results is not None, run.error
    (result,) = run.results.targets
    (workload,) = result.workloads
    assert workload.error is not None
    assert workload.error.kind == "worker_lost", workload.error
    assert "the worker's task stopped while its step ran (EssentialContainerExited)" in workload.error.message
    assert "exit code 137" in workload.error.message
    # And the failure was sent with SendTaskFailure, not a heartbeat (or step) timeout
    history = runtime.sfn.get_execution_history(executionArn=execution.arn, maxResults=1000)["events"]
    failed = [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]
    assert "WorkerLost" in failed
    assert not [e for e in history if e["type"] == "TaskTimedOut"]
