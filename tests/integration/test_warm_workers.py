"""Warm workers in a real local campaign: one worker process serves a phase's steps on its slot, and a
worker killed between steps is replaced for the next step, which succeeds."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.local.runtime import TABLE, LocalRuntime
from pgarena.model.warm import WorkerSlot
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

WAIT_S = 300  # generous: a loaded 2-core machine


def matrix(name: str, targets: int, repetitions: int, clients: list[int]) -> dict:
    return {
        "campaign": name,
        "repetitions": repetitions,
        "targets": [
            {"name": f"t{i}", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}} for i in range(targets)
        ],
        "workloads": [
            {"name": "tpcb", "tool": "pgbench", "init": {"scale": 1}, "run": {"clients": clients, "jobs": 1, "duration_s": 1}}
        ],
    }


def summaries(run) -> list[dict]:
    return [json.loads(path.read_text()) for path in run.results_dir.glob("raw/**/summary.json")]


def test_a_phases_steps_share_one_worker_process_and_runtask_runs_once_per_target_and_phase(tmp_path):
    # Given 2 targets x 3 client counts x 2 repetitions (two phases)
    with LocalRuntime(tmp_path / "results") as runtime:
        # When the campaign runs
        run = runtime.wait(runtime.start(parse_campaign(matrix("warm", 2, 2, [1, 2, 3]))))
        run_tasks = len(runtime.workers.tasks)
    assert run.status == "SUCCEEDED", run.error
    assert all(t.status == "succeeded" for t in run.results.targets), [(t.name, t.error) for t in run.results.targets]
    done = summaries(run)
    by_slot: dict[tuple[str, int], list[dict]] = {}
    for summary in done:
        by_slot.setdefault((summary["target"], summary["repetition"]), []).append(summary)
    # Then RunTask ran once per target and phase, not once per step
    assert len(done) > run_tasks == len(by_slot) == 4
    # And each phase's steps ran on one worker process, which counted them in order
    for steps in by_slot.values():
        assert len({s["worker"]["worker_id"] for s in steps}) == 1
        assert sorted(s["worker"]["step_of_worker"] for s in steps) == list(range(1, len(steps) + 1))
    assert len({s["worker"]["worker_id"] for s in done}) == 4


def _kill_while_idle(runtime: LocalRuntime, slot: WorkerSlot, finished: callable) -> str:
    """SIGKILL the slot's worker while it waits between steps, before any next step was offered to it:
    stopped first (SIGSTOP), then killed only if its slot still shows it idle (an offer it may be taking
    would make the step it runs lost instead). The killed worker's id."""
    slots = DynamoWorkerSlots(runtime.dynamodb, TABLE)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not finished():
        state = slots.read(slot)
        if state is not None and state.state == "idle":
            pid = int(state.worker.split(":")[1])  # host:pid:nonce (a process, not a container, here)
            os.kill(pid, signal.SIGSTOP)
            now = slots.read(slot)
            if now is not None and now.state == "idle" and now.worker == state.worker:
                os.kill(pid, signal.SIGKILL)
                return state.worker
            os.kill(pid, signal.SIGCONT)  # a step was offered meanwhile: let it run, try at the next one
        time.sleep(0.01)
    pytest.fail("the worker was never caught idle between steps")


def test_a_worker_killed_between_steps_is_replaced_and_the_next_step_succeeds(tmp_path):
    # Given a campaign of one target with several steps in its one phase
    with LocalRuntime(tmp_path / "results") as runtime:
        execution = runtime.start(parse_campaign(matrix("killed", 1, 1, [1, 2, 3, 4, 5, 6])))
        slot = WorkerSlot(campaign_id=execution.campaign_id, phase=1, target=0, shard=0)
        # When its worker is killed while it waits between two steps
        status = lambda: runtime.sfn.describe_execution(executionArn=execution.arn)["status"]  # noqa: E731
        killed = _kill_while_idle(runtime, slot, lambda: status() != "RUNNING")
        run = runtime.wait(execution)
        run_tasks = len(runtime.workers.tasks)
    # Then the campaign succeeded with every step: the next step ran on a new worker
    assert run.status == "SUCCEEDED", run.error
    (target,) = run.results.targets
    assert target.status == "succeeded", target.error
    done = summaries(run)
    assert len(done) == 7 and all(s["status"] == "succeeded" for s in done)
    workers = {s["worker"]["worker_id"] for s in done}
    assert killed in workers and len(workers) == 2 == run_tasks
    # And the results say the phase's steps ran on two workers
    assert target.worker_changes and "on 2 workers" in target.worker_changes[0]
