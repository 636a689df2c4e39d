import pytest

from pgarena.analysis.metrics import (
    error_rate,
    findings,
    fit_usl,
    point_metrics,
    retry_rate,
    scaling_curve,
    stability,
    target_metrics,
    tps_per_usd_hour,
)
from pgarena.analysis.ranking import rank_targets, unranked_reasons
from pgarena.model.errors import ErrorInfo
from pgarena.model.figures import Latency
from pgarena.model.monitor import ConnectionReport, Incident
from pgarena.model.results import LoadResult, ProgressSample, TargetResult, WorkloadResult
from pgarena.tools.sysbench.figures import SysbenchFigures

# METHODOLOGY.md section 3: databases consolidated on one cluster, total ktps.
CONSOLIDATION = [(1, 64.0), (8, 540.0), (16, 1045.0), (32, 1957.0), (40, 2194.0)]


def progress(*tps):
    return [ProgressSample(elapsed_s=float(60 * (i + 1)), tps=v) for i, v in enumerate(tps)]


def run(tps, clients=4, repetition=1, status="succeeded", **fields):
    return WorkloadResult(name="tpcb", tool="pgbench", clients=clients, repetition=repetition, status=status, tps=tps, **fields)


def test_steady_run_has_low_cv_and_no_incident():
    # Given per-interval tps that wobble by about 1%
    # When its stability is measured
    s = stability(progress(1000, 990, 1010, 1000))
    # Then the coefficient of variation is small and nothing is flagged
    assert s.cv == pytest.approx(0.00707, abs=1e-4)
    assert s.worst_vs_median == pytest.approx(0.99)
    assert s.incidents == []


def test_collapse_like_the_azure_study_is_flagged():
    # Given the 8 vCore progress lines: 457 tps in the first minute, then 15-36
    s = stability(progress(457, 15, 36, 20, 18, 23))
    # Then the run is flagged as a collapse where it started, and worst vs median shows it
    (incident,) = s.incidents
    assert incident.kind == "tps_collapse" and incident.at_s == 120.0
    assert "457.0 to 15.0" in incident.message
    assert s.collapsed and s.worst_vs_median == pytest.approx(15 / 21.5)


def test_dip_the_run_recovers_from_is_a_stall_not_a_collapse():
    s = stability(progress(1000, 1010, 80, 990, 1000))
    assert [i.kind for i in s.incidents] == ["tps_stall"]
    assert not s.collapsed


def test_an_ordinary_interval_after_a_one_interval_spike_is_no_collapse():
    # Given 250-350 tps with one interval's spike to 1229.7, the run ending at 250.2 (under 25% of the spike)
    s = stability(progress(348.8, 258.8, 337.0, 1229.7, 250.2))
    # Then nothing fell: the baseline is the median of the earlier intervals (342.9), not the spike
    assert s.incidents == [] and not s.collapsed and not s.stalled


def test_a_run_ending_after_a_one_interval_spike_keeps_a_stability_score_in_the_ranking():
    # Given the run (348.8, 258.8, 337.0, 1229.7, 250.2 tps) beside a steady one
    spiky = TargetResult(
        name="spiky",
        provider="p",
        status="succeeded",
        workloads=[run(484.9, progress=progress(348.8, 258.8, 337.0, 1229.7, 250.2))],
    )
    steady = TargetResult(
        name="steady", provider="p", status="succeeded", workloads=[run(480.0, progress=progress(480, 490, 470, 480, 480))]
    )
    # When ranked
    scores = {e.target: e.metrics["stability"] for e in rank_targets([spiky, steady])}
    # Then its stability is scored from its CV (1 - 0.77), not zeroed as a collapse
    assert scores["steady"] == 1.0 and 0.2 < scores["spiky"] < 0.3


def test_a_collapse_is_measured_from_the_median_before_it_not_a_spike():
    # Given a steady 1000 tps with one spike to 5000, then 100 tps to the end
    s = stability(progress(1000, 1010, 5000, 990, 100, 90, 110))
    # Then the collapse is named against the earlier intervals' median
    (incident,) = s.incidents
    assert incident.kind == "tps_collapse" and incident.at_s == 300.0
    assert incident.message.startswith("tps fell from 1,005.0 to 100.0 at 300 s and never recovered")


def seconds(*tps):
    return [ProgressSample(elapsed_s=float(i + 1), tps=v) for i, v in enumerate(tps)]


