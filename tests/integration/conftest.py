import subprocess

import pytest

from pgarena.local import containers
from pgarena.local.runtime import LocalRun, run_local
from pgarena.planning.campaign import parse_campaign
from tests.ports import refused_port

REPO_ROOT = containers.REPO_ROOT

# A short campaign that exercises every part of the report: two embedded targets with prices, a
# client sweep (scaling curves, USL fit), progress lines every second, and a target nobody listens
# on (an incident).
DEMO_MATRIX = {
    "campaign": "report-demo",
    "targets": [
        {
            "name": "durable",
            "provider": "embedded",
            "hourly_cost_usd": 0.25,
            "embedded": {"settings": {"synchronous_commit": "on"}},
        },
        {
            "name": "tuned",
            "provider": "embedded",
            "hourly_cost_usd": 0.5,
            "embedded": {"settings": {"synchronous_commit": "off", "fsync": "off"}},
        },
        {
            "name": "unreachable",
            "provider": "self-hosted",
            "endpoint": {"host": "127.0.0.1", "port": 0, "user": "postgres", "sslmode": "disable"},
        },
    ],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": [1, 2, 4], "jobs": 2, "duration_s": 3, "progress_s": 1},
        },
    ],
}


@pytest.fixture(scope="session")
def demo_campaign(tmp_path_factory) -> LocalRun:
    """A real local campaign, run once per session, with its results folder."""
    matrix = {**DEMO_MATRIX, "targets": [dict(t) for t in DEMO_MATRIX["targets"]]}
    matrix["targets"][2]["endpoint"] = {**matrix["targets"][2]["endpoint"], "port": refused_port()}
    run = run_local(parse_campaign(matrix), tmp_path_factory.mktemp("demo-results"))
    assert run.status == "SUCCEEDED", run.error
    return run


@pytest.fixture(scope="session")
def worker_image():
    """A Docker daemon (tools/docker-here.sh starts one where none answers) and the worker image built
    from workers/Dockerfile, once per session (later builds in the session hit Docker's cache). Fails,
    never skips, when either cannot be had: container workers are part of what `make test` proves."""
    result = subprocess.run(
        ["bash", str(REPO_ROOT / containers.DOCKER_HERE)], capture_output=True, text=True, timeout=1800, check=False
    )
    assert result.returncode == 0, f"{containers.DOCKER_HERE} failed:\n{result.stderr}"
    docker_host = result.stdout.strip().rsplit("export DOCKER_HOST=", 1)[-1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCKER_HOST", docker_host)
        yield containers.build_image()
