"""A worker site in another region, served locally as a deployed site stack would be: the site's parameter
in that region's SSM, WORKER_SITE_REGIONS set for Validate And Plan and launch_worker, and launch_worker's
RunTask sent to that region's ECS (the local endpoint, signed for the region). A target placed there runs
green with its workers launched through the site; a region the runtime does not serve is refused before any
database is touched."""

import json

import pytest

from pgarena.aws.launch import container_environment
from pgarena.aws.settings import STEP_VAR
from pgarena.local.runtime import CLUSTER_ARN, LocalRuntime, region_site
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

FAR = "eu-west-1"


def matrix(campaign: str, far_region: str, home: bool = True) -> dict:
    far = {"name": "far", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}, "placement": {"region": far_region}}
    return {
        "campaign": campaign,
        "connections": {"monitor_interval_s": 1},
        "targets": [
            *([{"name": "home", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}] if home else []),
            far,
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


def target_of(task: dict) -> str:
    """The target a task's worker measured, from the step RunTask's overrides carried."""
    return json.loads(container_environment(task["overrides"])[STEP_VAR])["target"]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    with LocalRuntime(tmp_path_factory.mktemp("site-regions-results"), site_regions=(FAR,)) as rt:
        yield rt


def test_a_target_in_a_served_region_runs_green_through_its_site(runtime):
    # Given one target at home and one placed in the region the runtime serves a site in
    # When the campaign runs
    run = runtime.run(parse_campaign(matrix("site-regions", FAR)))

    # Then both succeed, and the far target is reported at its site
    assert run.status == "SUCCEEDED", run.error
    home, far = run.results.targets
    for target in (home, far):
        assert target.status == "succeeded", [target.error, *(w.error for w in target.workloads)]
        assert target.workloads[0].tps > 0
    assert far.site == FAR

    # And the far target's workers were launched in the site (its cluster, a task of its region), the home
    # target's at home
    by_target: dict[str, set[tuple[str, str]]] = {}
    for arn, task in runtime.workers.tasks.items():
        by_target.setdefault(target_of(task), set()).add((arn.split(":")[3], task["clusterArn"]))
    assert by_target == {
        "home": {("us-east-1", CLUSTER_ARN)},
        "far": {(FAR, region_site(FAR).cluster_arn)},
    }
    # one warm worker for the phase: init, then run
    assert sum(1 for task in runtime.workers.tasks.values() if target_of(task) == "far") == 1


def test_a_region_the_runtime_does_not_serve_is_refused_before_anything_starts(runtime):
    started = len(runtime.workers.tasks)

    # When a target names a region with no site here
    run = runtime.run(parse_campaign(matrix("site-regions-unserved", "ap-south-1")))

    # Then Validate And Plan refuses it, naming the field, the region and the fix; no worker started
    text = f"{run.status} {run.error} {run.results.error if run.results else ''}"
    assert "placement.region" in text and "'ap-south-1'" in text and "pgarena:sites" in text, text
    assert len(runtime.workers.tasks) == started
