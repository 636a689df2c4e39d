import pytest
from typer.testing import CliRunner

from pgarena.analysis.compare import compare_campaigns, compare_points, load_results
from pgarena.analysis.metrics import point_metrics
from pgarena.cli import app, comparison_table
from pgarena.model.comparison import Comparison
from pgarena.model.figures import Latency
from pgarena.model.results import CampaignResults, ProgressSample, TargetResult, WorkloadResult
from pgarena.model.slo import SloSearch
from pgarena.model.tool_figures import ToolFigures
from tests.conftest import FIXTURES

WEEK1, WEEK2 = FIXTURES / "results" / "week1", FIXTURES / "results" / "week2"


def point(*tps, latency=None, status="succeeded", requested=None, progress=(), slo_tps=(), slo_p=99):  # noqa: PLR0913  # a point's fields, as keywords with defaults
    runs = [
        WorkloadResult(
            name="tpcb",
            tool="pgbench",
            clients=4 if requested is None else 3,
            requested_clients=requested,
            repetition=i + 1,
            status=status,
            tps=value if status == "succeeded" else None,
            latency_ms=Latency(avg=latency, p95=latency),
            progress=[ProgressSample(elapsed_s=float(k), tps=v) for k, v in enumerate(progress)],
            slo=SloSearch(percentile=slo_p, limit_ms=50.0, probes=5, ceiling_tps=value, slo_tps=slo_tps[i]) if slo_tps else None,
        )
        for i, value in enumerate(tps)
    ]
    return point_metrics("a", "tpcb", 4, runs)


def three(value: float) -> tuple[float, float, float]:
    """Three runs 1% apart around the value: noise small enough for a few percent to be decided."""
    return value * 0.99, value, value * 1.01


def test_throughput_drop_beyond_the_threshold_is_a_regression():
    # Given tps fell 12% from A to B, three runs each
    change = compare_points(point(*three(1000.0)), point(*three(880.0)))
    # Then it is flagged, with the interval that decided it (95%: tps is the only figure compared)
    assert change.verdict == "regression" and change.tps_change == pytest.approx(-0.12)
    assert change.reasons == ["tps -12.0% [-14.3%, -9.7%] at 95.0%"]


def test_latency_rise_beyond_the_threshold_is_a_regression():
    change = compare_points(point(*three(1000.0), latency=4.0), point(*three(1000.0), latency=5.0))
    assert change.verdict == "regression" and change.latency_field == "p95"
    assert change.latency_change == pytest.approx(0.25)


def test_change_within_the_threshold_is_unchanged():
    # 3% lower, its interval within 5% of no change: equivalent
    assert compare_points(point(*three(1000.0)), point(*three(970.0))).verdict == "unchanged"


def test_threshold_is_configurable():
    assert compare_points(point(*three(1000.0)), point(*three(970.0)), threshold=0.02).verdict == "regression"


def test_gain_is_an_improvement():
    assert compare_points(point(*three(1000.0)), point(*three(1100.0))).verdict == "improvement"


def test_one_run_decides_nothing_whatever_the_change():
    # Given a single run a side, 30% apart: no interval measures the noise
    change = compare_points(point(1000.0), point(700.0))
    assert change.verdict == "within_noise" and change.reasons[0] == "tps -30.0% fewer than 3 runs: no interval"


def test_identical_settings_with_noisy_runs_are_no_regression():
    # Given two campaigns of the same thing, 25% between-run noise, B's mean 20% lower by chance
    change = compare_points(point(800.0, 1000.0, 1200.0), point(600.0, 800.0, 1000.0))
    # Then Welch's interval on the log ratio includes no change: inconclusive, not a regression
    assert change.verdict == "within_noise" and change.reasons[-1] == "inconclusive: not separated, nor within the threshold"


def test_change_within_run_to_run_noise_is_not_a_regression():
    # Given repetitions that spread by +-10% in both campaigns
    change = compare_points(point(900.0, 1000.0, 1100.0), point(850.0, 940.0, 1030.0))
    # Then a 6.5% lower mean is reported as noise
    assert change.verdict == "within_noise"


def test_point_that_now_fails_is_flagged():
    change = compare_points(point(1000.0), point(1000.0, status="failed"))
    assert change.verdict == "failed" and change.worse


def test_clamped_run_is_not_compared():
    change = compare_points(point(*three(1000.0)), point(*three(800.0), requested=4))
    assert change.verdict == "not_comparable" and change.reasons == ["failed or clamped in B"]


def test_collapse_in_b_is_a_regression_even_with_equal_mean():
    change = compare_points(point(100.0, progress=(100, 101, 99, 100)), point(100.0, progress=(300, 30, 40, 30)))
    assert change.verdict == "regression" and "collapsed" in change.reasons[-1]


