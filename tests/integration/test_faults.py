"""Fault injection against real PostgreSQL in the local runtime.

Two campaigns run at once, each with a healthy control target. Faults are injected from the
outside, as they happen in the field: a server crash and restart, an administrator terminating the
benchmark's backends, a worker killed (its heartbeat stops), a host name that does not resolve,
other sessions filling the server before preflight and after it, a statement timeout. Each case
must end with the campaign finished, the target classified, the controls ranked and evidence kept.
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

from pgarena.local.embedded import EmbeddedServer
from pgarena.local.runtime import LocalRuntime
from pgarena.model.matrix import parse_campaign

pytestmark = pytest.mark.integration

CLIENTS = 2
DURATION_S = 5
HEARTBEAT_TIMEOUT_S = 6
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


def kill_worker(server, runtime, step_id):
    """SIGKILL the worker running `step_id` and the tool it started, as a Fargate task dies."""
    wait_for_run(server.endpoint)
    for process in list(runtime.workers.processes.values()):
        if process.poll() is not None:
            continue
        environ = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
        step = next((e[len(b"PGARENA_STEP=") :] for e in environ if e.startswith(b"PGARENA_STEP=")), b"{}")
        if json.loads(step).get("step_id") == step_id:
            os.killpg(process.pid, signal.SIGKILL)
            return
    raise LookupError(f"no worker runs {step_id}")


def squeeze_after_preflight(server, runtime, campaign_id, name, stop, held):
    """Once preflight has taken the budget, other sessions take every slot left (a provider's agents, another
    application): the benchmark's connections are refused."""
    key = f"{campaign_id}/raw/{name}/preflight/preflight.json"
    deadline = time.monotonic() + INJECT_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            runtime.s3.head_object(Bucket="pgarena-local-results", Key=key)
            break
        except Exception:
            time.sleep(0.05)
    while not stop.wait(0.05):  # keep every slot taken: one freed by a finished step is taken back
        try:
            held.append(connect(server.endpoint, application_name="squeezer"))
        except Exception:
            pass


