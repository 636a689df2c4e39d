"""An external site (ECS Anywhere) under `--aws-strict`: the runtime serves the site as a stack deployed with it
in pgarena:external_sites would, and a target placed there runs green, its preflight and its workers started as
EXTERNAL tasks on the local "registered instance" carrying the site's attribute (a Lambda cannot run there);
a site the runtime does not serve is refused before any database is touched."""

import pytest

from pgarena.local.runtime import LocalRuntime
from pgarena.model.results import PreflightOrigin
from pgarena.planning.campaign import parse_campaign
from tests.integration.test_site_regions import preflight_evidence, work_of

pytestmark = pytest.mark.integration

SITE = "gcp-local"
INSTANCE = f"container-instance/pgarena-local/{SITE}"


def matrix(campaign: str, site: str, far_settings: dict | None = None, home: bool = False) -> dict:
    return {
        "campaign": campaign,
        "connections": {"monitor_interval_s": 1},
        "targets": [
            *([{"name": "home", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}] if home else []),
            {
                "name": "far",
                "provider": "embedded",
                "embedded": {"settings": {"fsync": "off", **(far_settings or {})}},
                "placement": {"site": site},
            },
        ],
        "workloads": [
            {
                "name": "sel",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": 2, "jobs": 1, "duration_s": 2, "builtin": "select-only", "progress_s": 1},
            }
        ],
    }


@pytest.fixture(scope="module")
def runtime(tmp_path_factory, worker_image):  # strict workers are containers of the worker image
    with LocalRuntime(tmp_path_factory.mktemp("external-results"), aws_strict=True, external_sites=(SITE,)) as rt:
        yield rt


def test_a_campaign_on_an_external_site_runs_green_as_external_tasks(runtime):
    # Given a target placed on the external site the runtime serves
    # When it runs under --aws-strict
    run = runtime.run(parse_campaign(matrix("external-site", SITE)))

    # Then it succeeds, and every worker was an EXTERNAL task placed on the site's instance
    assert run.status == "SUCCEEDED", run.error
    (target,) = run.results.targets
    assert target.status == "succeeded", [target.error, *(w.error for w in target.workloads)]
    tasks = list(runtime.workers.tasks.values())
    assert len(tasks) == 1  # one warm worker for the phase: its preflight, then init and run
    assert [work_of(task)["kind"] for task in tasks] == ["preflight"]
    assert {(task["launchType"], task["containerInstanceArn"].rsplit(":", 1)[1]) for task in tasks} == {("EXTERNAL", INSTANCE)}
    # with the placement constraint the launcher sent, as RunTask would receive it in AWS
    assert all(task["clusterArn"].endswith("cluster/pgarena-local") for task in tasks)
    # And the preflight ran on the site, in the container that then ran the steps (its results and its record say so)
    worker_id = target.workloads[0].worker.worker_id
    assert target.server.preflight == PreflightOrigin(site=SITE, runner="worker", worker_id=worker_id)
    assert preflight_evidence(runtime, run.campaign_id, "far")["server"]["preflight"]["site"] == SITE


def test_a_preflight_refused_on_the_site_fails_its_target_and_keeps_the_home_target_s_results(runtime):
    # Given a far server whose budget cannot hold the clients, on the external site, beside a home target
    run = runtime.run(parse_campaign(matrix("external-refused", SITE, {"max_connections": "8"}, home=True)))

    # Then the campaign succeeds with the home target's results; the far target failed budget_refused, its
    # record written on the site by the container that preflighted it (the task role's grants)
    assert run.status == "SUCCEEDED", run.error
    home, far = run.results.targets
    assert home.status == "succeeded" and home.workloads[0].tps > 0, home.error
    assert far.status == "failed" and far.error.kind == "budget_refused", far.error
    assert "lower clients to" in far.error.message
    record = preflight_evidence(runtime, run.campaign_id, "far")
    assert (record["preflight"]["runner"], record["preflight"]["site"], record["error"]["kind"]) == (
        "worker",
        SITE,
        "budget_refused",
    )
    # And its only task was its preflight: no step of it started
    mine = [work_of(t) for t in runtime.workers.tasks.values() if work_of(t)["campaign_id"] == run.campaign_id]
    assert [w["kind"] for w in mine if w["target"] == "far"] == ["preflight"]


def test_a_site_the_runtime_does_not_serve_is_refused_before_anything_starts(runtime):
    started = len(runtime.workers.tasks)

    # When a target names another site
    run = runtime.run(parse_campaign(matrix("external-unserved", "azure-local")))

    # Then Validate And Plan refuses it, naming the field, the site and the fix; no worker started
    text = f"{run.status} {run.error} {run.results.error if run.results else ''}"
    assert "placement.site" in text and "'azure-local'" in text and "pgarena:external_sites" in text, text
    assert len(runtime.workers.tasks) == started
