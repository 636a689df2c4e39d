"""Throughput at a latency SLO: the bounded bisection, each probe's verdict, validation, plan, cost and ranking."""

import pytest

from pgarena.analysis.ranking import rank_targets
from pgarena.analysis.slo import midpoint, outcome, probe_result, search
from pgarena.cli import ranking_table, show_event
from pgarena.model.figures import Latency
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.plan import RUN_TIMEOUT_MARGIN_S
from pgarena.model.results import CampaignResults, ProgressSample, StepSummary, TargetResult, WorkloadResult
from pgarena.model.slo import SloProbe, SloSearch
from pgarena.model.tool_spec import Slo
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.cost import S3_PUTS_PER_STEP, estimate, expected_work_s
from pgarena.planning.planner import plan_campaign
from pgarena.remote.follow import Event
from pgarena.report import build_reports

P99_50 = Slo(p99_ms=50.0, probes=5)


def steady(tps: float, lag_ms: float = 0.2) -> list[ProgressSample]:
    return [ProgressSample(elapsed_s=float(i + 1), tps=tps, lag_ms=lag_ms) for i in range(6)]


def synthetic_server(capacity_tps: float, knee_tps: float):
    """A server that delivers up to its capacity; p99 is 10 ms below the knee and 200 ms above it,
    and its schedule lag grows once the rate passes its capacity."""
    asked = []

    def run_probe(rate: float) -> SloProbe:
        asked.append(rate)
        tps = min(rate, capacity_tps)
        p99 = 10.0 if rate <= knee_tps else 200.0
        lags = [0.2] * 6 if rate <= capacity_tps else [50.0 * (i + 1) for i in range(6)]
        progress = [ProgressSample(elapsed_s=float(i + 1), tps=tps, lag_ms=lag) for i, lag in enumerate(lags)]
        return probe_result(P99_50, rate, tps, Latency(p95=p99 / 2, p99=p99), progress, [f"raw/probe-{len(asked)}/pgbench.log"])

    return run_probe, asked


def ceiling(tps: float) -> SloProbe:
    return probe_result(P99_50, None, tps, Latency(p95=60.0, p99=90.0), steady(tps), ["raw/pgbench.log"])


def test_bisection_converges_below_the_knee_in_the_stated_number_of_probes():
    # Given a server whose p99 holds up to 600 tps, with a closed-loop ceiling of 1000 tps
    run_probe, asked = synthetic_server(capacity_tps=1000.0, knee_tps=600.0)
    # When the search runs its 5 probes
    found = search(P99_50, ceiling(1000.0), run_probe)
    # Then it probed exactly 5 rates, halving the interval each time: 500 met, 750 not, 625 not, 562.5 met, 593.8 met
    assert asked == [500.0, 750.0, 625.0, 562.5, 593.8]
    assert [p.met for p in found.curve[1:]] == [True, False, False, True, True]
    # And tps at SLO is what the highest-rate probe that met it achieved, within ceiling / 2^5 of the knee
    assert found.slo_rate_tps == 593.8 and found.slo_tps == 593.8
    assert 600.0 - found.slo_tps <= 1000.0 / 2**5
    assert found.ceiling_tps == 1000.0 and found.curve[0].rate_tps is None and not found.curve[0].met
    assert found.curve[1].raw == ["raw/probe-1/pgbench.log"]


def test_a_rate_the_server_cannot_keep_is_not_met_even_with_low_latency():
    # Given a server whose latency stays low but whose capacity is 300 tps (lag grows beyond)
    run_probe, _ = synthetic_server(capacity_tps=300.0, knee_tps=10_000.0)
    # When searched under a 1000 tps ceiling (a closed-loop figure open loop cannot keep)
    found = search(P99_50, ceiling(1000.0), run_probe)
    # Then every probe above 300 tps is unsustained, lag growing, and tps at SLO stays at or under 300
    over = [p for p in found.curve[1:] if (p.rate_tps or 0) > 300]
    assert over and all(not p.sustained and p.lag_growing and not p.met for p in over)
    assert 0 < (found.slo_tps or 0) <= 300.0


def test_an_slo_held_at_no_probed_rate_is_zero_with_a_note():
    # Given a server whose p99 is above the objective at any rate
    run_probe, _ = synthetic_server(capacity_tps=1000.0, knee_tps=0.0)
    found = search(P99_50, ceiling(1000.0), run_probe)
    # Then tps at SLO is 0 and the note gives the lowest rate tried
    assert found.slo_tps == 0.0 and found.slo_rate_tps is None
    assert found.note == "p99 <= 50 ms held at no probed rate (the lowest was 31.2 tps)"