def test_a_frozen_server_is_a_stall_and_its_point_is_not_ranked_as_healthy():
    # Given a run at ~2,500 tps whose server froze for 6 s (SIGSTOP): no transaction in those intervals
    frozen = seconds(2500, 2510, 2490, 0, 0, 0, 0, 0, 0, 2505, 2495, 2500)
    # When its stability is measured
    s = stability(frozen)
    # Then it is a stall with the why, and the point is not complete (not ranked)
    (incident,) = [i for i in s.incidents if i.kind == "tps_stall"]
    assert s.stalled and "no transactions for 6 s from 3 s" in incident.message
    point = point_metrics("a", "tpcb", 4, [run(1250.0, progress=frozen)])
    assert point.stalled and not point.complete


def test_an_interval_under_a_tenth_of_the_median_is_a_stall():
    s = stability(seconds(1000, 1010, 990, 60, 1000, 1005))
    assert s.stalled and any("under 10%" in i.message for i in s.incidents)


def test_a_run_that_reported_nothing_for_a_while_is_a_stall():
    # Given progress every second, but none for 8 s in the middle (the tool blocked as a whole)
    quiet = [ProgressSample(elapsed_s=t, tps=1000.0) for t in (1.0, 2.0, 3.0, 11.0, 12.0, 13.0)]
    s = stability(quiet)
    assert s.stalled and any("no progress reported for 8 s" in i.message for i in s.incidents)


def test_ordinary_wobble_is_no_stall():
    assert not stability(seconds(1000, 700, 1100, 900, 1000)).stalled


def test_a_stalled_point_is_left_out_of_the_ranking_with_the_reason():
    frozen = seconds(2500, 0, 0, 0, 0, 0, 0, 2500, 2500)
    steady = seconds(2000, 2000, 2010, 1990, 2000, 2000, 2000, 2000, 2000)
    targets = [
        TargetResult(name="frozen", provider="p", status="succeeded", workloads=[run(1100.0, progress=frozen)]),
        TargetResult(name="steady", provider="p", status="succeeded", workloads=[run(2000.0, progress=steady)]),
    ]
    ranking = rank_targets(targets)
    assert [entry.target for entry in ranking] == ["steady"]
    assert "stalled" in unranked_reasons(targets, ranking, [target_metrics(t) for t in targets])["frozen"]


def test_single_interval_gives_no_stability_figures():
    s = stability(progress(500))
    assert s.intervals == 1 and s.cv is None and s.incidents == []


def test_error_rate_counts_failed_over_all_attempted_transactions():
    # pgbench prints "number of failed transactions: 25 (2.439%)" for 1000 processed + 25 failed
    assert error_rate(1000, 25) == pytest.approx(25 / 1025)
    assert error_rate(1000, None) is None


def test_retry_rate_is_retried_over_processed():
    assert retry_rate(200, 10) == pytest.approx(0.05)
    assert retry_rate(0, 0) is None


def test_point_reads_retries_and_qps_from_the_tools_figures():
    # Given a sysbench run: 40 ignored errors (each restarts its transaction) over 2000 transactions
    figures = SysbenchFigures(qps=1900.0, ignored_errors=40, reconnects=0)
    sysbench = run(100.0, transactions=2000, tool_figures=figures)
    # When aggregated
    p = point_metrics("a", "oltp", 4, [sysbench])
    # Then the retry rate and qps are there
    assert p.retry_rate == pytest.approx(0.02) and p.qps == 1900.0


def test_load_time_counts_init_not_cleanup():
    target = TargetResult(
        name="a",
        provider="p",
        status="succeeded",
        loads=[
            LoadResult(workload="oltp", kind="init", status="succeeded", seconds=12.5),
            LoadResult(workload="oltp", kind="cleanup", status="succeeded", seconds=0.4),
        ],
    )
    assert target_metrics(target).load_s == {"oltp": 12.5}


def test_cost_efficiency_is_tps_per_dollar_hour():
    assert tps_per_usd_hour(1500.0, 0.75) == pytest.approx(2000.0)
    assert tps_per_usd_hour(1500.0, None) is None


def test_point_averages_repetitions_and_keeps_their_spread():
    # Given two repetitions of one point
    runs = [run(100.0, latency_ms=Latency(avg=40.0)), run(120.0, repetition=2, latency_ms=Latency(avg=34.0))]
    # When aggregated
    p = point_metrics("a", "tpcb", 4, runs, hourly_cost_usd=2.0)
    # Then tps is the mean with the sample stddev, latency the mean, cost efficiency from the mean
    assert p.tps == 110.0 and p.tps_stddev == pytest.approx(14.142, abs=1e-3)
    assert p.latency_ms.avg == 37.0 and p.tps_per_usd_hour == 55.0
    assert p.runs == 2 and p.complete


