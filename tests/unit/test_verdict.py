"""The verdict rests on pairwise comparisons: Welch's test on ratios of means, Holm's correction, ties only
when nothing separates two targets, and a headline in the user's units."""

import random
from io import StringIO

import pytest
from rich.console import Console

from pgarena import cli
from pgarena.analysis.headline import headline, phase_cost, rank_label, score_label
from pgarena.analysis.ranking import rank
from pgarena.analysis.significance import holm, ratio_test, two_sided_p
from pgarena.model.figures import Latency
from pgarena.model.matrix import RankingConfig
from pgarena.model.pairwise import PairComparison
from pgarena.model.results import CampaignCost, CampaignResults, ProgressSample, TargetResult, WorkloadResult
from pgarena.report import build_reports

# Five standard scores with mean 0 and sample stddev 1: runs with an exact mean and stddev.
Z = (-1.2649111, -0.6324555, 0.0, 0.6324555, 1.2649111)


def runs(tps: float, tps_sd: float, p95: float, p95_sd: float, clients: int = 4, progress=()) -> list[WorkloadResult]:  # noqa: PLR0913  # a point's figures
    return [
        WorkloadResult(
            name="tpcb",
            tool="pgbench",
            clients=clients,
            repetition=i + 1,
            status="succeeded",
            tps=tps + tps_sd * z,
            latency_ms=Latency(avg=p95 / 2, p95=p95 + p95_sd * z),
            progress=[ProgressSample(elapsed_s=float(s + 1), tps=v) for s, v in enumerate(progress)],
        )
        for i, z in enumerate(Z)
    ]


def target(name: str, *points: list[WorkloadResult]) -> TargetResult:
    return TargetResult(name=name, provider="embedded", status="succeeded", workloads=[w for p in points for w in p])


def test_welch_p_values_match_students_t():
    # Values from scipy.stats.t.sf (2 x, two-sided), fractional degrees of freedom included
    assert two_sided_p(3.61, 3.79) == pytest.approx(0.0247202, rel=1e-5)
    assert two_sided_p(5.48, 8) == pytest.approx(0.000587457, rel=1e-5)
    assert two_sided_p(0.1, 3) == pytest.approx(0.926652, rel=1e-5)


def test_holm_steps_down_from_the_smallest_p():
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])


def test_a_ratio_interval_comes_from_the_runs_on_the_log_scale():
    # Given 2x apart with 20% run-to-run CV on both sides, 5 runs each
    test = ratio_test([2000 + 400 * z for z in Z], [1000 + 200 * z for z in Z])
    # Then 2x [exp(-+2.306 x 0.1265)]: Welch's df is 8
    assert test is not None and test.ratio == pytest.approx(2.0)
    assert (test.low, test.high) == pytest.approx((1.4940, 2.6774), rel=1e-3)
    assert test.p == pytest.approx(two_sided_p(0.693147 / 0.126491, 8), rel=1e-4)


def test_a_slow_target_ranks_below_two_identical_ones_that_share_a_rank_undecided():
    # Given a and b identical, c slow: tps 95% intervals a [634.7, 1036.3], c [237.5, 565.6]; p95 intervals overlapping
    a = target("a", runs(835.5, 161.74, 10.0, 3.0))
    b = target("b", runs(835.5, 161.74, 10.0, 3.0))
    c = target("c", runs(401.55, 132.14, 14.0, 4.0))
    ranked = rank([c, b, a])
    # Then a and b share first, undecided (19% noise over 5 runs cannot show them within 5%), and c is third
    assert [(e.target, e.rank, e.tied_with, e.undecided_with) for e in ranked.entries] == [
        ("a", 1, [], ["b"]),
        ("b", 1, [], ["a"]),
        ("c", 3, [], []),
    ]
    pairs = {(p.a, p.b): p for p in ranked.comparisons}
    assert set(pairs) == {("a", "b"), ("a", "c"), ("b", "c")}
    tps = next(x for x in pairs[("a", "c")].comparisons if x.metric == "throughput")
    assert tps.significant and tps.ratio == pytest.approx(2.0807, rel=1e-3)
    latency = next(x for x in pairs[("a", "c")].comparisons if x.metric == "latency")
    assert not latency.significant  # the overlapping p95 intervals stay unseparated: c's latency is no third place
    assert ranked.entries[2].metric_ranks == {"throughput": 3, "latency": 1}
    text = headline(ranked.entries, ranked.comparisons)
    assert text.startswith("a and b share first: undecided: no weighted metric separates them and they are not shown ")
    assert "between-run CV of the tps 19% and 19%; about 205 runs per point would decide it at this noise (5 ran)" in text
    # No winner's curse: the group is quoted by its weakest member (b, last by name at an equal score), and the
    # interval is the decision's (simultaneous over the pair's 2 comparisons: 97.5%)
    assert "c ranks 3rd; b: 2.08x the tps [1.25, 3.45] of c at 4 clients." in text


