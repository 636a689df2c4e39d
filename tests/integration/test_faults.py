"""Fault injection against real PostgreSQL in the local runtime.

Two campaigns run at once, each with a healthy control target. Faults are injected from the
outside, as they happen in the field: a server crash and restart, an administrator terminating the
benchmark's backends, a worker killed (its heartbeat stops), a host name that does not resolve,
other sessions filling the server before preflight and after it, a statement timeout set after
preflight. Each case must end with the campaign finished, every step's status and error kind as the
fault dictates, the controls ranked and evidence kept.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pg8000.dbapi
import pytest

from pgarena.aws.launch import container_environment, step_field
from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.runtime import TABLE, LocalRuntime
from pgarena.model.layout import raw_key
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

CLIENTS = 2
# A fault lands 2 s after the run's clients connect (wait_for_run): a 5 s run left 3 s, which a full suite on
# a loaded 2-core machine once overran for all three in-run faults (each target then succeeded).
DURATION_S = 12
# Short enough to keep the lost-worker case quick, long enough that a healthy worker starved of CPU on a
# loaded 2-core machine still beats in time (6 s was not: the control was once declared lost).
HEARTBEAT_TIMEOUT_S = 20
MAX_CONNECTIONS = 12
# Tenant sessions that leave the crowded server one slot short: 12 - 7 others - 2 pgarena - 2 margin = 1 < 2.
CROWD = 7
FAST = {"fsync": "off", "synchronous_commit": "off", "shared_buffers": "16MB", "max_connections": MAX_CONNECTIONS}
WORKLOAD = {
    "name": "tpcb",
    "tool": "pgbench",
    "init": {"scale": 1},
    "run": {"clients": CLIENTS, "jobs": 1, "duration_s": DURATION_S, "progress_s": 1},
}
INJECT_DEADLINE_S = 60
# Far shorter than loading scale 1 takes (100,000 rows copied, then indexed).
STATEMENT_TIMEOUT = "2s"  # the load waits this long on the lock; the run's statements take milliseconds


def connect(endpoint, application_name="fault-injector"):
    conn = pg8000.dbapi.connect(
        host="127.0.0.1", port=endpoint.port, user="postgres", database="postgres", application_name=application_name
    )
    conn.autocommit = True
    return conn


def target(name, server, **endpoint):
    return {
        "name": name,
        "provider": "self-hosted",
        "endpoint": {"host": "127.0.0.1", "port": server.port, "user": "postgres", "sslmode": "disable", **endpoint},
    }


def wait_for_run(endpoint):
    """Block until the benchmark's clients are connected (the run, not the one-connection load), then let
    it print progress and upload a chunk of raw output."""
    deadline = time.monotonic() + INJECT_DEADLINE_S
    conn = connect(endpoint)
    try:
        cursor = conn.cursor()
        while time.monotonic() < deadline:
            # the run's clients share one application_name; the load has one client backend (and, while it
            # builds indexes, parallel workers under the same name)
            cursor.execute(
                "select coalesce(max(n), 0) from (select count(*) as n from pg_stat_activity"
                " where backend_type = 'client backend' and application_name like 'pgarena/%%'"
                " group by application_name) as per_step"
            )
            if cursor.fetchone()[0] >= CLIENTS:
                time.sleep(2.0)
                return
            time.sleep(0.1)
    finally:
        conn.close()
    raise TimeoutError("the run never started")


class Injector:
    """Runs each fault in a thread once its moment comes; keeps what went wrong for the assertions."""

    def __init__(self):
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []
        self.done: dict[str, float] = {}
        self.stop = threading.Event()

    def at(self, name, fault, *args):
        def run():
            try:
                fault(*args)
                self.done[name] = time.monotonic()
            except Exception as error:  # reported by the test that depends on it
                self.errors.append(f"{name}: {type(error).__name__}: {error}")

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)


def crash_and_restart(server):
    wait_for_run(server.endpoint)
    server.restart("immediate")


def terminate_backends(server):
    wait_for_run(server.endpoint)
    conn = connect(server.endpoint)
    conn.cursor().execute("select pg_terminate_backend(pid) from pg_stat_activity where application_name like 'pgarena/%%'")
    conn.close()


def kill_worker(server, runtime, campaign_id, step_id):
    """SIGKILL the worker running `step_id` and the tool it started, as a Fargate task dies, once it has
    uploaded a chunk of the run's output with progress in it (on a loaded machine the first chunk can come
    later than the 2 s wait_for_run allows: the worker had then uploaded nothing to keep)."""
    wait_for_run(server.endpoint)
    wait_for_text(runtime, raw_key(campaign_id, step_id, "pgbench.log"), "progress:")
    os.killpg(_worker_running(runtime, step_id), signal.SIGKILL)


def _worker_running(runtime, step_id):
    """The pid of the worker running `step_id`: the one started for it (its RunTask environment names
    it), or the warm worker whose slot holds it (pgarena.aws.worker_slots: busy with that assignment;
    its id is host:pid:nonce)."""
    for process in list(runtime.workers.processes.values()):
        if process.poll() is not None:
            continue
        environ = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
        step = next((e[len(b"PGARENA_STEP=") :] for e in environ if e.startswith(b"PGARENA_STEP=")), b"{}")
        if json.loads(step).get("step_id") == step_id:
            return process.pid
    slots = runtime.dynamodb.scan(
        TableName=TABLE, FilterExpression="begins_with(pk, :w)", ExpressionAttributeValues={":w": {"S": "worker#"}}
    )
    for item in slots["Items"]:
        assignment = json.loads(item.get("assignment", {}).get("S", "{}"))
        if item["state"]["S"] == "busy" and assignment.get("step", {}).get("step_id") == step_id:
            return int(item["worker"]["S"].split(":")[1])
    raise LookupError(f"no worker runs {step_id}")


def wait_for_key(runtime, key):
    """Block until `key` is in the results bucket."""
    deadline = time.monotonic() + INJECT_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            runtime.s3.head_object(Bucket="pgarena-local-results", Key=key)
            return
        except Exception:
            time.sleep(0.05)
    raise TimeoutError(f"{key} never appeared")


def wait_for_text(runtime, key, text):
    """Block until `key` is in the results bucket with `text` in it."""
    deadline = time.monotonic() + INJECT_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            if text in runtime.s3.get_object(Bucket="pgarena-local-results", Key=key)["Body"].read().decode():
                return
        except runtime.s3.exceptions.NoSuchKey:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{key} never held {text!r}")


def wait_for_preflight(runtime, campaign_id, name):
    """Block until preflight has written its evidence for target `name`: it has taken the budget and closed its
    sessions, and the worker that loads the data is not started yet."""
    wait_for_key(runtime, f"{campaign_id}/raw/{name}/preflight/preflight.json")


def squeeze_after_preflight(server, runtime, campaign_id, name, stop, held):  # noqa: PLR0913  # the fault's server, runtime and campaign
    """Once preflight has taken the budget, other sessions take the slots left (a provider's agents, another
    application): the load's one connection still finds a slot, the run's two are refused."""
    wait_for_preflight(runtime, campaign_id, name)
    while not stop.is_set():  # take every slot at once, then take back any slot a finished step frees
        try:
            held.append(connect(server.endpoint, application_name="squeezer"))
        except Exception:
            stop.wait(0.05)


def time_out_statements_after_preflight(server, runtime, campaign_id, name, done, held):  # noqa: PLR0913  # the fault's server, runtime and campaign, what it tells and what it holds
    """Once preflight has passed, a statement_timeout for the benchmark's role (every later session has it) and a
    lock the load must wait for: its first statement (pgbench -i drops pgbench_accounts) waits on the lock held
    here until the timeout cancels it. The run then finds no pgbench_branches and fails as the tool does; its
    few short statements stay far below the timeout. Nothing depends on how fast the load would have been.
    `done` is set once both hold: the target's workers wait for it (hold_workers)."""
    wait_for_preflight(runtime, campaign_id, name)
    conn = connect(server.endpoint)
    conn.cursor().execute(f"alter role bench set statement_timeout = '{STATEMENT_TIMEOUT}'")
    conn.close()
    locker = connect(server.endpoint)
    locker.autocommit = False
    cursor = locker.cursor()
    cursor.execute("create table if not exists pgbench_accounts (aid int)")
    cursor.execute("lock table pgbench_accounts in access exclusive mode")
    held.append(locker)  # kept, lock and all, until the campaigns end
    done.set()


