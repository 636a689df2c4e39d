"""Issue 25.9: a kept transaction log cut short (a disk that filled while copying) is not evidence:
`pgarena resume` re-runs its step and says why."""

from __future__ import annotations

import gzip
import shutil

import pytest

from pgarena.local.resume import resume_local
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

MATRIX = {
    "campaign": "evidence",
    "connections": {"monitor_interval_s": 0.5},
    "targets": [{"name": "one", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 2, "jobs": 1, "duration_s": 2, "progress_s": 1},
        }
    ],
}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    run = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("evidence"))
    assert run.status == "SUCCEEDED", run.error
    return run


@pytest.mark.parametrize("results_kept", [True, False], ids=["results.json kept", "disk full before results.json"])
def test_a_truncated_transaction_log_makes_resume_re_run_its_step(measured, tmp_path, results_kept):
    # Given a campaign folder whose run succeeded, its transaction log then cut to half (gzip -t: unexpected end)
    folder = tmp_path / measured.campaign_id
    shutil.copytree(measured.results_dir, folder)
    if not results_kept:
        (folder / "results.json").unlink()
    logs = sorted(folder.glob("raw/one/tpcb/c2-r1/transactions.*.gz"))
    assert logs
    data = logs[0].read_bytes()
    logs[0].write_bytes(data[: len(data) // 2])

    # When the campaign is resumed
    events = []
    resumed = resume_local(folder, on_event=events.append)

    # Then the step is re-run (a new campaign), saying which file was incomplete and why
    assert len(resumed.reruns) == 1
    said = [e.text for e in events if e.text.startswith("Evidence Incomplete one/tpcb")]
    assert said and f"{logs[0].relative_to(folder)} is truncated" in said[0]
    # And the combined results hold the re-run's measurement, its transaction logs whole
    (target,) = resumed.results.targets
    assert target.status == "succeeded", target.error
    (run,) = target.workloads
    assert run.status == "succeeded" and run.tps
    kept = sorted((resumed.results_dir / "raw/one/tpcb/c2-r1").glob("transactions.*.gz"))
    assert kept and all(gzip.decompress(path.read_bytes()) for path in kept)
