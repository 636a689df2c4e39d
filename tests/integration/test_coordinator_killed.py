"""Issue 25.8: a SIGKILLed coordinator leaves nothing running (worker, pgbench, embedded postmaster) and
no lease that refuses the next campaign. Issue 34.6: nor an embedded server's OS user or data directory
once the next run has started; and a SIGTERMed one cancels as Ctrl-C does, its results.json written."""

from __future__ import annotations

import json
import logging
import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

# Generous: a loaded machine may take minutes to start a campaign; nothing asserts how long anything took.
STARTED_DEADLINE_S = 600
GONE_DEADLINE_S = 120
POLL_S = 0.2
# The shared server's slots: one campaign of CLIENTS fits, two at once do not (so a dead campaign's lease,
# kept, would refuse the next one: "held by other pgarena campaigns").
MAX_CONNECTIONS = 20
CLIENTS = 6


def matrix(name: str, port: int, duration_s: int, embedded: bool) -> dict:
    shared = {
        "name": "shared",
        "provider": "self-hosted",
        "endpoint": {"host": "127.0.0.1", "port": port, "user": "postgres", "sslmode": "disable"},
    }
    # its server's folder is pgarena-orphan-*: how the test tells its postmaster from any other
    local = {"name": "orphan", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}
    return {
        "campaign": name,
        "target_concurrency": 2,
        "connections": {"lease_wait_s": 0, "monitor_interval_s": 0.5},
        "targets": [shared, local] if embedded else [shared],
        "workloads": [
            {
                "name": "tpcb",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": CLIENTS, "jobs": 1, "duration_s": duration_s, "progress_s": 1},
            }
        ],
    }


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(ppid, state, start time) of a process, None when there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0], fields[19]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _program(pid: int) -> str:
    return Path(_cmdline(pid).split(" ", 1)[0]).name


def _processes() -> dict[int, tuple[int, str, str]]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            found[int(entry.name)] = stat
    return found


def _running(pid: int, started: str) -> bool:
    """The very process (same start time: never a reused pid), and not a zombie."""
    stat = _stat(pid)
    return stat is not None and stat[2] == started and stat[1] not in ("Z", "X")


def _measuring(logs: Path) -> int:
    """How many workers' logs show their run measuring (pgbench's progress lines; a load prints none)."""
    return sum("progress:" in log.read_text(errors="replace") for log in logs.glob("worker-*.log"))


@pytest.fixture
def shared():
    pg = EmbeddedProcess("shared", {"max_connections": MAX_CONNECTIONS, "fsync": "off", "synchronous_commit": "off"})
    pg.start()
    yield pg
    pg.stop()


