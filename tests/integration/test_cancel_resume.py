"""Cancelling a running campaign (Ctrl-C) and resuming a campaign that failed, with real PostgreSQL."""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pg8000.dbapi
import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.leases import FileLeases
from pgarena.local.resume import resume_local
from pgarena.local.runtime import MATRIX_FILE, LocalRuntime, run_local
from pgarena.planning.campaign import parse_campaign
from tests.ports import refused_port

pytestmark = pytest.mark.integration

FAST = {"fsync": "off", "synchronous_commit": "off", "shared_buffers": "16MB"}
# Ctrl-C once the run's uploaded output shows pgbench measuring (not after a fixed time: on a loaded
# machine pgbench may take seconds to connect).
WAIT_FOR_PROGRESS_S = 120


def workload(duration_s):
    return {
        "name": "tpcb",
        "tool": "pgbench",
        "init": {"scale": 1},
        "run": {"clients": 2, "jobs": 1, "duration_s": duration_s, "progress_s": 1},
    }


def endpoint_of(server, **extra):
    return {"host": "127.0.0.1", "port": server.port, "user": "postgres", "sslmode": "disable", **extra}


def benchmark_sessions(server) -> int:
    conn = pg8000.dbapi.connect(host="127.0.0.1", port=server.port, user="postgres", database="postgres")
    cursor = conn.cursor()
    cursor.execute("select count(*) from pg_stat_activity where application_name like 'pgarena/%%'")
    count = cursor.fetchone()[0]
    conn.close()
    return count


@pytest.fixture(scope="module")
def servers():
    pgs = {name: EmbeddedProcess(name, FAST) for name in ("first", "second")}
    for pg in pgs.values():
        pg.start()
    yield pgs
    for pg in pgs.values():
        pg.stop()


@pytest.fixture(scope="module")
def cancelled(servers, tmp_path_factory):
    # Given a campaign of two targets benchmarked one after the other
    campaign = parse_campaign(
        {
            "campaign": "cancel-me",
            "connections": {"monitor_interval_s": 0.5},
            "targets": [{"name": name, "provider": "self-hosted", "endpoint": endpoint_of(pg)} for name, pg in servers.items()],
            "workloads": [workload(20)],
        }
    )

    with LocalRuntime(tmp_path_factory.mktemp("cancel-results")) as runtime:
        measured: list[str] = []  # the target whose run is interrupted: the first to run (the order is seeded)

        def interrupt_once_measuring(name):
            deadline = time.monotonic() + WAIT_FOR_PROGRESS_S
            while time.monotonic() < deadline:
                keys = runtime.store.keys("")
                log = next((k for k in keys if k.endswith(f"/raw/{name}/tpcb/c2-r1/pgbench.log")), None)
                if log and b"progress:" in runtime.s3.get_object(Bucket=runtime.store.bucket, Key=log)["Body"].read():
                    break
                time.sleep(0.2)
            _thread.interrupt_main()  # what Ctrl-C does

        def interrupt_during_the_run(event):
            if event.kind == "state" and event.text.startswith("Run Worker Task ") and not measured:
                measured.append(event.text.removeprefix("Run Worker Task ").split("/")[0])
                if event.text.endswith("/tpcb/c2-r1"):
                    threading.Thread(target=interrupt_once_measuring, args=(measured[0],), daemon=True).start()
                else:
                    measured.clear()  # the load: wait for the run's task

        # When the user presses Ctrl-C while the first target's run is measuring
        run = runtime.run(campaign, interrupt_during_the_run)
        workers = list(runtime.workers.processes.values())
        lease_dir = Path(os.environ["PGARENA_LEASE_DIR"])  # the file store local runs share
        leases = FileLeases(lease_dir)  # every server's (keyed by its identity), waiters too
        records = [leases.read(path.stem) for path in lease_dir.glob("*.json")]
        holders = [*(h for r in records for h in r.holders), *(w for r in records for w in r.queue)]
        sessions = benchmark_sessions(servers[measured[0]])
    return run, workers, holders, sessions, measured[0]


def test_cancel_stops_the_execution_and_marks_results_cancelled(cancelled):
    run, _, _, _, _ = cancelled
    assert run.status == "ABORTED"
    assert run.results.status == "cancelled"
    data = json.loads((run.results_dir / "results.json").read_text())
    assert data["status"] == "cancelled"


def test_cancel_lists_every_target_and_step_with_what_finished(cancelled):
    run, _, _, _, interrupted = cancelled
    by_name = {target.name: target for target in run.results.targets}
    assert set(by_name) == {"first", "second"}
    # the target measuring when Ctrl-C came, and the one that had not started (targets run one at a time)
    first = by_name[interrupted]
    second = by_name[({"first", "second"} - {interrupted}).pop()]
    assert first.loads[0].status == "succeeded" and first.loads[0].seconds > 0
    (stopped,) = first.workloads
    assert stopped.status == "failed" and stopped.error.kind == "cancelled"
    # the worker, stopped, killed pgbench and uploaded what it had printed
    log = next(p for p in stopped.raw if p.endswith("pgbench.log"))
    progress = [line for line in (run.results_dir / log).read_text().splitlines() if line.startswith("progress:")]
    # nobody waited for the 20 s run: pgbench was stopped before its 20th one-second progress line
    assert 1 <= len(progress) < 20
    assert [x.error.kind for x in [*second.loads, *second.workloads]] == ["cancelled", "cancelled"]
    assert run.results.ranking == []