def test_campaigns_are_matched_by_target_workload_and_clients():
    # Given last week's and this week's campaign, 2 runs a point: aurora slower, rds faster, azure down
    comparison = compare_campaigns(load_results(WEEK1), load_results(WEEK2 / "results.json"))
    verdicts = {(c.target, c.clients): c.verdict for c in comparison.changes}
    # Then each change is classified; 2 runs measure no noise, so no change in a figure is decided
    assert verdicts[("aurora", 4)] == "within_noise" and verdicts[("rds", 4)] == "within_noise"
    assert verdicts[("azure", 1)] == "failed" and verdicts[("cloudsql", 1)] == "within_noise"
    assert len(comparison.regressions) == 4


def test_points_only_in_one_campaign_are_new_or_gone():
    a, b = load_results(WEEK1), load_results(WEEK2)
    b.targets = [t for t in b.targets if t.name != "aurora"]
    a.targets = [t for t in a.targets if t.name != "cloudsql"]
    verdicts = {(c.target, c.clients): c.verdict for c in compare_campaigns(a, b).changes}
    assert verdicts[("aurora", 1)] == "gone" and verdicts[("cloudsql", 1)] == "new"


def test_cli_compare_prints_the_table_and_exits_zero():
    # When two campaign folders are compared from the command line
    result = CliRunner().invoke(app, ["compare", str(WEEK1), str(WEEK2), "--threshold", "0.1"], env={"COLUMNS": "140"})
    # Then the table shows the regression and the command succeeds
    assert result.exit_code == 0, result.output
    assert "providers-20240506 -> providers-20240513" in result.output
    assert "regression" in result.output and "-12.0%" in result.output
    assert "4 regression(s)" in result.output


def test_cli_compare_fails_on_a_regression_when_asked():
    result = CliRunner().invoke(app, ["compare", str(WEEK1), str(WEEK2), "--fail-on-regression"], env={"COLUMNS": "140"})
    assert result.exit_code == 1 and "4 regression(s)" in result.output
    same = CliRunner().invoke(app, ["compare", str(WEEK2), str(WEEK2), "--fail-on-regression"], env={"COLUMNS": "140"})
    assert same.exit_code == 0 and "0 regression(s)" in same.output


def test_tps_at_slo_drop_beyond_the_threshold_is_a_regression():
    # Given the same closed-loop tps, but the rate held under p99 <= 50 ms fell from 600 to 480 tps
    change = compare_points(point(*three(1000.0), slo_tps=three(600.0)), point(*three(1000.0), slo_tps=three(480.0)))
    # Then the drop at SLO alone is flagged
    assert change.verdict == "regression" and change.slo == "p99 <= 50 ms"
    assert (change.slo_tps_a, change.slo_tps_b) == (pytest.approx(600.0), pytest.approx(480.0))
    assert change.slo_tps_change == pytest.approx(-0.2)
    assert [r.split(" [")[0] for r in change.reasons] == ["tps at SLO -20.0%"]


def test_tps_at_slo_gain_is_an_improvement():
    gained = compare_points(point(*three(1000.0), slo_tps=three(400.0)), point(*three(1000.0), slo_tps=three(500.0)))
    assert gained.verdict == "improvement"


def test_tps_at_slo_change_within_its_run_to_run_noise_is_not_a_regression():
    # Given searches that spread by +-100 tps over two repetitions in both campaigns
    change = compare_points(
        point(*three(1000.0), slo_tps=(500.0, 600.0, 700.0)), point(*three(1000.0), slo_tps=(430.0, 530.0, 630.0))
    )
    # Then an 11.7% lower mean is noise
    assert change.verdict == "within_noise" and change.reasons[0].startswith("tps at SLO -11.7% [")


def test_tps_at_slo_is_not_compared_when_the_objective_changed():
    # Given A searched p99 <= 50 ms and B p95 <= 50 ms
    change = compare_points(point(*three(1000.0), slo_tps=three(600.0)), point(*three(1000.0), slo_tps=three(400.0), slo_p=95))
    # Then the two figures answer different questions: no verdict on them, and a note says why
    assert change.verdict == "unchanged" and change.slo_tps_change is None
    assert change.reasons == ["SLO changed (p99 <= 50 ms -> p95 <= 50 ms): tps at SLO not compared"]


def test_tps_at_slo_is_left_out_when_only_one_campaign_searched():
    change = compare_points(point(*three(1000.0)), point(*three(1000.0), slo_tps=three(400.0)))
    assert change.verdict == "unchanged" and change.slo is None and change.slo_tps_b is None


def _campaign(campaign_id: str, slo_tps: float) -> CampaignResults:
    runs = [
        WorkloadResult(
            name="tpcb",
            tool="pgbench",
            clients=4,
            repetition=r,
            status="succeeded",
            tps=1000.0,
            latency_ms=Latency(avg=4.0),
            slo=SloSearch(percentile=99, limit_ms=50.0, probes=5, ceiling_tps=1000.0, slo_tps=slo_tps * spread),
        )
        for r, spread in enumerate((0.99, 1.0, 1.01), start=1)
    ]
    target = TargetResult(name="aurora", provider="aws", status="succeeded", workloads=runs)
    return CampaignResults(campaign_id=campaign_id, campaign="slo", started_at="", finished_at="", targets=[target], ranking=[])


