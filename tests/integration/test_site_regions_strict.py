"""A worker site in another region under `--aws-strict`: the app synthesized with the region in pgarena:sites,
its roles enforced, so launch_worker reads the site's parameter by the grant the deployed stack gives it, and
the worker that preflights the target there reads the plan, leases and keeps preflight's answer by the task
role's grants. (A module of its own: the strict runtime and test_site_regions' module-wide one cannot share moto.)"""

import pytest

from pgarena.local.runtime import LocalRuntime
from pgarena.model.results import PreflightOrigin
from pgarena.planning.campaign import parse_campaign
from tests.integration.test_site_regions import FAR, matrix, preflight_evidence, work_of

pytestmark = pytest.mark.integration


def test_under_aws_strict_the_site_s_grants_let_its_target_run_green(tmp_path, worker_image):
    # Given the strict runtime serving the site: the synthesized stack's roles enforced, as deployed with
    # the site in pgarena:sites (launch_worker may read the site's parameter in its region)
    with LocalRuntime(tmp_path, aws_strict=True, site_regions=(FAR,)) as strict:
        # When a target placed there runs
        run = strict.run(parse_campaign(matrix("site-regions-strict", FAR, home=False)))
        tasks = list(strict.workers.tasks)
        works = [work_of(task) for task in strict.workers.tasks.values()]
        record = preflight_evidence(strict, run.campaign_id, "far")

    # Then it succeeds, its workers (containers) launched as the site's tasks and reporting home
    assert run.status == "SUCCEEDED", run.error
    (far,) = run.results.targets
    assert far.status == "succeeded", [far.error, *(w.error for w in far.workloads)]
    assert len(tasks) == 1 and all(arn.split(":")[3] == FAR for arn in tasks)
    # And its preflight ran there, in that task, which then ran its steps
    assert [work["kind"] for work in works] == ["preflight"]
    worker_id = far.workloads[0].worker.worker_id
    assert far.server.preflight == PreflightOrigin(site=FAR, runner="worker", worker_id=worker_id)
    assert record["server"]["preflight"]["worker_id"] == worker_id
