"""warmup_s on a real pgbench run: the figures cover the window after it, traceable to the transaction log."""

import gzip

import pytest

from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign
from pgarena.tools.pgbench.figures import PgbenchFigures

MATRIX = {
    "campaign": "warmup",
    "targets": [{"name": "embedded", "provider": "embedded", "embedded": {}}],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 2, "duration_s": 4, "progress_s": 1, "warmup_s": 2},
        }
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    result = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("results"))
    assert result.status == "SUCCEEDED", result.error
    return result


def test_figures_cover_only_the_window_after_the_warmup(run):
    # Given a 4 s run whose first 2 s are a warm-up
    workload = run.results.targets[0].workloads[0]
    assert workload.status == "succeeded" and workload.warmup_s == 2
    # When its transaction log (the raw evidence) is read from the window's recorded start
    figures = PgbenchFigures.of(workload.tool_figures)
    since_us = round(figures.window_start_epoch * 1_000_000)
    in_window, before = 0, 0
    for path in workload.raw:
        if "transactions" not in path:
            continue
        with gzip.open(run.results_dir / path, "rt") as log:
            for line in log:
                fields = line.split()
                ended_us = int(fields[4]) * 1_000_000 + int(fields[5])
                in_window += ended_us >= since_us
                before += ended_us < since_us
    # Then the transactions counted are those of the window, the warm-up's are counted apart, and tps
    # is the window's transactions over its length, below what pgbench printed for the whole run or not
    assert in_window == workload.transactions + workload.failed_transactions
    assert before == figures.warmup_transactions > 0
    assert workload.tps == pytest.approx(workload.transactions / workload.tool_figures.window_s)
    assert figures.run_transactions > workload.transactions
    # And the progress intervals kept all lie after the warm-up
    assert workload.progress and min(p.elapsed_s for p in workload.progress) >= 3.0


def test_the_report_says_the_warmup_was_left_out(run):
    html = (run.results_dir / "report.html").read_text()
    # a short label in the table (it fits 1,280 px), the full sentence on hover
    assert 'title="the first 2 s of each run are left out of its figures">warm-up 2 s</span>' in html
    summary = (run.results_dir / "summary.md").read_text()
    assert "(first 2 s left out: warm-up)" in summary