def test_cli_compare_shows_tps_at_slo_and_flags_its_drop(tmp_path):
    # Given two SLO campaigns with the same closed-loop tps, and tps at SLO down 20%
    for name, slo_tps in (("a", 600.0), ("b", 480.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(_campaign(name, slo_tps).model_dump_json())
    # When they are compared from the command line
    result = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")], env={"COLUMNS": "200"})
    # Then the table has the tps at SLO columns and counts the regression
    assert result.exit_code == 0, result.output
    assert "tps at SLO A" in result.output and "Δ tps at SLO" in result.output
    assert "600.0" in result.output and "480.0" in result.output and "-20.0%" in result.output
    assert "1 regression(s): aurora/tpcb/c4" in result.output


def test_cli_compare_has_no_slo_columns_without_a_search():
    result = CliRunner().invoke(app, ["compare", str(WEEK1), str(WEEK2)], env={"COLUMNS": "140"})
    assert result.exit_code == 0 and "tps at SLO" not in result.output


def test_a_tprocc_points_nopm_drop_is_a_regression_at_the_same_tps():
    # Given a TPROC-C point whose tps held but whose New-Orders per minute fell 20% (three runs each)
    def tprocc(nopm):
        runs = [
            WorkloadResult(
                name="tprocc",
                tool="pgbench",
                clients=4,
                repetition=i + 1,
                status="succeeded",
                tps=tps,
                tool_figures=ToolFigures(new_orders_per_minute=n, transactions_per_minute=tps * 60),
            )
            for i, (tps, n) in enumerate(zip(three(100.0), three(nopm), strict=True))
        ]
        return point_metrics("a", "tprocc", 4, runs)

    change = compare_points(tprocc(2500.0), tprocc(2000.0))
    # Then NOPM's change is decided as tps's is, and is the regression
    assert change.nopm_change == pytest.approx(-0.2)
    assert change.verdict == "regression" and any(r.startswith("NOPM -20.0%") for r in change.reasons)
    # And the CLI's comparison table shows NOPM's columns
    table = comparison_table(Comparison(a="A", b="B", threshold=0.05, changes=[change]))
    cells = {str(c.header): list(c.cells) for c in table.columns}
    assert (cells["NOPM A"], cells["NOPM B"], cells["Δ NOPM"]) == (["2,500.0"], ["2,000.0"], ["-20.0%"])


def _rows(comparison: Comparison) -> tuple[str, list[str]]:
    table = comparison_table(comparison)
    verdicts = [str(cell) for cell in next(c for c in table.columns if str(c.header) == "verdict").cells]
    return str(table.title), verdicts


def test_the_table_says_each_verdict_in_words_with_each_figures_interval():
    # Given an inconclusive point (B's mean 20% lower, 20% between-run noise), an unchanged one and a regression
    noisy = compare_points(point(800.0, 1000.0, 1200.0), point(600.0, 800.0, 1000.0))
    same = compare_points(point(*three(1000.0)), point(*three(990.0)))
    worse = compare_points(point(*three(1000.0)), point(*three(880.0)))
    title, verdicts = _rows(Comparison(a="A", b="B", threshold=0.05, changes=[noisy, same, worse]))
    # Then the title claims nothing the rows contradict, and each verdict reads as what it means
    assert title == "A -> B: every point (unchanged: within 5%)"
    assert noisy.verdict == "within_noise" and verdicts[0].startswith("inconclusive (tps [")
    assert "within_noise" not in verdicts[0] and verdicts[0].endswith("at 95.0%)")
    assert verdicts[1] == "unchanged (within 5%) (tps [-2.7%, +0.7%] at 90.0%)"
    assert verdicts[2] == "regression (tps [-14.3%, -9.7%] at 95.0%)"


def test_the_table_keeps_the_reasons_no_figure_gives():
    change = compare_points(point(100.0, progress=(100, 101, 99, 100)), point(100.0, progress=(300, 30, 40, 30)))
    _, verdicts = _rows(Comparison(a="A", b="B", threshold=0.05, changes=[change]))
    assert verdicts == ["regression (no interval for tps (fewer than 3 runs); tps collapsed during the run in B)"]


def test_the_table_says_once_why_figures_have_no_interval():
    change = compare_points(point(1000.0, latency=4.0), point(700.0, latency=5.0))
    _, verdicts = _rows(Comparison(a="A", b="B", threshold=0.05, changes=[change]))
    assert verdicts == ["inconclusive (no interval for tps, latency p95 (fewer than 3 runs))"]
