"""The step use case (pgarena.campaign.step) with in-memory fakes of its ports: a fake tool prints a real
pgbench's canned output; no moto, no boto3, no tool process, no server."""

from __future__ import annotations

import json

import pytest

from pgarena.campaign.step.serve import serve_step
from pgarena.campaign.step.slot import Seat, serve_slot
from pgarena.model.errors import ErrorKind
from pgarena.model.plan import Step
from pgarena.model.warm import Assignment, WorkerSlot
from tests.unit.step_fakes import FakeProcesses, Fakes, FakeSlots, FakeToken, FakeTool, a_run_step, canned

PASSWORD = "s3cr3t-pw"
SUCCEEDED = "pg15_run_tpcb_c4_j2_T5_P1.txt"


@pytest.fixture
def step(monkeypatch: pytest.MonkeyPatch) -> Step:
    monkeypatch.setenv("PGARENA_PW_A", PASSWORD)
    monkeypatch.setenv("PGARENA_PGBENCH", "/opt/fake/bin/pgbench")  # named in argv; never started
    return a_run_step()


def _raw_key(step: Step) -> str:
    return f"{step.raw_prefix}/pgbench.log"


def test_a_step_that_succeeds_stores_its_summary_with_the_tools_figures_and_answers_its_token(step):
    # Given a tool that prints a real pgbench's run and exits 0
    fakes, lines = Fakes(), canned(SUCCEEDED)
    processes = FakeProcesses(FakeTool(lines))
    # When the worker serves the step
    error = serve_step(Assignment(step=step, task_token="t1", last=True), fakes.worker(processes), 1)
    # Then it succeeded: its figures are the ones the tool printed
    assert error is None
    [summary] = fakes.store.stored
    assert summary.status == "succeeded" and summary.error is None and summary.exit_code == 0
    assert summary.tps == pytest.approx(1582.425766) and summary.transactions == 7905
    assert summary.latency_ms.avg == 2.521 and [p.tps for p in summary.progress][:2] == [1318.9, 1494.9]
    # And the raw output is kept as printed, the summary beside it, with the worker's facts and the monitor's report
    assert summary.raw[0] == _raw_key(step) and fakes.store.files[_raw_key(step)] == "".join(lines)
    assert fakes.store.documents[f"{step.raw_prefix}/summary.json"]["tps"] == summary.tps
    assert summary.worker is not None and (summary.worker.worker_id, summary.worker.step_of_worker) == ("w1", 1)
    assert summary.worker.tools == {"pgbench": "pgbench (fake) 1.0"}
    assert summary.connections is not None and summary.connections.peak_benchmark == 4
    assert summary.harness is not None and summary.raw_files[_raw_key(step)].size_bytes == len("".join(lines).encode())
    # And the task token was beaten, then told the step succeeded
    token = fakes.tokens["t1"]
    assert token.beats >= 1 and token.succeeded == [json.dumps({"step_id": step.step_id})] and token.failed == []
    # And the tool's environment carried the password, its argv did not; nothing stopped the worker
    argv, env = processes.started[0]
    assert env["PGPASSWORD"] == PASSWORD and not any(PASSWORD in arg for arg in argv)
    assert fakes.stops == [] and fakes.hard_stops == []


def test_a_tool_that_fails_is_recorded_with_its_kind_and_its_raw_output(step):
    # Given a pgbench whose script divides by zero: it aborts and exits 2
    fakes, lines = Fakes(), canned("pg15_run_aborted_divzero_c2_j2_T8_P1.txt")
    # When the worker serves the step
    error = serve_step(Assignment(step=step, task_token="t1", last=True), fakes.worker(FakeProcesses(FakeTool(lines, 2))), 1)
    # Then the step failed, classified from the tool's output, its raw output kept and named by the error
    assert error is not None and error.kind == ErrorKind.TOOL_FAILED
    [summary] = fakes.store.stored
    assert summary.status == "failed" and summary.exit_code == 2 and summary.error is not None
    assert summary.error.kind == error.kind and summary.error.raw == _raw_key(step)
    assert fakes.store.files[_raw_key(step)] == "".join(lines)
    # And the task failed with that kind
    assert [kind for kind, _ in fakes.tokens["t1"].failed] == [ErrorKind.TOOL_FAILED] and fakes.tokens["t1"].succeeded == []


def test_a_worker_replaced_at_its_slot_stops_waiting_and_claims_nothing(step):
    # Given a warm worker at its slot, whose slot another worker takes while it runs a step (taken for
    # lost), and which is offered the phase's next step there
    fakes, slots = Fakes(), FakeSlots("w1")
    worker = fakes.worker(FakeProcesses(FakeTool(canned(SUCCEEDED))))
    following = Assignment(step=step.model_copy(update={"step_id": "a/tpcb/next"}), task_token="t2", last=True)

    def serve(assignment: Assignment, n: int, renew) -> object:
        error = serve_step(assignment, worker, n, renew)
        slots.replace("w2", following)
        return error

    # When it serves its first step, then goes to wait at the slot
    seat = Seat(
        WorkerSlot(campaign_id="cid", phase=1, target=0, shard=0), slots, "w1", exit_now=fakes.worker(FakeProcesses()).exit_now
    )
    code = serve_slot(Assignment(step=step, task_token="t1", last=False), seat, serve)
    # Then it stops at its first read of the slot: no claim of the other worker's step, nothing else run
    assert code == 0 and slots.calls == ["finishing", "idle", "read"]
    assert "claim" not in slots.calls and "t2" not in fakes.tokens
    assert [s.step_id for s in fakes.store.stored] == [step.step_id] and fakes.tokens["t1"].succeeded


