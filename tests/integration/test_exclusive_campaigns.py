"""Issue 34: one PostgreSQL server listening on 127.0.0.1, 127.0.0.2 and ::1 (max_connections 40), three
`pgarena run --local` processes started at once, one per address, on the same database, whose clients all
fit together: every one succeeds, their measured windows (from the per-transaction logs each results
folder keeps) never overlap, no campaign's sessions are ever on the server beside another's (so no
`pgbench -i` dropped tables under a running campaign), and no waiter is refused."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pg8000.dbapi
import pytest

from pgarena.model.plan import CAMPAIGN_TAG_RE
from pgarena.model.results import CampaignResults
from pgarena.server.identity import IDENTIFY_SESSION
from pgarena.tools.pgbench.command import TRANSACTION_LOG_PREFIX
from tests.loopback import ADDRESSES, listening_on_every_address

pytestmark = pytest.mark.integration

MAX_CONNECTIONS = 40
CLIENTS = 8  # three campaigns' 8 clients, their preflight and monitor: 30 of 40, all fit at once
CAMPAIGN_TIMEOUT_S = 900


class Observer:
    """Which campaigns have sessions on the server, every 50 ms (their short identifying sessions aside)."""

    def __init__(self, port: int):
        self.conn = pg8000.dbapi.connect(
            host="127.0.0.1", port=port, user="postgres", database="postgres", application_name="observer"
        )
        self.conn.autocommit = True
        self.together: set[frozenset[str]] = set()
        self.seen: set[str] = set()
        self.errors: list[Exception] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        cursor = self.conn.cursor()
        while not self.stop.wait(0.05):
            try:
                cursor.execute("select application_name from pg_stat_activity where application_name like 'pgarena/%%'")
                names = [row[0] for row in cursor.fetchall() if not row[0].endswith("/" + IDENTIFY_SESSION)]
            except Exception as error:
                self.errors.append(error)
                return
            tags = frozenset(m.group(1) for name in names if (m := re.match(CAMPAIGN_TAG_RE, name)))
            self.seen |= tags
            if len(tags) > 1:
                self.together.add(tags)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.conn.close()


def matrix(name: str, host: str, port: int) -> dict:
    return {
        "campaign": name,
        "connections": {"policy": "fail", "safety_margin": 2, "monitor_interval_s": 0.5, "lease_wait_s": 600},
        "targets": [
            {
                "name": "one-server",
                "provider": "self-hosted",
                # the same database: a campaign's `pgbench -i` drops and creates the tables the others use
                "endpoint": {"host": host, "port": port, "user": "postgres", "dbname": "postgres", "sslmode": "disable"},
            }
        ],
        "workloads": [
            {
                "name": "tpcb",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": CLIENTS, "jobs": 2, "duration_s": 3, "progress_s": 1, "percentiles": True},
            }
        ],
    }


def measured_window(folder: Path) -> tuple[float, float]:
    """From the first transaction's start to the last one's end, in epoch seconds, over every per-transaction
    log the results folder keeps (a --log line: client, number, latency_us, script, end_epoch, end_us ...)."""
    starts, ends = [], []
    logs = [p for p in folder.rglob(f"{TRANSACTION_LOG_PREFIX}.*") if p.is_file()]
    assert logs, f"no per-transaction log in {folder}"
    for log in logs:
        data = log.read_bytes()
        text = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data  # kept gzipped
        for line in text.decode().splitlines():
            fields = line.split()
            end = int(fields[4]) + int(fields[5]) / 1e6
            latency = int(fields[2]) / 1e6 if fields[2].isdigit() else 0.0
            starts.append(end - latency)
            ends.append(end)
    return min(starts), max(ends)


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    # Given one server on three addresses and three campaigns, one per address, started at once in three processes
    tmp = tmp_path_factory.mktemp("exclusive")
    pg = listening_on_every_address("exclusive", MAX_CONNECTIONS)
    port = pg.endpoint.port
    try:
        observer = Observer(port)
        env = {**os.environ, "PGARENA_LEASE_DIR": str(tmp / "leases")}
        cli = Path(sys.executable).parent / "pgarena"
        processes = {}
        for i, host in enumerate(ADDRESSES):
            name = f"exclusive-{i}"
            path = tmp / f"{name}.json"
            path.write_text(json.dumps(matrix(name, host, port)))
            processes[name] = subprocess.Popen(
                [str(cli), "run", "--local", "--matrix", str(path), "--out", str(tmp / "results")],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        outputs = {name: p.communicate(timeout=CAMPAIGN_TIMEOUT_S)[0] for name, p in processes.items()}
        observer.close()
    finally:
        pg.stop()
    return processes, outputs, observer, tmp / "results"


def test_every_campaign_succeeds_and_no_waiter_is_refused(campaigns):
    processes, outputs, _, results_dir = campaigns
    for name, process in processes.items():
        assert process.returncode == 0, outputs[name]
    folders = sorted(results_dir.glob("*/results.json"))
    assert len(folders) == len(ADDRESSES)
    for path in folders:
        results = CampaignResults.model_validate_json(path.read_text())
        (target,) = results.targets
        assert target.status == "succeeded", target.error
        assert target.server is not None and not target.server.share_server and not target.server.clamped
        assert all(w.status == "succeeded" and w.failed_transactions == 0 for w in target.workloads)
    # one lease for the three addresses: the server's identity
    (lease,) = (results_dir.parent / "leases").glob("*.json")
    assert lease.name.startswith("pg-")


def test_measured_windows_never_overlap(campaigns):
    _, _, _, results_dir = campaigns
    windows = sorted(measured_window(path.parent) for path in results_dir.glob("*/results.json"))
    assert len(windows) == len(ADDRESSES)
    for (_, first_end), (second_start, _) in itertools.pairwise(windows):
        assert first_end <= second_start, windows


def test_no_campaign_was_ever_on_the_server_beside_another(campaigns):
    # Their loads (pgbench -i included: it drops and creates the tables), monitors and preflights: never two at once
    _, _, observer, _ = campaigns
    assert not observer.errors, observer.errors
    assert len(observer.seen) == len(ADDRESSES)
    assert observer.together == set()