@pytest.mark.timeout(STARTED_DEADLINE_S + GONE_DEADLINE_S + 300)  # the second campaign: a load and a 2 s run
def test_a_sigkilled_coordinator_leaves_no_process_and_no_lease_behind(tmp_path, shared, monkeypatch, caplog, request):
    # Given `pgarena run --local` measuring a server it shares with others, beside an embedded target of its own
    out = tmp_path / "results"
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(matrix("killed", shared.port, duration_s=600, embedded=True)))
    env = {**os.environ, "PGARENA_LEASE_DIR": str(tmp_path / "leases")}
    before = _processes()
    with (tmp_path / "coordinator.log").open("w") as log:
        coordinator = subprocess.Popen(
            [sys.executable, "-m", "pgarena.cli", "run", "--local", "--matrix", str(path), "--out", str(out)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    request.addfinalizer(lambda: coordinator.poll() is None and os.kill(coordinator.pid, signal.SIGKILL))
    deadline = time.monotonic() + STARTED_DEADLINE_S
    while _measuring(out / "logs") < 2:  # both targets' runs (target_concurrency 2), the shared one's lease taken
        assert coordinator.poll() is None, (tmp_path / "coordinator.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "the targets' runs never started measuring"
        time.sleep(POLL_S)
    processes = {pid: stat for pid, stat in _processes().items() if before.get(pid, stat)[2] != stat[2] or pid not in before}
    workers = {pid: s[2] for pid, s in processes.items() if s[0] == coordinator.pid and "workers.entrypoint" in _cmdline(pid)}
    tools = {pid: s[2] for pid, s in processes.items() if s[0] in workers and _program(pid) == "pgbench"}
    postmasters = {pid: s[2] for pid, s in processes.items() if "/pgarena-orphan-" in _cmdline(pid) and " -D " in _cmdline(pid)}
    assert workers and tools and postmasters
    made = _servers_made(postmasters)  # the embedded server's data directory, and its OS user as root

    # When the coordinator is SIGKILLed (nothing of it runs: no handler, no cleanup)
    os.kill(coordinator.pid, signal.SIGKILL)
    coordinator.wait()

    # Then its workers, their pgbench and its embedded postmaster all end
    left = {**workers, **tools, **postmasters}
    deadline = time.monotonic() + GONE_DEADLINE_S
    while any(_running(pid, started) for pid, started in left.items()) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    survivors = {pid: _cmdline(pid) for pid, started in left.items() if _running(pid, started)}
    assert survivors == {}

    # And a second campaign on the shared server, which two campaigns' clients do not fit, is not refused:
    # the dead campaign's lease is released, with a message naming it
    monkeypatch.setenv("PGARENA_LEASE_DIR", str(tmp_path / "leases"))
    with caplog.at_level(logging.WARNING):
        run = run_local(parse_campaign(matrix("after", shared.port, duration_s=2, embedded=False)), out)
    (target,) = run.results.targets
    assert target.status == "succeeded", target.error
    assert "campaign killed-" in caplog.text and "is gone" in caplog.text
    # And the dead run's embedded server left no OS user and no data directory behind (issue 34.6)
    assert _left(made) == []
    assert f"removed data directory {made[0][0]}" in caplog.text


def _servers_made(postmasters: dict[int, str]) -> list[tuple[Path, str | None]]:
    """Each postmaster's server folder (its -D's parent) and, when it runs as a user of its own, that user."""
    made = []
    for pid in postmasters:
        args = _cmdline(pid).split()
        folder = Path(args[args.index("-D") + 1]).parent
        uid = Path(f"/proc/{pid}").stat().st_uid
        made.append((folder, pwd.getpwuid(uid).pw_name if uid != os.geteuid() else None))
    return made


def _left(made: list[tuple[Path, str | None]]) -> list[str]:
    left = [str(folder) for folder, _ in made if folder.exists()]
    for _, user in made:
        try:
            left.append(pwd.getpwnam(user).pw_name if user else "")
        except KeyError:
            continue
    return [thing for thing in left if thing]


@pytest.mark.timeout(STARTED_DEADLINE_S + GONE_DEADLINE_S + 300)
def test_a_sigtermed_coordinator_cancels_writes_its_results_and_leaves_no_server_behind(tmp_path):
    # Given `pgarena run --local` measuring an embedded target of its own
    out = tmp_path / "results"
    path = tmp_path / "matrix.json"
    data = matrix("terminated", 0, duration_s=600, embedded=True)
    data["targets"] = data["targets"][1:]  # the embedded target only
    path.write_text(json.dumps(data))
    env = {**os.environ, "PGARENA_LEASE_DIR": str(tmp_path / "leases")}
    before = _processes()
    with (tmp_path / "coordinator.log").open("w") as log:
        coordinator = subprocess.Popen(
            [sys.executable, "-m", "pgarena.cli", "run", "--local", "--matrix", str(path), "--out", str(out)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTED_DEADLINE_S
        while _measuring(out / "logs") < 1:
            assert coordinator.poll() is None, (tmp_path / "coordinator.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the target's run never started measuring"
            time.sleep(POLL_S)
        processes = {pid: s for pid, s in _processes().items() if pid not in before or before[pid][2] != s[2]}
        postmasters = {p: s[2] for p, s in processes.items() if "/pgarena-orphan-" in _cmdline(p) and " -D " in _cmdline(p)}
        made = _servers_made(postmasters)
        assert made
        # When it gets a plain SIGTERM (kill, systemd, a CI runner's time-out)
        coordinator.send_signal(signal.SIGTERM)
        code = coordinator.wait(timeout=GONE_DEADLINE_S + 300)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    output = (tmp_path / "coordinator.log").read_text()
    # Then it cancels as Ctrl-C does: exit 130, a results.json marked cancelled, the cancel said
    assert code == 130, output[-3000:]
    (results,) = out.glob("terminated-*/results.json")
    assert json.loads(results.read_text())["status"] == "cancelled"
    assert "cancelled" in output
    # And its embedded server's user and data directory are gone with it
    assert _left(made) == []
