"""Issue 15.7: faults reported with the why, against real PostgreSQL: credentials named, lock waits
named with their blocker, the monitor reconnecting, and a frozen server's run not ranked as healthy."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pg8000.dbapi
import pytest

from pgarena.analysis.metrics import stability
from pgarena.analysis.ranking import unranked_reasons
from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.runtime import LocalRuntime
from pgarena.model.errors import Authentication
from pgarena.model.matrix import Endpoint
from pgarena.planning.campaign import parse_campaign
from pgarena.server.monitor import Monitor
from pgarena.server.postgres import connect

pytestmark = pytest.mark.integration

FAST = {"fsync": "off", "synchronous_commit": "off", "shared_buffers": "16MB"}
FREEZE_S = 7
WAIT_S = 60


@pytest.fixture(scope="module")
def scram():
    pg = EmbeddedProcess("scram", FAST, password_auth=True)
    endpoint = pg.start()
    yield endpoint
    pg.stop()


@pytest.fixture(scope="module")
def trusting():
    pg = EmbeddedProcess("plain", FAST)
    pg.start()
    yield pg
    pg.stop()


def admin(port: int, application_name: str = "admin"):
    conn = pg8000.dbapi.connect(
        host="127.0.0.1", port=port, user="postgres", database="postgres", application_name=application_name
    )
    conn.autocommit = True
    return conn


def test_no_password_against_a_scram_server_says_which_credential_is_missing(scram):
    endpoint = scram.model_copy(update={"password_env": None})
    with pytest.raises(Authentication) as refused, connect(endpoint):
        pass
    message = str(refused.value)
    assert f"asks {scram.user} for a password but the endpoint gives none" in message and "password_env" in message
    assert "NoneType" not in message


def test_a_wrong_password_names_the_variable_to_check_not_the_drivers_dict(scram, monkeypatch):
    monkeypatch.setenv("PGARENA_TEST_WRONG_PW", "not-the-password")
    endpoint = scram.model_copy(update={"password_env": "PGARENA_TEST_WRONG_PW"})
    with pytest.raises(Authentication) as refused, connect(endpoint):
        pass
    message = str(refused.value)
    assert "password authentication failed" in message and "check environment variable PGARENA_TEST_WRONG_PW" in message
    assert "'S':" not in message and "not-the-password" not in message


def test_the_monitor_names_lock_waits_and_reconnects_after_losing_its_connection(trusting, tmp_path):
    # Given a table locked ACCESS EXCLUSIVE by one session, and a "benchmark" session waiting on it
    endpoint = Endpoint(host="127.0.0.1", port=trusting.port, user="postgres", sslmode="disable")
    holder = admin(trusting.port, "holder")
    holder.cursor().execute("create table if not exists locked (id int)")
    holder.autocommit = False
    holder.cursor().execute("lock table locked in access exclusive mode")
    waiter = admin(trusting.port, "pgarena/000000000000/000000000000")
    blocked = threading.Thread(target=lambda: waiter.cursor().execute("select count(*) from locked"), daemon=True)
    blocked.start()
    with Monitor(endpoint, "pgarena/000000000000/000000000000", 0.2, tmp_path / "monitor.jsonl") as monitor:
        deadline = time.monotonic() + WAIT_S
        while not any(s.lock_waits for s in monitor.samples) and time.monotonic() < deadline:
            time.sleep(0.1)
        # When its connection is terminated (as an administrator or a failover would)
        killer = admin(trusting.port)
        killer.cursor().execute("select pg_terminate_backend(pid) from pg_stat_activity where application_name like '%%/monitor'")
        killer.close()
        seen = len(monitor.samples)
        while len(monitor.samples) < seen + 3 and time.monotonic() < deadline:
            time.sleep(0.1)
    holder.rollback()
    blocked.join(timeout=10)
    holder.close()
    waiter.close()
    # Then the wait was named with its blocker and the blocker's query
    report = monitor.report()
    (wait,) = report.lock_waits
    assert wait.waiting == 1 and wait.wait_event == "Lock:relation"
    assert wait.blocking_query == "lock table locked in access exclusive mode"
    # And the monitor recorded the failure once and went on sampling
    assert [i.kind for i in report.incidents if i.kind == "monitor_failed"] == ["monitor_failed"]
    assert len(monitor.samples) >= seen + 3


def _freeze(pg: EmbeddedProcess) -> None:
    """SIGSTOP the server (postmaster and every backend) for FREEZE_S once pgbench is measuring."""
    deadline = time.monotonic() + WAIT_S
    conn = admin(pg.port)
    while time.monotonic() < deadline:
        cursor = conn.cursor()
        cursor.execute(
            "select count(*) from pg_stat_activity where application_name like 'pgarena/%%'"
            " and application_name not like '%%/monitor' and application_name not like '%%/preflight'"
        )
        if cursor.fetchone()[0] >= 2:
            break
        time.sleep(0.2)
    time.sleep(2)  # a few healthy intervals first
    cursor = conn.cursor()
    cursor.execute("select pid from pg_stat_activity where pid <> pg_backend_pid()")
    pids = [row[0] for row in cursor.fetchall()]
    conn.close()
    pids.append(int((pg.pgdata / "postmaster.pid").read_text().split()[0]))
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    time.sleep(FREEZE_S)
    for pid in pids:
        os.kill(pid, signal.SIGCONT)


def test_a_server_frozen_mid_run_is_a_stall_and_not_ranked_as_healthy(tmp_path):
    # Given a frozen and a healthy target, each running a 16 s pgbench
    pgs = {name: EmbeddedProcess(name, FAST) for name in ("frozen", "healthy")}
    for pg in pgs.values():
        pg.start()
    try:
        campaign = parse_campaign(
            {
                "campaign": "freeze",
                "target_concurrency": 2,
                "connections": {"monitor_interval_s": 0.5},
                "targets": [
                    {
                        "name": name,
                        "provider": "self-hosted",
                        "endpoint": {"host": "127.0.0.1", "port": pg.port, "user": "postgres", "sslmode": "disable"},
                    }
                    for name, pg in pgs.items()
                ],
                "workloads": [
                    {
                        "name": "sel",
                        "tool": "pgbench",
                        "init": {"scale": 1},
                        "run": {"clients": 2, "jobs": 1, "duration_s": 16, "builtin": "select-only", "progress_s": 1},
                    }
                ],
            }
        )
        with LocalRuntime(tmp_path) as runtime:

            def freeze_when_running(event):
                if event.kind == "state" and event.text == "Run Worker Task frozen/sel/c2-r1":
                    threading.Thread(target=_freeze, args=(pgs["frozen"],), daemon=True).start()

            run = runtime.run(campaign, freeze_when_running)
    finally:
        for pg in pgs.values():
            pg.stop()
    # Then the frozen target's run shows a stall with the why, and only the healthy target is ranked
    frozen = next(t for t in run.results.targets if t.name == "frozen")
    progress = frozen.workloads[0].progress
    (tmp_path / "frozen-progress.json").write_text(json.dumps([p.model_dump() for p in progress]))
    assert stability(progress).stalled, progress
    assert [entry.target for entry in run.results.ranking] == ["healthy"]
    assert "stalled" in unranked_reasons(run.results.targets, run.results.ranking, run.results.metrics)["frozen"]
