"""Connection budgets against a real server with small limits and other tenants' sessions held open."""

import os
import threading
from pathlib import Path

import pg8000.dbapi
import pytest

from pgarena.campaign.leases import Request
from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.leases import FileLeases, default_lease_dir
from pgarena.local.runtime import LocalRuntime
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

MAX_CONNECTIONS = 30
SUPERUSER_RESERVED = 3
RESERVED = 2  # reserved_connections, PostgreSQL 16+
TENANT_SESSIONS = 5


def sql(endpoint, statement, user="postgres", database="postgres"):
    conn = pg8000.dbapi.connect(host=endpoint.host, port=endpoint.port, user=user, database=database)
    conn.autocommit = True
    conn.cursor().execute(statement)
    conn.close()


class Observer:
    """Counts pgarena's benchmark sessions from the server side, every 50 ms."""

    def __init__(self, endpoint):
        self.conn = pg8000.dbapi.connect(
            host=endpoint.host, port=endpoint.port, user="postgres", database="postgres", application_name="observer"
        )
        self.conn.autocommit = True  # a fresh pg_stat_activity snapshot per query
        self.peak = 0
        self.errors = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        cursor = self.conn.cursor()
        while not self.stop.wait(0.05):
            try:
                # the benchmark's sessions: pgarena's preflight and monitor are tagged pgarena/<campaign>/ too
                cursor.execute(
                    "select count(*) from pg_stat_activity where application_name like 'pgarena/%%'"
                    " and application_name not like '%%/monitor' and application_name not like '%%/preflight'"
                )
                self.peak = max(self.peak, cursor.fetchone()[0])
            except Exception as error:
                self.errors.append(error)
                return

    def reset(self):
        assert not self.errors, self.errors
        self.peak = 0
        return self

    def close(self):
        self.stop.set()
        self.thread.join()
        self.conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # Given a server with small limits, a non-superuser benchmark role, and another tenant holding sessions
    pg = EmbeddedProcess(
        "budget",
        {
            "max_connections": MAX_CONNECTIONS,
            "superuser_reserved_connections": SUPERUSER_RESERVED,
            "reserved_connections": RESERVED,
        },
    )
    endpoint = pg.start()
    sql(endpoint, "create role bench login password 'bench-pw'")
    sql(endpoint, "create role tenant login")
    for db in ("bench1", "bench2"):
        sql(endpoint, f"create database {db} owner bench")
    tenants = [
        pg8000.dbapi.connect(host=endpoint.host, port=endpoint.port, user="tenant", database="postgres")
        for _ in range(TENANT_SESSIONS)
    ]
    observer = Observer(endpoint)
    yield endpoint, observer
    observer.close()
    for conn in tenants:
        conn.close()
    pg.stop()


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    with LocalRuntime(tmp_path_factory.mktemp("results")) as rt:
        yield rt


def matrix(endpoint, name, clients, policy, database="bench1", pooler=None, lease_wait_s=0, share=False):  # noqa: PLR0913  # a matrix's knobs, as keywords with defaults
    target = {
        "name": "shared",
        "provider": "self-hosted",
        "endpoint": {
            "host": endpoint.host,
            "port": endpoint.port,
            "dbname": database,
            "user": "bench",
            "password_env": "PGARENA_TEST_BENCH_PW",
            "sslmode": "disable",
        },
    }
    if pooler:
        target["pooler"] = pooler
    return parse_campaign(
        {
            "campaign": name,
            "connections": {
                "policy": policy,
                "safety_margin": 2,
                "monitor_interval_s": 0.5,
                "lease_wait_s": lease_wait_s,
                "share_server": share,
            },
            "targets": [target],
            "workloads": [
                {
                    "name": "sel",
                    "tool": "pgbench",
                    "init": {"scale": 1},
                    "run": {"clients": clients, "jobs": 2, "duration_s": 3, "builtin": "select-only", "progress_s": 1},
                }
            ],
        }
    )


# bench may use neither superuser nor reserved slots: 30 - 3 - 2 = 25, less 5 tenant sessions and the
# observer, less 2 for pgarena (preflight, monitor), less the safety margin 2.
EXPECTED_BUDGET = MAX_CONNECTIONS - SUPERUSER_RESERVED - RESERVED - (TENANT_SESSIONS + 1) - 2 - 2


@pytest.fixture(autouse=True)
def password(monkeypatch):
    monkeypatch.setenv("PGARENA_TEST_BENCH_PW", "bench-pw")