def test_a_failed_ceiling_run_probes_nothing():
    # Given a ceiling run without tps (it failed)
    failed = probe_result(P99_50, None, None, Latency(), [], ["raw/pgbench.log"])
    run_probe, asked = synthetic_server(capacity_tps=1000.0, knee_tps=600.0)
    found = search(P99_50, failed, run_probe)
    # Then no probe runs and tps at SLO is unknown, not 0
    assert asked == [] and found.slo_tps is None and found.note is not None


def test_p95_objectives_judge_the_p95():
    slo = Slo(p95_ms=5.0)
    met = probe_result(slo, 100.0, 99.0, Latency(p95=4.9, p99=80.0), steady(99.0), [])
    missed = probe_result(slo, 100.0, 99.0, Latency(p95=5.1, p99=6.0), steady(99.0), [])
    assert met.met and not missed.met and missed.sustained
    assert outcome(slo, [ceiling(200.0), met]).slo_tps == 99.0


def test_the_rate_midpoint_is_a_tenth_of_a_tps_at_least():
    assert midpoint(0.0, 0.1) == 0.1
    assert midpoint(500.0, 625.0) == 562.5


def matrix(run=None, **campaign):
    run = {"clients": 2, "duration_s": 3, "slo": {"p99_ms": 50}, **(run or {})}
    return {
        "campaign": "slo",
        "targets": [{"name": "a", "provider": "rds", "endpoint": {"host": "db.example", "user": "bench"}}],
        "workloads": [{"name": "tpcb", "tool": "pgbench", "run": {k: v for k, v in run.items() if v is not None}}],
        **campaign,
    }


@pytest.mark.parametrize(
    ("run", "says"),
    [
        ({"slo": {"p99_ms": 50, "p95_ms": 20}}, "set exactly one of 'p95_ms' or 'p99_ms'"),
        ({"slo": {"probes": 3}}, "set exactly one of 'p95_ms' or 'p99_ms'"),
        ({"rate_tps": 100}, "slo searches the rate itself: remove 'rate_tps'"),
        ({"latency_limit_ms": 20}, "slo with latency_limit_ms: under --rate pgbench skips the transactions"),
        ({"workers": 2}, "slo runs on one worker: remove 'workers' / 'max_clients_per_worker'"),
        ({"max_clients_per_worker": 1}, "slo runs on one worker"),
        ({"percentiles": False}, "slo needs 'percentiles': true and 'duration_s'"),
        ({"duration_s": None, "transactions": 10}, "slo needs 'percentiles': true and 'duration_s'"),
        ({"slo": {"p99_ms": 50, "probes": 13}}, "less than or equal to 12"),
        ({"slo": {"p99_ms": 0}}, "greater than 0"),
    ],
)
def test_an_slo_that_cannot_be_searched_is_refused_with_the_fix(run, says):
    with pytest.raises(MatrixError) as caught:
        parse_campaign(matrix(run))
    assert says in str(caught.value)
    assert all(p.path.startswith("$.workloads[0].run") for p in caught.value.problems)


def test_the_cost_estimate_prices_the_probes():
    # Given the same campaign of 60 s runs with and without a 5-probe SLO search
    searched = estimate(plan_campaign(parse_campaign(matrix({"duration_s": 60})), "s"), 1.0, 2.0, "us-east-1")
    plain = estimate(plan_campaign(parse_campaign(matrix({"duration_s": 60, "slo": None})), "p"), 1.0, 2.0, "us-east-1")
    # Then the search's worker is billed for the 5 probes' 300 s more, and uploads 5 runs' raw output more
    assert searched.worker_task_s - plain.worker_task_s == pytest.approx(300.0)
    searched_puts, plain_puts = (next(line.quantity for line in e.lines if line.item == "S3 requests") for e in (searched, plain))
    assert searched_puts - plain_puts == 5 * S3_PUTS_PER_STEP + 300 // 15


def test_an_slo_in_a_consolidation_sweep_is_refused():
    data = matrix(scenario={"consolidation": {"steps": [1]}})
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    assert "scenario.consolidation with an slo (workload 'tpcb')" in str(caught.value)


def test_the_plan_gives_an_slo_step_time_for_every_probe_and_the_estimate_counts_them():
    # Given a 3 s run with an SLO searched in 5 probes
    plan = plan_campaign(parse_campaign(matrix()), "slo-1")
    run = next(s for s in plan.targets[0].steps if s.kind == "run")
    # Then the step runs pgbench 6 times, each with its own margin, and the cost estimate expects 6 x 3 s
    assert run.tool_runs == 6
    assert run.timeout_s == 6 * (3 + RUN_TIMEOUT_MARGIN_S)
    assert run.tool_timeout_s == 3 + RUN_TIMEOUT_MARGIN_S
    assert expected_work_s(run) == 18.0
    # And without an SLO nothing changes: one run, the whole timeout for it
    plain = next(s for s in plan_campaign(parse_campaign(matrix({"slo": None})), "x").targets[0].steps if s.kind == "run")
    assert plain.tool_runs == 1 and plain.tool_timeout_s == plain.timeout_s == 3 + RUN_TIMEOUT_MARGIN_S


