"""The pgbench Tool's measurement: what of pgbench's output and per-transaction log reaches results.json."""

import json

import pytest

from pgarena.model.plan import Step
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.tools.pgbench.figures import PgbenchFigures
from pgarena.tools.pgbench.tool import Pgbench
from tests.conftest import FIXTURES
from tests.unit.test_txlog import START

PGBENCH = FIXTURES / "pgbench"


def run_step(**run) -> Step:
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["workloads"][0]["run"].update(run)
    return plan_campaign(parse_campaign(data), "cid").targets[0].steps[1]


# Each rate fixture's summary, as pgbench printed it: "rate limit schedule lag: avg A (max M) ms",
# "number of transactions skipped: S", "... above the 20.0 ms latency limit: L", and from 15
# "number of transactions retried: R", "total number of retries: N".
RATE_SUMMARIES = {
    "pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt": {
        "lag_avg_ms": 0.146,
        "lag_max_ms": 2.617,
        "skipped_transactions": 1,
        "above_latency_limit": 1,
    },
    "pg12_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt": {
        "lag_avg_ms": 0.143,
        "lag_max_ms": 2.550,
        "skipped_transactions": 1,
        "above_latency_limit": 1,
    },
    "pg15_run_tpcb_rate_R400_L20_maxtries3_c4_j2_T3_P1.txt": {
        "lag_avg_ms": 0.143,
        "lag_max_ms": 2.550,
        "skipped_transactions": 0,
        "above_latency_limit": 0,
        "retried": 0,
        "retries": 0,
    },
    "pg18_run_tpcb_rate_R400_L20_maxtries3_c4_j2_T3_P1.txt": {
        "lag_avg_ms": 0.149,
        "lag_max_ms": 3.433,
        "skipped_transactions": 0,
        "above_latency_limit": 0,
        "retried": 0,
        "retries": 0,
    },
}


@pytest.mark.parametrize("name", sorted(RATE_SUMMARIES))
def test_lag_and_skipped_are_pgbenchs_own_summary_not_the_last_interval(name, tmp_path):
    # Given a rate and latency-limit run's output (pg10-pg18), its last progress interval's lag differing
    text = (PGBENCH / name).read_text()
    # When the tool measures it
    measured = Pgbench().measure(run_step(), text, 0, tmp_path)
    # Then its figures are pgbench's printed summary figures, exactly, and no per-interval lag
    assert isinstance(measured.tool_figures, PgbenchFigures)
    assert measured.tool_figures.model_dump(exclude={"scale"}) == RATE_SUMMARIES[name]
    assert measured.tool_figures.scale == 1  # "scaling factor: 1": what a hot-row finding reads
    assert measured.failed_transactions == (0 if "maxtries" in name else None)


def test_a_closed_loop_run_adds_no_rate_figures(tmp_path):
    text = (PGBENCH / "pg18_run_tpcb_c4_j2_T5_P1.txt").read_text()
    assert Pgbench().measure(run_step(), text, 0, tmp_path).tool_figures.model_dump() == {"scale": 1}


def test_the_log_counts_failed_and_skipped_transactions_apart(tmp_path):
    # Given a per-transaction log with 3 done, 2 failed and 1 skipped transactions
    latencies = ["1000", "failed", "2000", "skipped", "failed", "3000"]
    lines = "".join(f"0 {i} {latency} 0 {START} {i * 1000}\n" for i, latency in enumerate(latencies))
    (tmp_path / "transactions.1").write_text(lines)
    text = (PGBENCH / "pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt").read_text()
    # When the tool measures the run
    measured = Pgbench().measure(run_step(), text, 0, tmp_path)
    # Then each count is its own
    figures = PgbenchFigures.of(measured.tool_figures)
    assert (figures.logged_transactions, figures.logged_failed, figures.logged_skipped) == (3, 2, 1)


def test_after_a_warmup_failed_and_skipped_are_the_windows_each_apart(tmp_path):
    # Given a rate run with a 1 s warm-up: a failed and a skipped transaction in it, then in the window
    # 3 done, 2 failed and 2 skipped (each line ending at second START + t)
    timed = [(0, "1000"), (0, "failed"), (0, "skipped")]
    timed += [(2, "1000"), (2, "failed"), (2, "skipped"), (3, "2000"), (3, "failed"), (3, "skipped"), (3, "3000")]
    lines = "".join(f"0 {i} {latency} 0 {START + t} {i * 1000}\n" for i, (t, latency) in enumerate(timed))
    (tmp_path / "transactions.1").write_text(lines)
    text = (PGBENCH / "pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt").read_text()
    # When the tool measures the run
    measured = Pgbench().measure(run_step(warmup_s=1), text, 0, tmp_path)
    # Then the window's failed and skipped counts are each their own; pgbench's whole-run skipped is kept beside
    assert (measured.transactions, measured.failed_transactions) == (3, 2)
    figures = PgbenchFigures.of(measured.tool_figures)
    assert (figures.skipped_transactions, figures.run_skipped_transactions) == (2, 1)
    assert figures.warmup_transactions == 3


def test_after_a_warmup_the_count_above_the_latency_limit_is_the_windows(tmp_path):
    # Given a rate run with a 2.5 ms latency limit and a 1 s warm-up (a 9 ms transaction in it): in the window
    # 1, 2.6 and 3 ms transactions; pgbench's own summary counted 1 above its limit over the whole run
    timed = [(0, "9000"), (2, "1000"), (3, "2600"), (3, "3000")]
    lines = "".join(f"0 {i} {latency} 0 {START + t} {i * 1000}\n" for i, (t, latency) in enumerate(timed))
    (tmp_path / "transactions.1").write_text(lines)
    text = (PGBENCH / "pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt").read_text()
    # When the tool measures the run
    measured = Pgbench().measure(run_step(warmup_s=1, rate_tps=400, latency_limit_ms=2.5), text, 0, tmp_path)
    # Then above_latency_limit counts the window's late transactions, as transactions counts its done ones;
    # pgbench's whole-run count is kept beside it
    assert measured.transactions == 3
    figures = PgbenchFigures.of(measured.tool_figures)
    assert (figures.above_latency_limit, figures.run_above_latency_limit) == (2, 1)