def test_cancel_stops_workers_and_their_tools_and_releases_leases(cancelled):
    _, workers, holders, sessions, _ = cancelled
    assert workers and all(w.poll() is not None for w in workers)
    assert sessions == 0  # no orphaned pgbench still loading the target
    assert not [h for h in holders if h.holder.startswith("cancel-me-")]


def test_ctrl_c_of_the_command_prints_one_line_per_thing_stopped(servers, tmp_path):
    # Given `pgarena run --local` measuring a target, as a user runs it in a terminal (issue 34.13)
    matrix = {
        "campaign": "ctrl-c",
        "targets": [{"name": "first", "provider": "self-hosted", "endpoint": endpoint_of(servers["first"])}],
        "workloads": [workload(120)],
    }
    (tmp_path / "matrix.json").write_text(json.dumps(matrix))
    out = tmp_path / "results"
    env = {**os.environ, "PGARENA_LEASE_DIR": str(tmp_path / "leases"), "COLUMNS": "200"}
    command = [
        sys.executable,
        "-m",
        "pgarena.cli",
        "run",
        "--local",
        "--matrix",
        str(tmp_path / "matrix.json"),
        "--out",
        str(out),
    ]
    with (tmp_path / "stdout").open("w") as stdout, (tmp_path / "stderr").open("w") as stderr:
        # SIGINT as a terminal's Ctrl-C delivers it (a shell running pytest in the background may ignore it)
        coordinator = subprocess.Popen(
            command, env=env, stdout=stdout, stderr=stderr, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
        )
    try:
        deadline = time.monotonic() + WAIT_FOR_PROGRESS_S * 3
        while not any("progress:" in log.read_text(errors="replace") for log in (out / "logs").glob("worker-*.log")):
            assert coordinator.poll() is None, (tmp_path / "stderr").read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never started measuring"
            time.sleep(0.2)
        # When the user presses Ctrl-C
        coordinator.send_signal(signal.SIGINT)
        code = coordinator.wait(timeout=600)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    errors = [line for line in (tmp_path / "stderr").read_text().splitlines() if line.strip()]
    # Then it ends as cancelled, and says what it stopped in a few short lines: no interpreter internals
    assert code == 130, errors[-20:]
    assert any(line.startswith("stopped the execution of campaign ctrl-c-") for line in errors)
    assert any(line.startswith("stopped worker task ") and "(target first)" in line for line in errors)
    assert any(line.startswith("cancelled: what finished is kept") for line in errors)
    assert len(errors) < 12 and all(len(line) < 300 for line in errors), errors
    assert not [line for line in errors if "Exception=" in line or "Traceback" in line or "AttributeError" in line]
    (results,) = out.glob("ctrl-c-*/results.json")
    assert json.loads(results.read_text())["status"] == "cancelled"


@pytest.fixture(scope="module")
def resumed(servers, tmp_path_factory):
    # Given a campaign where one target failed (its port refused: a refused login would fail the whole
    # campaign before anything loads, issue 34.14) and one succeeded
    out = tmp_path_factory.mktemp("resume-results")

    def matrix(port):
        locked = {"name": "locked", "provider": "self-hosted", "endpoint": {**endpoint_of(servers["second"]), "port": port}}
        targets = [{"name": "ok", "provider": "self-hosted", "endpoint": endpoint_of(servers["first"])}, locked]
        return parse_campaign({"campaign": "resume-me", "targets": targets, "workloads": [workload(3)]})

    first = run_local(matrix(refused_port()), out)
    # When the port is corrected and the campaign is resumed
    again = resume_local(first.results_dir, matrix=matrix(servers["second"].port))
    return first, again


def test_the_failed_target_is_recorded_before_resuming(resumed):
    first, _ = resumed
    ok, locked = first.results.targets
    assert ok.status == "succeeded" and locked.error.kind == "connection_refused"
    assert (first.results_dir / MATRIX_FILE).exists()


def test_resume_reruns_only_what_failed(resumed):
    first, again = resumed
    (rerun_id,) = again.reruns
    rerun = json.loads((first.results_dir.parent / rerun_id / "results.json").read_text())
    assert [t["name"] for t in rerun["targets"]] == ["locked"]
    assert again.results.resumed_from == [first.campaign_id, rerun_id]


def test_resumed_results_combine_kept_successes_with_the_rerun(resumed):
    first, again = resumed
    ok, locked = again.results.targets
    assert ok.status == locked.status == "succeeded"
    # ok's figures are the ones first measured, not measured again
    assert ok.workloads[0].tps == first.results.targets[0].workloads[0].tps
    assert sorted(r.target for r in again.results.ranking) == ["locked", "ok"]
    for target in (ok, locked):  # every raw file a result names is in the combined folder
        for path in target.workloads[0].raw:
            assert (again.results_dir / path).exists(), path
    assert (again.results_dir / "report.html").exists()


def test_resume_of_a_campaign_with_nothing_failed_says_so(resumed):
    _, again = resumed
    outcome = CliRunner().invoke(app, ["resume", str(again.results_dir)])
    assert outcome.exit_code == 0 and "nothing to re-run" in outcome.output