def slo_target(name: str, tps: float, slo_tps: float | None) -> TargetResult:
    search_ = SloSearch(percentile=99, limit_ms=50.0, probes=5, ceiling_tps=tps, slo_tps=slo_tps)
    run = WorkloadResult(
        name="tpcb",
        tool="pgbench",
        clients=2,
        repetition=1,
        status="succeeded",
        tps=tps,
        latency_ms=Latency(p95=5.0),
        slo=search_,
    )
    return TargetResult(name=name, provider="embedded", status="succeeded", workloads=[run])


def test_tps_at_slo_is_a_ranking_metric_when_every_target_has_it():
    # Given two targets of equal throughput, one holding the SLO to twice the rate of the other
    targets = [slo_target("a", 1000.0, 300.0), slo_target("b", 1000.0, 600.0)]
    # When ranked with the default weights
    ranking = rank_targets(targets)
    # Then tps at SLO is scored relative to the best and decides the order
    assert [e.target for e in ranking] == ["b", "a"]
    assert ranking[1].metrics["slo_tps"] == 0.5 and ranking[0].metrics["slo_tps"] == 1.0
    assert "slo_tps 0.3" in ranking[0].basis


def test_tps_at_slo_held_by_no_target_tells_them_nowhere_apart():
    ranking = rank_targets([slo_target("a", 1000.0, 0.0), slo_target("b", 900.0, 0.0)])
    assert all("slo_tps" not in e.metrics for e in ranking) and ranking[0].score == 1.0


def test_tps_at_slo_gives_its_weight_up_when_a_target_has_none():
    ranking = rank_targets([slo_target("a", 1000.0, None), slo_target("b", 900.0, 600.0)])
    assert all("slo_tps" not in e.metrics for e in ranking)
    assert "slo_tps not scored" in ranking[0].basis
    # And a campaign without any SLO does not mention it at all
    plain = [slo_target("a", 1.0, None), slo_target("b", 2.0, None)]
    plain = [t.model_copy(update={"workloads": [t.workloads[0].model_copy(update={"slo": None})]}) for t in plain]
    assert "slo_tps" not in rank_targets(plain)[0].basis


def test_the_cli_ranking_table_shows_tps_at_slo_when_a_workload_searched_it():
    # Given results whose runs searched an SLO
    results = CampaignResults(
        campaign_id="c",
        campaign="c",
        started_at="",
        finished_at="",
        targets=(targets := [slo_target("a", 1000.0, 300.0), slo_target("b", 1000.0, 600.0)]),
        ranking=rank_targets(targets),
    )
    # When the CLI's table is built / Then it has a tps at SLO column, the workload's, with each target's figure
    table = ranking_table(results)
    column = next(c for c in table.columns if str(c.header) == "tpcb tps at SLO")
    assert list(column.cells) == ["600.0", "300.0"]


def test_the_html_report_puts_the_slo_section_in_the_page_and_only_its_link_in_the_nav():
    # Given results whose runs searched an SLO
    targets = [slo_target("a", 1000.0, 300.0), slo_target("b", 1000.0, 600.0)]
    results = CampaignResults(
        campaign_id="c", campaign="c", started_at="", finished_at="", targets=targets, ranking=rank_targets(targets)
    )
    # When the reports are built
    html = build_reports(results)["report.html"].decode()
    # Then the navigation holds links only, and the section sits in the page's main part with the others
    nav = html[html.index("<nav>") : html.index("</nav>")]
    assert '<a href="#slo">Throughput at SLO</a>' in nav and "<section" not in nav
    main = html[html.index("<main>") : html.index("</main>")]
    assert '<section id="slo">' in main and main.index('id="throughput"') < main.index('id="slo"')


def test_the_live_progress_line_of_an_slo_step_gives_tps_at_slo_beside_the_ceiling(capsys):
    # Given a finished run step whose SLO search found 312.3 tps under p99 <= 20 ms
    search_ = SloSearch(percentile=99, limit_ms=20.0, probes=5, ceiling_tps=1134.2, slo_tps=312.26, slo_rate_tps=319.1)
    summary = StepSummary(
        campaign_id="c",
        step_id="a/tpcb/c4-r1",
        target="a",
        workload="tpcb",
        kind="run",
        tool="pgbench",
        status="succeeded",
        started_at="",
        finished_at="",
        wall_s=60.0,
        tps=1134.2,
        slo=search_,
    )
    # When the CLI prints its progress line
    show_event(Event(elapsed_s=74.9, kind="step", text="", summary=summary))
    # Then the line has the ceiling's tps and the tps at SLO with its objective
    assert "1,134.2 tps, 312.3 tps at p99 <= 20 ms" in capsys.readouterr().out
