"""Issue 34.9: after a failure mid-campaign (a full disk), `pgarena resume` reuses every kept, verified
step and runs again only the lost one, after the load it needs."""

from __future__ import annotations

import shutil

import pytest

from pgarena.local.progress import kept_steps
from pgarena.local.resume import resume_local
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

MATRIX = {
    "campaign": "stepwise",
    "connections": {"monitor_interval_s": 0.5},
    "targets": [{"name": "one", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": [1, 2], "jobs": 1, "duration_s": 2, "progress_s": 1},
        }
    ],
}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    run = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("stepwise"))
    assert run.status == "SUCCEEDED", run.error
    return run


@pytest.mark.parametrize("loss", ["missing", "unverified"])
def test_resume_runs_again_only_the_lost_step_after_its_load(measured, tmp_path, loss):
    # Given a folder without results.json (the disk filled) whose run at 2 clients was lost or cut short
    folder = tmp_path / measured.campaign_id
    shutil.copytree(measured.results_dir, folder)
    (folder / "results.json").unlink()
    lost = folder / "raw/one/tpcb/c2-r1"
    if loss == "missing":
        shutil.rmtree(lost)
    else:
        log = sorted(lost.glob("transactions.*.gz"))[0]
        log.write_bytes(log.read_bytes()[:10])
    kept_tps = {w.clients: w.tps for w in measured.results.targets[0].workloads}

    # When the campaign is resumed
    resumed = resume_local(folder)

    # Then the re-run campaign ran the lost step and the load it needs, nothing else
    (rerun_id,) = resumed.reruns
    ran_again = sorted(s.step_id for s in kept_steps(folder.parent / rerun_id))
    assert ran_again == ["one/tpcb/c2-r1", "one/tpcb/init"]
    # And the combined results keep the run at 1 client as measured, and take the re-run's at 2
    (target,) = resumed.results.targets
    assert target.status == "succeeded", target.error
    tps = {w.clients: w.tps for w in target.workloads}
    assert tps[1] == kept_tps[1] and tps[2] and tps[2] != kept_tps[2]
    assert resumed.results.resumed_from == [measured.campaign_id, rerun_id]
    # And every step of the combined folder is there, verified
    combined = {s.step_id: s.campaign_id for s in kept_steps(resumed.results_dir)}
    assert combined == {"one/tpcb/init": rerun_id, "one/tpcb/c1-r1": measured.campaign_id, "one/tpcb/c2-r1": rerun_id}