def test_clamp_runs_with_exactly_the_budget_and_no_connection_errors(server, runtime):
    server, observer = server
    observer.reset()
    run = runtime.wait(runtime.start(matrix(server, "clamp", 40, "clamp")))
    (target,) = run.results.targets
    (w,) = target.workloads
    assert target.status == "succeeded", target.error
    assert target.server.budget.capacity == EXPECTED_BUDGET == 15
    assert (w.clients, w.requested_clients) == (EXPECTED_BUDGET, 40)
    assert w.failed_transactions == 0 and w.tps > 0
    assert not observer.errors and observer.peak == EXPECTED_BUDGET  # server side: what pgarena said it would open
    assert w.connections.peak_benchmark == EXPECTED_BUDGET  # the monitor agrees
    assert target.server.facts.sessions.by_role.get("tenant") == TENANT_SESSIONS
    # And the other clients' sessions during the run are recorded as background (idle, or a state the
    # benchmark role may not see: no warning)
    assert w.connections.background_by_name == {"(tenant)": TENANT_SESSIONS, "observer": 1}
    assert w.connections.peak_background == TENANT_SESSIONS + 1 and w.connections.background_note() is None


def test_fail_refuses_with_budget_consumers_and_fix(server, runtime):
    server, _ = server
    run = runtime.wait(runtime.start(matrix(server, "fail", 40, "fail")))
    (target,) = run.results.targets
    assert target.status == "failed" and target.error.kind == "budget_refused"
    assert f"needs 40 connections but only {EXPECTED_BUDGET} are available" in target.error.message
    assert "tenant 5" in target.error.message
    assert f"lower clients to {EXPECTED_BUDGET}" in target.error.message


def test_pooler_limit_binds_when_lower(server, runtime):
    server, _ = server
    run = runtime.wait(
        runtime.start(matrix(server, "pooled", 40, "clamp", pooler={"kind": "pgbouncer", "max_client_connections": 10}))
    )
    (target,) = run.results.targets
    assert target.server.budget.binding == "pooler"
    assert target.workloads[0].clients == 10 - 2 - 2


def test_two_sharing_campaigns_on_one_target_stay_within_its_budget_together(server, runtime):
    # Given two campaigns that share the server (share_server), each asking for 10 clients, started together
    server, observer = server
    observer.reset()
    first = runtime.start(matrix(server, "first", 10, "clamp", database="bench1", share=True))
    second = runtime.start(matrix(server, "second", 10, "clamp", database="bench2", share=True))
    runs = [runtime.wait(first), runtime.wait(second)]
    # Then both ran and together they never held more than the budget
    clients = sorted(r.results.targets[0].workloads[0].clients for r in runs)
    assert all(r.results.targets[0].status == "succeeded" for r in runs)
    assert sum(clients) <= EXPECTED_BUDGET - 2  # the other campaign's monitor and preflight hold slots too
    assert not observer.errors and 0 < observer.peak <= EXPECTED_BUDGET
    # And both results say the server was shared
    assert all(r.results.targets[0].server.share_server for r in runs)


def test_a_campaign_is_refused_a_busy_server_with_fixes_that_work(server, runtime):
    # Given another campaign holding the server (its lease, in the files every local runtime shares)
    server, _ = server
    conn = pg8000.dbapi.connect(host=server.host, port=server.port, user="postgres", database="postgres")
    cursor = conn.cursor()
    cursor.execute("select system_identifier::text from pg_control_system()")
    key = "pg-" + cursor.fetchone()[0]
    conn.close()
    leases = FileLeases(Path(os.environ.get("PGARENA_LEASE_DIR") or default_lease_dir()))
    assert leases.acquire(key, Request("someone-else-20260101T000000Z-abcdef/db"), slots=4, capacity=100, ttl_s=600)
    try:
        # When a campaign that may not wait (lease_wait_s 0) asks for it, though its 4 clients would fit
        run = runtime.wait(runtime.start(matrix(server, "latecomer", 4, "clamp", lease_wait_s=0)))
    finally:
        leases.release(key, "someone-else-20260101T000000Z-abcdef/db")
    # Then it is refused, naming the holder, with fixes that would let it run (never 0 clients)
    (target,) = run.results.targets
    assert target.status == "failed" and target.error.kind == "budget_refused"
    assert "another campaign measures its server" in target.error.message
    assert "someone-else-20260101T000000Z-abcdef/db holds it" in target.error.message
    assert "raise lease_wait_s" in target.error.message and "share_server" in target.error.message
    assert "lower clients" not in target.error.message