def test_two_x_apart_with_noisy_runs_is_a_win_named_with_its_ratio_and_interval():
    # Given sync-off 2x sync-on at 4 clients and 1.58x at 16, 20% CV between 5 runs, p95 29% lower
    off = target("sync-off", runs(2000.0, 400.0, 5.0, 0.5), runs(3160.0, 632.0, 9.0, 0.9, clients=16))
    on = target("sync-on", runs(1000.0, 200.0, 7.0, 0.7), runs(2000.0, 400.0, 12.0, 1.2, clients=16))
    ranked = rank([on, off])
    # Then no tie: sync-off first, and the headline says by how much, with the intervals the decision used:
    # simultaneous over the pair's 4 comparisons (98.75% each), wider than the 95% ones of each point
    assert [(e.target, e.rank, e.tied_with) for e in ranked.entries] == [("sync-off", 1, []), ("sync-on", 2, [])]
    assert [c.confidence for c in ranked.comparisons[0].comparisons] == pytest.approx([0.9875] * 4)
    text = headline(ranked.entries, ranked.comparisons)
    assert text == (
        "sync-off ranks first: 2.00x the tps [1.33, 3.00] and p95 latency 29% lower [13%, 42%] than sync-on at 4 clients; "
        "at 16 clients 1.58x the tps [1.05, 2.37] and p95 latency 25% lower [8%, 39%]."
    )


def test_two_identical_targets_are_rarely_declared_different():
    # Given 200 campaigns of two targets drawn from one distribution (5 runs, 10% CV on tps and p95)
    rng = random.Random(42)
    different = 0
    for _ in range(200):

        def draw(name):
            return TargetResult(
                name=name,
                provider="embedded",
                status="succeeded",
                workloads=[
                    WorkloadResult(
                        name="tpcb",
                        tool="pgbench",
                        clients=4,
                        repetition=r,
                        status="succeeded",
                        tps=rng.gauss(1000, 100),
                        latency_ms=Latency(p95=rng.gauss(10, 1)),
                    )
                    for r in range(1, 6)
                ],
            )

        ranked = rank([draw("x"), draw("y")])
        different += ranked.entries[0].rank != ranked.entries[1].rank
    # Then Holm's correction keeps false "different" verdicts near or below 5%
    assert different <= 12


def test_one_run_crowns_no_winner_and_the_ranks_are_provisional():
    ranked = rank([target("a", runs(2000.0, 0.0, 5.0, 0.0)[:1]), target("b", runs(1000.0, 0.0, 7.0, 0.0)[:1])])
    text = headline(ranked.entries, ranked.comparisons)
    assert text == "Not enough runs to decide (fewer than 3 per point): provisional order by the means: a 1.000, b 0.580."
    assert [(e.rank, e.provisional) for e in ranked.entries] == [(1, True), (2, True)]
    assert all(p.outcome == "inconclusive" for p in ranked.comparisons)
    assert all(c.ci_low is None and not c.significant for p in ranked.comparisons for c in p.comparisons)


def test_significant_differences_both_ways_tie_when_the_composite_interval_includes_zero():
    # Given a 30% more tps, b 23% lower p95, weighted equally: the scores 1.0 + 0.77 and 0.77 + 1.0 cancel
    a = target("a", runs(1300.0, 20.0, 10.0, 0.2))
    b = target("b", runs(1000.0, 20.0, 7.7, 0.2))
    ranked = rank([a, b], RankingConfig(weights={"throughput": 0.5, "latency": 0.5}))
    (pair,) = ranked.comparisons
    # Then each is significantly better on one metric, and the composite difference's interval includes 0: a tie
    assert {c.favours for c in pair.comparisons} == {"a", "b"}
    assert pair.outcome == "inconclusive" and pair.composite_ci95[0] < 0 < pair.composite_ci95[1]
    assert pair.reason.startswith(
        "undecided: a has 1.30x the tps [1.26, 1.34] of b at 4 clients, but b has p95 latency 23% lower"
    )
    assert [e.rank for e in ranked.entries] == [1, 1]


def test_significant_differences_both_ways_that_do_not_cancel_are_a_win():
    # Given a 60% more tps, b 10% lower p95, weighted equally
    a = target("a", runs(1600.0, 20.0, 10.0, 0.2))
    b = target("b", runs(1000.0, 20.0, 9.0, 0.2))
    ranked = rank([a, b], RankingConfig(weights={"throughput": 0.5, "latency": 0.5}))
    (pair,) = ranked.comparisons
    assert pair.outcome == "different" and pair.composite_ci95[0] > 0
    assert pair.reason.endswith("favours a")
    assert [(e.target, e.rank) for e in ranked.entries] == [("a", 1), ("b", 2)]


def test_noisy_points_are_warned_with_their_figures():
    # Given a's runs swing 40% within each run, and b's runs are steady
    a = target("a", runs(1000.0, 10.0, 5.0, 0.1, progress=(600, 1400, 600, 1400)))
    b = target("b", runs(1000.0, 10.0, 5.0, 0.1, progress=(1000, 1010, 990, 1000)))
    ranked = rank([a, b])
    (warning,) = ranked.noise
    assert (warning.target, warning.within_run_cv, warning.between_runs_cv) == ("a", pytest.approx(0.4), None)
    assert warning.message.startswith("a at 4 clients: tps varied 40% within a run")


