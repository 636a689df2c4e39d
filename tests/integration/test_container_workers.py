"""Container workers: the local ECS stand-in runs each worker as `docker run` of the image built from
workers/Dockerfile (the image Fargate runs), with only the environment a Fargate task gets. A Docker
daemon that does not answer fails these tests (tools/docker-here.sh starts one)."""

from __future__ import annotations

import pytest

from pgarena.local.runtime import run_local
from pgarena.model.matrix import parse_campaign

pytestmark = pytest.mark.integration

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
    assert len(list((tmp_path / "logs").glob("worker-*.log"))) == 2  # init and run