def test_a_refused_heartbeat_stops_the_worker_kills_the_tool_and_records_the_step_stopped(step):
    # Given a state machine that gave the step up (its heartbeat answers: the task is gone), and a tool
    # that keeps printing until the worker stops it
    fakes, lines = Fakes(), canned(SUCCEEDED)
    tool = FakeTool(lines, stop_after=3, wait_for_stop=True)
    fakes.tokens["t1"] = FakeToken(gone=True)
    # When the worker serves the step (its stop raises WorkerStopped where the tool's output is read)
    error = serve_step(
        Assignment(step=step, task_token="t1", last=True), fakes.worker(FakeProcesses(tool), stop=tool.interrupt), 1
    )
    # Then the refused beat stopped the worker, which killed the tool
    assert fakes.stops == ["stop"] and tool.killed
    # And the step is recorded stopped, with what the tool printed until then
    assert error is not None and error.kind == ErrorKind.WORKER_STOPPED
    [summary] = fakes.store.stored
    assert summary.status == "failed" and summary.error is not None and summary.error.kind == ErrorKind.WORKER_STOPPED
    assert summary.error.raw == _raw_key(step) and fakes.store.files[_raw_key(step)] == "".join(lines[:3])
    assert summary.worker is not None and summary.worker.worker_id == "w1"
    assert [kind for kind, _ in fakes.tokens["t1"].failed] == [ErrorKind.WORKER_STOPPED]


def test_a_cancel_signal_while_the_tool_runs_keeps_its_raw_output_and_records_the_worker_stopped(step):
    # Given a tool that the worker's SIGTERM (a cancelled campaign, ECS StopTask) interrupts after 4 lines
    fakes, lines = Fakes(), canned(SUCCEEDED)
    tool = FakeTool(lines, stop_after=4)
    # When the worker serves the step
    error = serve_step(Assignment(step=step, task_token="t1", last=True), fakes.worker(FakeProcesses(tool)), 1)
    # Then the tool was killed, its output until then uploaded, and the failure recorded as worker_stopped
    assert tool.killed and error is not None and error.kind == ErrorKind.WORKER_STOPPED
    assert fakes.store.files[_raw_key(step)] == "".join(lines[:4])
    [summary] = fakes.store.stored
    assert summary.error is not None and summary.error.kind == ErrorKind.WORKER_STOPPED and summary.error.raw == _raw_key(step)
    # And the state machine is told at once, by the worker's answer rather than a missed heartbeat
    assert [kind for kind, _ in fakes.tokens["t1"].failed] == [ErrorKind.WORKER_STOPPED] and fakes.stops == []


def test_a_run_reads_the_servers_counters_at_its_windows_edges_and_keeps_both_snapshots(step):
    # Given a server whose counters grow by one requested checkpoint and 100 commits over the window
    fakes = Fakes()
    # When the worker serves a run
    serve_step(Assignment(step=step, task_token="t1", last=True), fakes.worker(FakeProcesses(FakeTool(canned(SUCCEEDED)))), 1)
    [summary] = fakes.store.stored
    # Then the counters were read twice, the closing read last (after the tool exited)
    assert fakes.server.counter_reads == [False, True]
    # And the summary has their deltas, what could not be read listed with its reason
    counters = summary.server_counters
    assert counters is not None and counters.window_s == 1.0 and counters.server_version_num == 180006
    assert counters.checkpoints is not None and (
        counters.checkpoints.checkpoints_req,
        counters.checkpoints.checkpoints_timed,
    ) == (1, 0)
    assert counters.database is not None and counters.database.xact_commit == 100 and counters.cache_hit_ratio == 1.0
    assert counters.unreadable == {"io": "permission denied for view pg_stat_io"}
    # And the two snapshots are kept as raw evidence, with their sha256, beside the tool's output
    key = f"{step.raw_prefix}/server-counters.json"
    assert counters.raw == key and key in summary.raw and summary.raw_files[key].sha256
    kept = json.loads(fakes.store.files[key])
    assert kept["after"]["database"]["xact_commit"] - kept["before"]["database"]["xact_commit"] == 100


def test_a_server_that_gives_no_counters_leaves_the_run_without_them_and_it_still_succeeds(step, monkeypatch):
    # Given a server whose counters cannot be read at all (it did not answer that connection)
    fakes = Fakes()
    monkeypatch.setattr(fakes.server, "counters", lambda step, closing=False: None)
    # When the worker serves a run
    worker = fakes.worker(FakeProcesses(FakeTool(canned(SUCCEEDED))))
    error = serve_step(Assignment(step=step, task_token="t1", last=True), worker, 1)
    # Then the run succeeded, without counters and without a snapshots file
    [summary] = fakes.store.stored
    assert error is None and summary.status == "succeeded" and summary.server_counters is None
    assert not any(key.endswith("server-counters.json") for key in summary.raw)