def test_failed_repetition_is_counted_not_averaged():
    p = point_metrics("a", "tpcb", 4, [run(100.0), run(None, repetition=2, status="failed")])
    assert p.tps == 100.0 and p.failed_runs == 1
    assert not p.complete


def test_clamped_run_marks_its_point_incomplete():
    # Given a run that asked for 8 clients and ran with 6
    p = point_metrics("a", "tpcb", 8, [run(100.0, clients=6, requested_clients=8)])
    assert p.clamped and p.ran_clients == [6]
    assert not p.complete


def test_scaling_efficiency_is_measured_over_ideal_linear():
    # Given the consolidation table
    curve = scaling_curve(CONSOLIDATION)
    # Then ideal = first tps x N / first N, and 40 databases reach 86% of it
    assert [p.ideal_tps for p in curve] == [64, 512, 1024, 2048, 2560]
    assert curve[-1].efficiency == pytest.approx(2194 / 2560)
    assert curve[1].efficiency > 1  # 8 databases scaled superlinearly


def test_usl_fit_reproduces_the_consolidation_table():
    # Given the five measured points of METHODOLOGY.md section 3
    # When the Universal Scalability Law is fitted
    fit = fit_usl(CONSOLIDATION)
    # Then every prediction is within 3% of what was measured
    for clients, measured in CONSOLIDATION:
        assert fit.predict(clients) == pytest.approx(measured, rel=0.03)
    assert fit.max_error < 0.03 and fit.good
    # and the coherency term predicts a peak beyond the measured range
    assert fit.kappa > 0 and fit.peak_n > 40 and fit.peak_tps > 2194


def test_usl_fit_recovers_known_parameters():
    # Given points drawn from a USL curve with sigma 0.05 and kappa 0.001
    points = [(n, 1000 * n / (1 + 0.05 * (n - 1) + 0.001 * n * (n - 1))) for n in (1, 2, 4, 8, 16, 32)]
    fit = fit_usl(points)
    assert fit.sigma == pytest.approx(0.05, rel=1e-6) and fit.kappa == pytest.approx(0.001, rel=1e-6)
    assert fit.peak_n == pytest.approx(((1 - 0.05) / 0.001) ** 0.5)


def test_usl_fit_without_retrograde_data_falls_back_to_amdahl():
    # Given throughput that keeps rising ever more slowly (Amdahl, sigma 0.1)
    points = [(n, 500 * n / (1 + 0.1 * (n - 1))) for n in (1, 2, 4, 8)]
    fit = fit_usl(points)
    assert fit.kappa == 0 and fit.peak_n is None
    assert fit.sigma == pytest.approx(0.1, rel=1e-6)


def test_usl_needs_three_client_counts():
    assert fit_usl([(1, 100.0), (2, 190.0)]) is None


def test_sweep_gets_a_scaling_curve_per_workload():
    # Given a target that ran tpcb with 1, 2 and 4 clients
    target = TargetResult(
        name="a",
        provider="p",
        status="succeeded",
        workloads=[run(100.0, clients=1), run(190.0, clients=2), run(340.0, clients=4)],
    )
    (curve,) = target_metrics(target).scaling
    assert [p.clients for p in curve.points] == [1, 2, 4]
    assert curve.usl is not None and curve.points[2].usl_tps == pytest.approx(340.0, rel=0.01)


def test_findings_classify_failures_with_links_to_raw_files():
    # Given a target whose step failed with too many clients, the raw key holding the campaign prefix
    error = ErrorInfo(kind="too_many_clients", message="sorry, too many clients already", raw="cid/raw/a/tpcb/c8-r1/pgbench.log")
    target = TargetResult(
        name="a", provider="p", status="failed", error=error, workloads=[run(None, clients=8, status="failed", error=error)]
    )
    # When findings are listed
    (finding,) = findings(target, "cid")
    # Then the step's failure appears once, with a path relative to the campaign folder
    assert (finding.source, finding.kind, finding.clients) == ("run", "too_many_clients", 8)
    assert finding.raw == ["raw/a/tpcb/c8-r1/pgbench.log"]


def test_findings_include_connection_drops_from_the_monitor():
    report = ConnectionReport(
        interval_s=5,
        samples=3,
        peak_benchmark=950,
        peak_total=960,
        peak_by_state={},
        longest_s_by_state={},
        raw="raw/a/tpcb/c950-r1/monitor.jsonl",
        incidents=[Incident(kind="connection_drop", at_s=10.0, message="950 -> 628")],
    )
    target = TargetResult(name="a", provider="p", status="succeeded", workloads=[run(100.0, connections=report)])
    (finding,) = findings(target)
    assert finding.kind == "connection_drop" and finding.raw == ["raw/a/tpcb/c950-r1/monitor.jsonl"]
