"""Container workers: the local ECS stand-in runs each worker as `docker run` of the image built from
workers/Dockerfile (the image Fargate runs), with only the environment a Fargate task gets. A Docker
daemon that does not answer fails these tests (tools/docker-here.sh starts one)."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.local import containers
from pgarena.local.runtime import LocalRuntime, run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

WAIT_FOR_PROGRESS_S = 120

# One small campaign: an embedded target, pgbench's init and one short run.
MATRIX = {
    "campaign": "containers",
    "connections": {"monitor_interval_s": 1},
    "targets": [{"name": "pg", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}],
    "workloads": [
        {
            "name": "sel",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 2, "jobs": 1, "duration_s": 2, "builtin": "select-only", "progress_s": 1},
        }
    ],
}


def test_a_campaign_runs_green_with_every_worker_in_a_container(worker_image, tmp_path):
    # Given the worker image and a campaign on an embedded target
    campaign = parse_campaign(MATRIX)

    # When it runs with container workers
    run = run_local(campaign, tmp_path, container_workers=True)

    # Then it succeeds, each step in its own container of the image: Debian's pgbench 15 and python3.11,
    # not this virtualenv's interpreter nor the embedded server's pgbench
    assert run.status == "SUCCEEDED", run.error
    assert run.results is not None
    (target,) = run.results.targets
    (workload,) = target.workloads
    assert (target.status, workload.status) == ("succeeded", "succeeded")
    assert workload.worker is not None
    assert (
        workload.worker.tools["pgbench"].startswith("pgbench (PostgreSQL) 15.") and "Debian" in workload.worker.tools["pgbench"]
    )
    assert workload.worker.tools["python"].startswith("3.11.")
    # one container for the phase: the warm worker that loaded the data ran the benchmark too
    assert len(list((tmp_path / "logs").glob("worker-*.log"))) == 1
    assert workload.worker.worker_id and workload.worker.step_of_worker == 2  # init, then run


def test_a_quarter_vcpu_worker_under_client_heavy_load_is_flagged_saturated(worker_image, tmp_path):
    # Given a 0.25-vCPU worker (Fargate's smallest) and 4 clients of a read whose work is on the client:
    # sixty \set expressions pgbench computes for each `select`, so the client, not the server,
    # runs out first however busy the machine keeps the server
    saturating = {**MATRIX, "campaign": "containers-saturated"}
    client_heavy = "\n".join(["\\set a random(1, 1000000)"] + ["\\set a :a * 7 % 13 + 1"] * 60 + ["select :a;"])
    run_spec = {
        **{k: v for k, v in MATRIX["workloads"][0]["run"].items() if k != "builtin"},
        "clients": 4,
        "jobs": 2,
        "duration_s": 3,
        "scripts": [{"sql": client_heavy}],
    }
    saturating["workloads"] = [{**MATRIX["workloads"][0], "run": run_spec}]
    quarter = containers.WorkerSize(cpu_units=256, memory_mib=512)

    # When it runs in a container of that size
    run = run_local(parse_campaign(saturating), tmp_path, container_workers=True, worker_size=quarter)

    # Then the worker knew its quota, the run is flagged as paced by its client, and nothing is ranked on it
    assert run.status == "SUCCEEDED", run.error
    assert run.results is not None
    (target,) = run.results.targets
    (workload,) = target.workloads
    assert workload.status == "succeeded" and workload.worker is not None and workload.worker.cpu_limit == 0.25
    assert workload.harness is not None and workload.harness.throttled_share is not None
    (saturated,) = [i for i in workload.incidents if i.kind == "client_saturated"]
    assert "of its 0.25 CPU" in saturated.message, saturated.message
    assert run.results.ranking == []


def _containers_of(runtime: LocalRuntime) -> list[str]:
    """The containers of this runtime's tasks still there, running or not (other sessions may run theirs)."""
    names = [containers.CONTAINER_PREFIX + arn.rsplit("/", 1)[1] for arn in runtime.workers.processes]
    filters = [arg for name in names for arg in ("--filter", f"name=^{name}$")]
    listed = subprocess.run(["docker", "ps", "--all", "--quiet", *filters], capture_output=True, text=True, check=True)
    return listed.stdout.split() if names else []


def test_stopping_a_campaign_stops_its_containers_and_records_the_step_cancelled(worker_image, tmp_path):
    # Given a campaign whose run would last a minute, running in a container and measuring
    long_run = {**MATRIX, "campaign": "containers-stopped"}
    long_run["workloads"] = [{**MATRIX["workloads"][0], "run": {**MATRIX["workloads"][0]["run"], "duration_s": 60}}]
    with LocalRuntime(tmp_path, container_workers=True) as runtime:
        execution = runtime.start(parse_campaign(long_run))
        deadline = time.monotonic() + WAIT_FOR_PROGRESS_S
        while time.monotonic() < deadline and not _measuring(runtime, execution.campaign_id):
            time.sleep(0.5)
        assert _containers_of(runtime), "no worker container is running"

        # When the campaign is stopped (StopTask: docker passes SIGTERM on to the worker)
        run = runtime.cancel(execution)
        left = _containers_of(runtime)

    # Then the worker recorded its step cancelled, and no container is left
    assert run.results is not None and run.results.status == "cancelled"
    (workload,) = run.results.targets[0].workloads
    assert (workload.status, workload.error.kind if workload.error else None) == ("failed", "cancelled")
    assert left == []


def _measuring(runtime: LocalRuntime, campaign_id: str) -> bool:
    """pgbench's uploaded output shows it measuring (not a fixed wait: a loaded machine starts slowly)."""
    key = next((k for k in runtime.store.keys(campaign_id) if k.endswith("/raw/pg/sel/c2-r1/pgbench.log")), None)
    return key is not None and b"progress:" in runtime.s3.get_object(Bucket=runtime.store.bucket, Key=key)["Body"].read()


def test_without_a_daemon_the_run_stops_naming_how_to_start_one(tmp_path, monkeypatch):
    # Given no Docker daemon where DOCKER_HOST points
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    matrix = tmp_path / "matrix.json"
    matrix.write_text(json.dumps(MATRIX))

    # When running with container workers
    result = CliRunner().invoke(app, ["run", "--local", "--container-workers", "--matrix", str(matrix), "--out", str(tmp_path)])

    # Then it fails before any campaign starts, saying what to do
    assert result.exit_code == 1
    assert "no Docker daemon answers" in result.output and "tools/docker-here.sh" in result.output
