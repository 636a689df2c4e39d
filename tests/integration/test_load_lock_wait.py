"""Issue 34.9: a load held up by another session's lock is reported as such, not as a slow load: the
load's record carries how long it waited and on what, and results.json lists it among the findings."""

from __future__ import annotations

import threading
import time

import pg8000.dbapi
import pytest

from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

# Generous: the campaign's start (moto, the worker) takes seconds on a loaded machine.
WAIT_FOR_THE_LOAD_S = 180
# How long the load is kept waiting once it waits: several of the monitor's 0.5 s samples.
HELD_S = 4.0
LOCKER = "lock-holder"


def connect(server):
    return pg8000.dbapi.connect(host="127.0.0.1", port=server.port, user="postgres", database="postgres", application_name=LOCKER)


def load_waits(cursor) -> bool:
    """The campaign's load (a pgarena-tagged session) waits on a lock our session holds."""
    cursor.execute("select count(*) from pg_stat_activity where application_name like 'pgarena/%%' and wait_event_type = 'Lock'")
    return cursor.fetchone()[0] > 0


@pytest.fixture(scope="module")
def server():
    pg = EmbeddedProcess("locked", {"fsync": "off", "synchronous_commit": "off"})
    pg.start()
    yield pg
    pg.stop()


def test_a_load_kept_waiting_by_a_table_lock_says_so(server, tmp_path):
    # Given another session holding an ACCESS EXCLUSIVE lock on a table pgbench -i drops
    holder = connect(server)
    holder.autocommit = True
    cursor = holder.cursor()
    cursor.execute("create table pgbench_branches (bid int)")
    cursor.execute("begin")
    cursor.execute("lock table pgbench_branches in access exclusive mode")
    waited = threading.Event()

    def release_once_the_load_waited():
        watcher = connect(server)
        watcher.autocommit = True
        deadline = time.monotonic() + WAIT_FOR_THE_LOAD_S
        while time.monotonic() < deadline and not load_waits(watcher.cursor()):
            time.sleep(0.2)
        waited.set()
        time.sleep(HELD_S)  # the load keeps waiting a while: the monitor samples it
        cursor.execute("commit")
        watcher.close()

    releaser = threading.Thread(target=release_once_the_load_waited, daemon=True)
    releaser.start()
    # When a campaign loads that server
    campaign = parse_campaign(
        {
            "campaign": "lockwait",
            "connections": {"monitor_interval_s": 0.5},
            "targets": [
                {
                    "name": "locked",
                    "provider": "self-hosted",
                    "endpoint": {"host": "127.0.0.1", "port": server.port, "user": "postgres", "sslmode": "disable"},
                }
            ],
            "workloads": [
                {
                    "name": "tpcb",
                    "tool": "pgbench",
                    "init": {"scale": 1},
                    "run": {"clients": 1, "jobs": 1, "duration_s": 1},
                }
            ],
        }
    )
    try:
        run = run_local(campaign, tmp_path)
    finally:
        releaser.join(timeout=WAIT_FOR_THE_LOAD_S)
        holder.close()
    assert waited.is_set()
    assert run.status == "SUCCEEDED", run.error
    # Then the load's record names the lock it waited on, who held it, and for how long
    (target,) = run.results.targets
    (load,) = [l for l in target.loads if l.kind == "init"]
    assert load.status == "succeeded" and load.connections is not None
    assert load.connections.lock_wait_s >= 1.0
    (incident,) = [i for i in load.connections.incidents if i.kind == "lock_wait"]
    assert "Lock:relation" in incident.message and "lock table pgbench_branches" in incident.message
    # And results.json lists it among the target's findings, with the load it held up
    (metrics,) = run.results.metrics
    found = [f for f in metrics.findings if f.kind == "lock_wait"]
    assert found and found[0].source == "load" and found[0].workload == "tpcb"