def hold_workers(runtime, name, until):
    """The ECS stand-in starts no worker for target `name` before `until` is set (or the injection deadline
    passes): a fault set "after preflight" is then in place before the target's first worker connects."""
    run_task = runtime.workers.run_task

    def held(request, *where):  # RunTask's request, and where it was sent
        if step_field(container_environment(request.get("overrides", {})), "target") == name:
            until.wait(INJECT_DEADLINE_S)
        return run_task(request, *where)

    runtime.workers.run_task = held


@pytest.fixture(scope="module")
def servers():
    names = ["healthy", "restarted", "terminated", "crowded", "squeezed", "impatient", "steady", "lost"]
    pgs = {name: EmbeddedProcess(name, FAST) for name in names}
    threads = [threading.Thread(target=pg.start) for pg in pgs.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # the benchmark's own role on the impatient server: its statement_timeout is set once preflight has passed
    conn = connect(pgs["impatient"].endpoint)
    conn.cursor().execute("create role bench superuser login")
    conn.close()
    yield pgs
    for pg in pgs.values():
        pg.stop()


@pytest.fixture(scope="module")
def faults(servers, tmp_path_factory):
    main = parse_campaign(
        {
            "campaign": "faults",
            "target_concurrency": 8,
            "connections": {"policy": "fail", "monitor_interval_s": 0.5, "lease_wait_s": 0},
            "targets": [
                # resolved once at preflight; the workers connect to the address, TLS (if any) checks the name
                target("healthy", servers["healthy"], host="localhost", use_resolved_address=True),
                target("restarted", servers["restarted"]),
                target("terminated", servers["terminated"]),
                target("crowded", servers["crowded"]),
                target("squeezed", servers["squeezed"]),
                target("impatient", servers["impatient"], user="bench"),
                {
                    "name": "unresolvable",
                    "provider": "azure",
                    "endpoint": {"host": "pgarena-nowhere.invalid", "user": "postgres", "sslmode": "disable"},
                },
            ],
            "workloads": [WORKLOAD],
        }
    )
    lost = parse_campaign(
        {
            "campaign": "faults-lost",
            "target_concurrency": 2,
            "heartbeat_timeout_s": HEARTBEAT_TIMEOUT_S,
            "connections": {"policy": "fail", "monitor_interval_s": 0.5, "lease_wait_s": 0},
            "targets": [target("steady", servers["steady"]), target("lost", servers["lost"])],
            "workloads": [WORKLOAD],
        }
    )
    tenants = [connect(servers["crowded"].endpoint, application_name="tenant") for _ in range(CROWD)]
    held: list = []
    injector = Injector()
    with LocalRuntime(tmp_path_factory.mktemp("fault-results")) as runtime:
        # Given both campaigns started, and each fault waiting for its moment
        impatient_set = threading.Event()
        hold_workers(runtime, "impatient", impatient_set)
        main_run, lost_run = runtime.start(main), runtime.start(lost)
        injector.at("restarted", crash_and_restart, servers["restarted"])
        injector.at("terminated", terminate_backends, servers["terminated"])
        injector.at("lost", kill_worker, servers["lost"], runtime, lost_run.campaign_id, "lost/tpcb/c2-r1")
        injector.at(
            "squeezed",
            squeeze_after_preflight,
            servers["squeezed"],
            runtime,
            main_run.campaign_id,
            "squeezed",
            injector.stop,
            held,
        )
        injector.at(
            "impatient",
            time_out_statements_after_preflight,
            servers["impatient"],
            runtime,
            main_run.campaign_id,
            "impatient",
            impatient_set,
            held,
        )
        # When they run to their end
        runs = {"main": runtime.wait(main_run), "lost": runtime.wait(lost_run)}
        injector.join()
    for conn in [*tenants, *held]:
        conn.close()
    return runs, injector


def result(run, name):
    return next(t for t in run.results.targets if t.name == name)


# What each fault must leave: the target's status and error kind, then its load's and its run's. A target that
# fails at preflight runs no step (not_run); a fault during the run, or sessions taking the slots after preflight,
# leave the load (one connection) succeeded; a timeout set after preflight cancels the load while it copies the
# rows, and the run then fails on the empty tables it left.
OK = ("succeeded", None)
EXPECTED = {
    ("main", "healthy"): (OK, [OK], [OK]),
    ("main", "restarted"): (("failed", "server_restarted"), [OK], [("failed", "server_restarted")]),
    ("main", "terminated"): (("failed", "server_closed_connection"), [OK], [("failed", "server_closed_connection")]),
    ("main", "crowded"): (("failed", "budget_refused"), [("failed", "not_run")], [("failed", "not_run")]),
    ("main", "squeezed"): (("failed", "too_many_clients"), [OK], [("failed", "too_many_clients")]),
    ("main", "impatient"): (
        ("failed", "statement_timeout"),
        [("failed", "statement_timeout")],
        [("failed", "tool_failed")],
    ),
    ("main", "unresolvable"): (("failed", "dns_failure"), [("failed", "not_run")], [("failed", "not_run")]),
    ("lost", "steady"): (OK, [OK], [OK]),
    ("lost", "lost"): (("failed", "worker_lost"), [OK], [("failed", "worker_lost")]),
}


def _status(entry):
    return (entry.status, entry.error.kind if entry.error else None)


def test_every_campaign_finishes_listing_every_target_in_order(faults):
    runs, injector = faults
    assert not injector.errors, injector.errors
    assert runs["main"].status == runs["lost"].status == "SUCCEEDED"
    assert {campaign: [t.name for t in run.results.targets] for campaign, run in runs.items()} == {
        "main": ["healthy", "restarted", "terminated", "crowded", "squeezed", "impatient", "unresolvable"],
        "lost": ["steady", "lost"],
    }


@pytest.mark.parametrize("campaign, name", list(EXPECTED), ids=[name for _, name in EXPECTED])
def test_each_fault_leaves_the_target_and_its_steps_with_their_status_and_kind(faults, campaign, name):
    runs, _ = faults
    t = result(runs[campaign], name)
    observed = (_status(t), [_status(x) for x in t.loads], [_status(x) for x in t.workloads])
    expected = EXPECTED[campaign, name]
    if name == "squeezed" and observed[1] == [("failed", "too_many_clients")]:
        # The squeeze races the load's single connection (the load starts as soon as preflight ends): when
        # the squeezer wins, the load is the step refused, for the same reason, and so is the run after it.
        expected = (expected[0], [("failed", "too_many_clients")], expected[2])
    assert observed == expected, t.error


def test_controls_are_ranked_and_only_they(faults):
    runs, _ = faults
    assert [r.target for r in runs["main"].results.ranking] == ["healthy"]
    assert [r.target for r in runs["lost"].results.ranking] == ["steady"]
    assert result(runs["lost"], "steady").workloads[0].tps > 0


def test_host_resolved_once_and_the_load_used_the_address(faults):
    runs, _ = faults
    healthy = result(runs["main"], "healthy")
    assert healthy.status == "succeeded", healthy.error
    assert healthy.server.address == "127.0.0.1" and healthy.server.postmaster_started_at
    assert healthy.workloads[0].tps > 0


def _raw_text(run, entry, name="pgbench.log"):
    path = next(p for p in entry.raw if p.endswith(name))
    return (run.results_dir / path).read_text()


def test_server_crash_and_restart_names_both_start_times_and_keeps_the_output(faults):
    runs, _ = faults
    t = result(runs["main"], "restarted")
    (w,) = t.workloads
    assert "pg_postmaster_start_time()" in w.error.message
    assert t.server.postmaster_started_at in w.error.message  # the start time preflight read, then the new one
    assert w.error.raw.endswith("pgbench.log")
    text = _raw_text(runs["main"], w)
    # pgbench saw the crash, unless (on a loaded machine) the restart landed after its last transaction:
    # then its summary is complete, and the restart is still caught by the start times above
    finished = "latency average" in text and "tps = " in text
    assert finished or "server closed the connection" in text or "terminating connection" in text
    assert "progress:" in text  # the output before the crash is kept


def test_terminated_backends_leave_the_administrators_message(faults):
    runs, _ = faults
    (w,) = result(runs["main"], "terminated").workloads
    assert "terminating connection due to administrator command" in _raw_text(runs["main"], w)


def test_killed_worker_leaves_the_output_it_uploaded(faults):
    runs, _ = faults
    (w,) = result(runs["lost"], "lost").workloads
    assert w.error.raw.endswith("pgbench.log")
    # the chunks uploaded while pgbench ran, up to about a second before the kill
    text = _raw_text(runs["lost"], w)
    assert "progress:" in text and "tps" in text


def test_unresolvable_host_names_the_host_and_keeps_preflight_evidence(faults):
    runs, _ = faults
    t = result(runs["main"], "unresolvable")
    assert "pgarena-nowhere.invalid" in t.error.message
    assert t.error.raw.endswith("preflight.json")
    evidence = json.loads((runs["main"].results_dir.parent / t.error.raw).read_text())
    assert evidence["error"]["kind"] == "dns_failure"


def test_budget_filled_before_preflight_is_refused_with_the_count_and_evidence(faults):
    runs, _ = faults
    t = result(runs["main"], "crowded")
    assert "needs 2 connections but only 1 are available" in t.error.message
    assert t.error.raw.endswith("preflight.json")
    evidence = json.loads((runs["main"].results_dir.parent / t.error.raw).read_text())
    assert evidence["error"]["kind"] == "budget_refused"


def test_budget_filled_after_preflight_leaves_the_servers_refusal(faults):
    runs, _ = faults
    (w,) = result(runs["main"], "squeezed").workloads
    assert "too many clients" in _raw_text(runs["main"], w)


def test_statement_timeout_leaves_the_cancelled_load_as_evidence(faults):
    runs, _ = faults
    t = result(runs["main"], "impatient")
    (load,) = t.loads
    assert t.error.raw == load.error.raw and t.error.raw.endswith("pgbench.log")
    assert "canceling statement due to statement timeout" in _raw_text(runs["main"], load)
