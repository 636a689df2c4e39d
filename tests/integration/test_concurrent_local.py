"""Issue 15.3: two `pgarena run --local` processes on one server (leases in files, sessions tagged by
campaign): observed server-side they never exceed its budget, and both finish (issue 34: in turns, as
neither shares the server; tests/integration/test_exclusive_campaigns.py checks the turns)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pg8000.dbapi
import pytest

from pgarena.local.embedded import EmbeddedProcess
from pgarena.model.results import CampaignResults

pytestmark = pytest.mark.integration

MAX_CONNECTIONS = 25
CLIENTS = 15
SAFETY_MARGIN = 2
OBSERVERS = 1
# The user is a superuser (no reserved slots subtracted): what the two campaigns may hold together,
# their preflight and monitor included.
BUDGET = MAX_CONNECTIONS - OBSERVERS - SAFETY_MARGIN
CAMPAIGN_TIMEOUT_S = 600


class Observer:
    """Counts every pgarena session (both campaigns') from the server side, every 50 ms."""

    def __init__(self, port: int):
        self.conn = pg8000.dbapi.connect(host="127.0.0.1", port=port, user="postgres", database="postgres")
        self.conn.autocommit = True
        self.peak, self.errors = 0, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        cursor = self.conn.cursor()
        while not self.stop.wait(0.05):
            try:
                cursor.execute("select count(*) from pg_stat_activity where application_name like 'pgarena/%%'")
                self.peak = max(self.peak, cursor.fetchone()[0])
            except Exception as error:
                self.errors.append(error)
                return

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.conn.close()


def matrix(name: str, port: int) -> dict:
    return {
        "campaign": name,
        "connections": {"policy": "clamp", "safety_margin": SAFETY_MARGIN, "monitor_interval_s": 0.5, "lease_wait_s": 300},
        "targets": [
            {
                "name": "shared",
                "provider": "self-hosted",
                "endpoint": {"host": "127.0.0.1", "port": port, "user": "postgres", "dbname": name, "sslmode": "disable"},
            }
        ],
        "workloads": [
            {
                "name": "sel",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": CLIENTS, "jobs": 3, "duration_s": 4, "builtin": "select-only", "progress_s": 1},
            }
        ],
    }


def test_two_local_campaigns_in_two_processes_stay_within_the_budget_and_both_finish(tmp_path):
    # Given one server with max_connections 25 and two campaigns of 15 clients each (policy clamp)
    pg = EmbeddedProcess("shared", {"max_connections": MAX_CONNECTIONS, "fsync": "off"})
    endpoint = pg.start()
    try:
        admin = pg8000.dbapi.connect(host="127.0.0.1", port=endpoint.port, user="postgres", database="postgres")
        admin.autocommit = True
        for name in ("east", "west"):
            admin.cursor().execute(f"create database {name}")
        admin.close()
        observer = Observer(endpoint.port)
        env = {**os.environ, "PGARENA_LEASE_DIR": str(tmp_path / "leases")}
        cli = Path(sys.executable).parent / "pgarena"
        # When both are started at once, each in its own process (its own moto, the same lease files)
        processes = {}
        for name in ("east", "west"):
            path = tmp_path / f"{name}.json"
            path.write_text(json.dumps(matrix(name, endpoint.port)))
            processes[name] = subprocess.Popen(
                [str(cli), "run", "--local", "--matrix", str(path), "--out", str(tmp_path / "results")],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        outputs = {name: p.communicate(timeout=CAMPAIGN_TIMEOUT_S)[0] for name, p in processes.items()}
        observer.close()
    finally:
        pg.stop()
    # Then both finished, every target succeeded, no connection was refused
    for name, process in processes.items():
        assert process.returncode == 0, outputs[name]
    results = [CampaignResults.model_validate_json(p.read_text()) for p in (tmp_path / "results").glob("*/results.json")]
    assert sorted(r.campaign for r in results) == ["east", "west"]
    for result in results:
        (target,) = result.targets
        assert target.status == "succeeded", target.error
        assert all(w.failed_transactions == 0 for w in target.workloads)
    # And the server never saw them hold more than its budget together
    assert not observer.errors and 0 < observer.peak <= BUDGET
