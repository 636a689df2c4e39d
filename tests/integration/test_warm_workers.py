"""Warm workers in a real local campaign: one worker process serves a phase's steps on its slot; a
worker killed between steps is replaced for the next step, which succeeds; a phase cut short (its
target failed, the campaign stopped) closes its slots and the idle worker leaves at once, saying why."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from moto.dynamodb.exceptions import DynamodbException
from moto.dynamodb.models import DynamoDBBackend

from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.local.runtime import TABLE, LocalRuntime
from pgarena.model import layout
from pgarena.model.results import CampaignResults
from pgarena.model.warm import CAMPAIGN_ENDED, LEFT_CLOSED, TARGET_FAILED, WorkerSlot
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
    # And the actual cost counts the workers the steps recorded, the estimate the same four slots
    assert run.results.cost is not None and run.results.cost.actual_workers == 4


def _frozen_while_idle(runtime: LocalRuntime, slot: WorkerSlot, finished: callable) -> tuple[int, str]:
    """The slot's worker stopped (SIGSTOP) while it waits between steps, before any next step was offered
    to it: stopped first, then kept stopped only if its slot still shows it idle (an offer it may be
    taking would make the step it runs lost instead). Its pid and id."""
    slots = DynamoWorkerSlots(runtime.dynamodb, TABLE)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not finished():
        state = slots.read(slot)
        if state is not None and state.state == "idle":
            pid = int(state.worker.split(":")[1])  # host:pid:nonce (a process, not a container, here)
            os.kill(pid, signal.SIGSTOP)
            now = slots.read(slot)
            if now is not None and now.state == "idle" and now.worker == state.worker:
                return pid, state.worker
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
        pid, killed = _frozen_while_idle(runtime, slot, lambda: status() != "RUNNING")
        os.kill(pid, signal.SIGKILL)
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
    # And the results say the phase's steps ran on two workers, and its actual cost counts both
    assert target.worker_changes and "on 2 workers" in target.worker_changes[0]
    assert run.results.cost is not None and run.results.cost.actual_workers == 2


def _worker_gone(runtime: LocalRuntime, worker: str) -> bool:
    """Whether the worker process `host:pid:nonce` has exited (the runtime started it: its Popen knows)."""
    pid = int(worker.split(":")[1])
    return all(p.poll() is not None for p in runtime.workers.processes.values() if p.pid == pid)


def _wait_for(condition: callable, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"{what} within {WAIT_S} s")


# Fails a run at 2 clients and more (pgbench aborts the client whose id is 1), never at 1.
FAILS_FROM_TWO_CLIENTS = "\\if :client_id > 0\nSELECT 1/0;\n\\endif\nSELECT 1;\n"


def test_a_target_cut_short_mid_phase_closes_its_slot_and_its_idle_worker_leaves(tmp_path, monkeypatch):
    # Given a target whose run at 2 clients fails, and whose failure the results table refuses to record
    # (DynamoDB throttling past the state's retries): its Run Steps In Order fails, its run at 3 clients is
    # skipped, and its worker, idle after answering its failed step, has no next step coming
    real_put = DynamoDBBackend.put_item

    def throttled_failures(self, table_name, item_attrs, *args, **kwargs):
        if item_attrs.get("sk", {}).get("S", "").startswith("shard#"):  # Record Step Failure's items only
            raise DynamodbException("ProvisionedThroughputExceededException", "the table's throughput was exceeded")
        return real_put(self, table_name, item_attrs, *args, **kwargs)

    monkeypatch.setattr(DynamoDBBackend, "put_item", throttled_failures)
    campaign = matrix("cutshort", 1, 1, [1, 2, 3])
    campaign["workloads"][0]["run"]["scripts"] = [{"sql": FAILS_FROM_TWO_CLIENTS}]
    with LocalRuntime(tmp_path / "results") as runtime:
        # When the campaign runs
        run = runtime.wait(runtime.start(parse_campaign(campaign)))
        slots = DynamoWorkerSlots(runtime.dynamodb, TABLE)
        slot = WorkerSlot(campaign_id=run.campaign_id, phase=1, target=0, shard=0)
        worker = slots.read(slot).worker
        # Then its worker process ends
        _wait_for(lambda: _worker_gone(runtime, worker), "the cut-short target's worker exited")
        state = slots.read(slot)
    # And it left because its slot closed when its target failed, not after its idle time-out
    assert run.status == "SUCCEEDED", run.error
    assert (state.state, state.closed, state.left) == ("closed", TARGET_FAILED, LEFT_CLOSED)
    # And nothing finished is lost: its load and its 1-client run kept, the failed run with its worker's
    # summary, the skipped one not_run
    (target,) = run.results.targets
    assert target.status == "failed"
    assert [(w.clients, w.status, w.error.kind if w.error else None) for w in target.workloads] == [
        (1, "succeeded", None), (2, "failed", "tool_failed"), (3, "failed", "not_run")
    ]  # fmt: skip
    assert target.loads[0].status == "succeeded"
    assert {s["step_id"].rsplit("/", 1)[1] for s in summaries(run)} == {"init", "c1-r1", "c2-r1"}


def test_a_campaign_stopped_while_its_worker_waits_closes_the_slot_and_the_worker_leaves(tmp_path):
    # Given a campaign of one target with several steps in its one phase, its worker caught idle between
    # two steps (held there: SIGSTOP)
    with LocalRuntime(tmp_path / "results") as runtime:
        execution = runtime.start(parse_campaign(matrix("stopped", 1, 1, [1, 2, 3, 4, 5, 6])))
        slot = WorkerSlot(campaign_id=execution.campaign_id, phase=1, target=0, shard=0)
        status = lambda: runtime.sfn.describe_execution(executionArn=execution.arn)["status"]  # noqa: E731
        pid, worker = _frozen_while_idle(runtime, slot, lambda: status() != "RUNNING")
        # When the execution is stopped from outside (`aws stepfunctions stop-execution`: no StopTask for
        # its workers) and EventBridge's rule has finalize_stopped end it
        runtime.sfn.stop_execution(executionArn=execution.arn, error="Cancelled", cause="stopped from the console")
        runtime.execution_stopped(
            execution.arn, "ABORTED", runtime.sfn.describe_execution(executionArn=execution.arn)["startDate"]
        )
        os.kill(pid, signal.SIGCONT)
        # Then the worker, which no StopTask reached, ends at its next poll of its slot
        slots = DynamoWorkerSlots(runtime.dynamodb, TABLE)
        _wait_for(lambda: _worker_gone(runtime, worker), "the stopped campaign's idle worker exited")
        state = slots.read(slot)
        results = CampaignResults.model_validate(runtime.store.get_json(layout.results_key(execution.campaign_id)))
        finished = [s for s in runtime.store.summaries(execution.campaign_id) if s.status == "succeeded"]
    # And the slot says the campaign's end closed it and its worker left on finding it closed
    assert (state.state, state.closed, state.left) == ("closed", CAMPAIGN_ENDED.format("cancelled"), LEFT_CLOSED)
    # And nothing finished is lost: results.json is cancelled, every step that finished kept succeeded, the
    # rest cancelled
    (target,) = results.targets
    assert results.status == "cancelled"
    steps = [*target.loads, *target.workloads]
    assert target.loads[0].status == "succeeded" and len(steps) == 7
    assert sum(step.status == "succeeded" for step in steps) == len(finished) >= 1
    assert all(step.error.kind == "cancelled" for step in steps if step.status != "succeeded")
