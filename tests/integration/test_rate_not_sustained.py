"""A pgbench --rate far above what an embedded server can do is flagged, and shown in the report."""

import pytest

from pgarena.analysis.rate import RATE_NOT_SUSTAINED
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

# No laptop server runs a million TPC-B transactions a second: the schedule falls behind at once.
IMPOSSIBLE_RATE_TPS = 1_000_000

MATRIX = {
    "campaign": "rate-check",
    "targets": [{"name": "embedded", "provider": "embedded", "embedded": {}}],
    "workloads": [
        {
            "name": "flooded",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 2, "duration_s": 3, "progress_s": 1, "rate_tps": IMPOSSIBLE_RATE_TPS},
        }
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    result = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("results"))
    assert result.status == "SUCCEEDED", result.error
    return result


def test_rate_above_capacity_is_flagged_on_the_workload_result(run):
    # Given a run throttled to a rate far above the server's capacity
    # When the campaign's results are read
    workload = run.results.targets[0].workloads[0]
    # Then it succeeded, with the rate recorded and flagged as not sustained, lag sampled per interval
    assert workload.status == "succeeded" and workload.rate_tps == IMPOSSIBLE_RATE_TPS
    assert [i.kind for i in workload.incidents] == [RATE_NOT_SUSTAINED]
    assert workload.tps < 0.95 * IMPOSSIBLE_RATE_TPS
    assert all(p.lag_ms is not None for p in workload.progress)


def test_flag_is_in_the_report_and_on_the_ranking(run):
    # Given the same campaign's report folder
    html = (run.results_dir / "report.html").read_text()
    # When it is read
    # Then the incident is listed, and the ranking says latency was not ranked at that point
    assert RATE_NOT_SUSTAINED in html
    assert run.results.ranking[0].flags == ["flooded at 2 clients: rate not sustained: latency not ranked at this point"]