def _sync_campaign() -> CampaignResults:
    off = target("sync-off", runs(2000.0, 400.0, 5.0, 0.5, progress=(600, 1400, 600, 1400)))
    on = target("sync-on", runs(1000.0, 200.0, 7.0, 0.7))
    ranked = rank([on, off])
    return CampaignResults(
        campaign_id="c",
        campaign="sync",
        started_at="",
        finished_at="",
        targets=[off, on],
        ranking=ranked.entries,
        comparisons=ranked.comparisons,
        noise=ranked.noise,
    )


def test_results_json_carries_the_comparisons_and_the_reports_show_them_as_a_matrix():
    # Given a campaign whose results.json went through its file form
    results = CampaignResults.model_validate_json(_sync_campaign().model_dump_json())
    # When the reports are built from it
    files = build_reports(results)
    md, html = files["summary.md"].decode(), files["report.html"].decode()
    # Then the verdict, the noise warning and the rows-beat-columns matrix are in both
    assert "sync-off ranks first: 2.00x the tps [1.41, 2.83]" in md
    assert "| sync-off | – | **2.00x the tps [1.41, 2.83]**; **p95 latency 29% lower [15%, 40%]** |" in md
    assert "| sync-on | **0.50x the tps [0.35, 0.71]**; **p95 latency 40% higher [18%, 67%]** | – |" in md
    assert "> **Noisy:** sync-off at 4 clients: tps varied 40% within a run" in md
    assert "<strong>2.00x the tps [1.41, 2.83]</strong>" in html
    # the page's noise warnings folded into one line, each on demand (<details>), the verdict above them
    noise = html[html.index('<details class="noise">') : html.index("</details>", html.index('<details class="noise">'))]
    summary = noise[noise.index("<summary>") : noise.index("</summary>")]
    assert "Noisy at 2 points, where small differences cannot be told apart: " in summary
    assert "sync-off at 4 clients" in summary and "sync-on at 4 clients" in summary
    assert "<li>sync-on at 4 clients: tps varied 20% between its 5 runs" in noise
    assert html.index('<p class="lead">') < html.index('<details class="noise">')


def test_the_cli_prints_the_stored_verdict_and_noise():
    printed = Console(file=StringIO(), width=400, color_system=None)
    cli.console, saved = printed, cli.console
    try:
        cli.print_verdict(_sync_campaign())
    finally:
        cli.console = saved
    assert isinstance(printed.file, StringIO)
    lines = printed.file.getvalue().splitlines()
    assert lines[0].startswith("verdict: sync-off ranks first: 2.00x the tps [1.41, 2.83] and p95 latency 29% lower")
    assert lines[1].startswith("noisy: sync-on at 4 clients: tps varied 20% between its 5 runs")


def test_an_undecided_pair_says_what_deciding_it_would_cost():
    # Given two identical targets with 19% between-run noise over 5 runs, a campaign that cost $2.50
    a, b = target("a", runs(835.5, 161.74, 10.0, 3.0)), target("b", runs(835.5, 161.74, 10.0, 3.0))
    ranked = rank([a, b])
    results = CampaignResults(
        campaign_id="c",
        campaign="c",
        started_at="",
        finished_at="",
        targets=[a, b],
        ranking=ranked.entries,
        comparisons=ranked.comparisons,
        cost=CampaignCost(region="us-east-1", estimated_usd=2.5),
    )
    # When the verdict is said: $0.50 a run per point, and the runs that would decide it at this noise
    needed = ranked.comparisons[0].runs_needed
    assert needed is not None and needed > 5
    text = headline(results.ranking, results.comparisons, results.footing, phase_cost(results))
    # Then it names the pair undecided, its noise, the runs and their cost; the scores are marked shared
    assert text.startswith("a and b share first: undecided: ")
    assert f"about {needed} runs per point would decide it at this noise (5 ran) (about ${(needed - 5) * 0.5:,.2f} more)" in text
    assert [score_label(e) for e in results.ranking] == ["1.000 (undecided with b)", "1.000 (undecided with a)"]
    assert [rank_label(e) for e in results.ranking] == ["1?", "1?"]


def test_a_results_json_written_before_the_three_outcomes_reads_its_old_tie_as_undecided():
    old = {
        "a": "x",
        "b": "y",
        "basis": "intervals",
        "tied": True,
        "reason": "no weighted metric separates them at 95% after Holm's correction",
        "comparisons": [
            {
                **{"metric": "throughput", "figure": "tps", "higher_is_better": True, "workload": "w", "clients": 4},
                **{"n_a": 5, "n_b": 5, "mean_a": 2.0, "mean_b": 1.0, "ratio": 2.0, "ci95_low": 1.5, "ci95_high": 2.5},
                **{"p_value": 0.01, "p_holm": 0.02, "significant": True},
            }
        ],
    }
    pair = PairComparison.model_validate(old)
    # An old tie was only "not separated": never equivalence
    assert (pair.outcome, pair.tied) == ("inconclusive", True)
    (c,) = pair.comparisons
    assert (c.outcome, c.ci_low, c.ci_high, c.confidence) == ("different", 1.5, 2.5, 0.95)