@pytest.fixture(scope="module")
def servers():
    names = ["healthy", "restarted", "terminated", "crowded", "squeezed", "impatient", "steady", "lost"]
    pgs = {name: EmbeddedServer(name, FAST) for name in names}
    threads = [threading.Thread(target=pg.start) for pg in pgs.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # statement_timeout for the benchmark role only: preflight's quick queries pass, loading the data does not
    conn = connect(pgs["impatient"].endpoint)
    conn.cursor().execute("create role bench superuser login")
    conn.cursor().execute("alter role bench set statement_timeout = '50ms'")
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
    t0 = time.monotonic()
    with LocalRuntime(tmp_path_factory.mktemp("fault-results")) as runtime:
        # Given both campaigns started, and each fault waiting for its moment
        main_run, lost_run = runtime.start(main), runtime.start(lost)
        injector.at("restarted", crash_and_restart, servers["restarted"])
        injector.at("terminated", terminate_backends, servers["terminated"])
        injector.at("lost", kill_worker, servers["lost"], runtime, "lost/tpcb/c2-r1")
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
        # When they run to their end
        runs = {"main": runtime.wait(main_run), "lost": runtime.wait(lost_run)}
        injector.join()
    for conn in [*tenants, *held]:
        conn.close()
    return runs, injector, time.monotonic() - t0


def result(run, name):
    return next(t for t in run.results.targets if t.name == name)


def test_every_campaign_finishes_listing_every_target(faults):
    runs, injector, _ = faults
    assert not injector.errors, injector.errors
    assert runs["main"].status == runs["lost"].status == "SUCCEEDED"
    assert [t.name for t in runs["main"].results.targets] == [
        "healthy",
        "restarted",
        "terminated",
        "crowded",
        "squeezed",
        "impatient",
        "unresolvable",
    ]
    for run in runs.values():
        for t in run.results.targets:
            # every planned step is listed with a status: the load and the run
            assert [l.status in ("succeeded", "failed") for l in t.loads] == [True]
            assert [w.status in ("succeeded", "failed") for w in t.workloads] == [True]


def test_controls_are_ranked_and_only_they(faults):
    runs, _, _ = faults
    assert [r.target for r in runs["main"].results.ranking] == ["healthy"]
    assert [r.target for r in runs["lost"].results.ranking] == ["steady"]
    assert result(runs["lost"], "steady").workloads[0].tps > 0


def test_host_resolved_once_and_the_load_used_the_address(faults):
    runs, _, _ = faults
    healthy = result(runs["main"], "healthy")
    assert healthy.status == "succeeded", healthy.error
    assert healthy.server.address == "127.0.0.1" and healthy.server.postmaster_started_at
    assert healthy.workloads[0].tps > 0


def _raw_text(run, entry, name="pgbench.log"):
    path = next(p for p in entry.raw if p.endswith(name))
    return (run.results_dir / path).read_text()


def test_server_crash_and_restart_is_server_restarted_with_both_start_times(faults):
    runs, _, _ = faults
    t = result(runs["main"], "restarted")
    (w,) = t.workloads
    assert t.status == w.status == "failed"
    assert w.error.kind == t.error.kind == "server_restarted"
    assert "pg_postmaster_start_time()" in w.error.message
    assert t.server.postmaster_started_at in w.error.message  # the start time preflight read, then the new one
    text = _raw_text(runs["main"], w)
    assert "server closed the connection" in text or "terminating connection" in text
    assert "progress:" in text  # the output before the crash is kept
    assert w.error.raw.endswith("pgbench.log")


def test_terminated_backends_are_server_closed_connection(faults):
    runs, _, _ = faults
    (w,) = result(runs["main"], "terminated").workloads
    assert w.error.kind == "server_closed_connection"
    assert "terminating connection due to administrator command" in _raw_text(runs["main"], w)


def test_killed_worker_is_lost_by_its_missed_heartbeat_and_leaves_its_output(faults):
    runs, _injector, _ = faults
    t = result(runs["lost"], "lost")
    (w,) = t.workloads
    assert t.status == w.status == "failed"
    assert w.error.kind == "worker_lost"
    # the chunks uploaded while pgbench ran, up to about a second before the kill
    text = _raw_text(runs["lost"], w)
    assert "progress:" in text and "tps" in text
    assert w.error.raw.endswith("pgbench.log")
    assert t.loads[0].status == "succeeded"


def test_unresolvable_host_is_dns_failure_with_preflight_evidence(faults):
    runs, _, _ = faults
    t = result(runs["main"], "unresolvable")
    assert t.status == "failed" and t.error.kind == "dns_failure"
    assert "pgarena-nowhere.invalid" in t.error.message
    evidence = json.loads((runs["main"].results_dir.parent / t.error.raw).read_text())
    assert evidence["error"]["kind"] == "dns_failure"
    assert t.workloads[0].error.kind == "not_run"


def test_budget_filled_before_preflight_is_refused_naming_the_sessions(faults):
    runs, _, _ = faults
    t = result(runs["main"], "crowded")
    assert t.status == "failed" and t.error.kind == "budget_refused"
    assert "needs 2 connections but only 1 are available" in t.error.message
    evidence = json.loads((runs["main"].results_dir.parent / t.error.raw).read_text())
    assert evidence["error"]["kind"] == "budget_refused"


def test_budget_filled_after_preflight_is_too_many_clients(faults):
    runs, _, _ = faults
    t = result(runs["main"], "squeezed")
    assert t.status == "failed" and t.error.kind == "too_many_clients"
    failed = [x for x in [*t.loads, *t.workloads] if x.status == "failed"]
    assert failed and "too many clients" in _raw_text(runs["main"], failed[0])


def test_statement_timeout_is_classified(faults):
    runs, _, _ = faults
    t = result(runs["main"], "impatient")
    assert t.status == "failed" and t.error.kind == "statement_timeout"
    # caught by the load (pgbench.log) or, on a busy machine, already by preflight's queries (preflight.json)
    assert "canceling statement due to statement timeout" in (runs["main"].results_dir.parent / t.error.raw).read_text()


def test_the_fault_suite_is_quick(faults):
    _, _, wall_s = faults
    assert wall_s < 75
