import json

import pytest

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.headline import headline
from pgarena.analysis.metrics import target_metrics
from pgarena.analysis.ranking import rank, rank_targets, unranked_reasons
from pgarena.model.errors import ErrorInfo
from pgarena.model.figures import Latency
from pgarena.model.matrix import RankingConfig
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import ProgressSample, StepSummary, TargetResult, WorkloadResult
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES

THROUGHPUT_ONLY = RankingConfig(weights={"throughput": 1.0}, tie_tolerance=0.0)


def target(name, *tps, status="succeeded", cost=None):
    workloads = [
        WorkloadResult(name=f"w{i}", tool="pgbench", clients=4, repetition=1, status="succeeded", tps=value)
        for i, value in enumerate(tps)
    ]
    error = ErrorInfo(kind="connection_refused", message="down") if status == "failed" else None
    return TargetResult(name=name, provider="p", status=status, error=error, workloads=workloads, hourly_cost_usd=cost)


def run(tps, clients=4, repetition=1, latency=None, progress=(), requested=None):  # noqa: PLR0913  # a run's fields, as keywords with defaults
    return WorkloadResult(
        name="tpcb",
        tool="pgbench",
        clients=clients,
        requested_clients=requested,
        repetition=repetition,
        status="succeeded",
        tps=tps,
        latency_ms=Latency(avg=latency),
        progress=[ProgressSample(elapsed_s=float(i + 1), tps=v) for i, v in enumerate(progress)],
    )


def with_runs(name, *runs, cost=None):
    return TargetResult(name=name, provider="p", status="succeeded", workloads=list(runs), hourly_cost_usd=cost)


def by_target(ranking):
    return {r.target: r for r in ranking}


def test_faster_target_ranks_first_with_score_one():
    ranking = rank_targets([target("slow", 500.0), target("fast", 1000.0)])
    assert [(r.rank, r.target, r.score) for r in ranking] == [(1, "fast", 1.0), (2, "slow", 0.5)]


def test_score_averages_relative_throughput_over_workloads():
    # Given each target wins one workload
    ranking = rank_targets([target("a", 100.0, 50.0), target("b", 50.0, 100.0)])
    # Then both score 0.75 and the tie is ordered by name
    assert [(r.target, r.score) for r in ranking] == [("a", 0.75), ("b", 0.75)]


def test_failed_targets_are_not_ranked():
    ranking = rank_targets([target("ok", 10.0), target("down", 99999.0, status="failed")])
    assert [r.target for r in ranking] == ["ok"]


def test_repetitions_are_averaged_per_workload_point():
    a = target("a", 100.0)
    a.workloads.append(a.workloads[0].model_copy(update={"repetition": 2, "tps": 300.0}))
    ranking = rank_targets([a, target("b", 400.0)])
    assert [(r.target, r.score) for r in ranking] == [("b", 1.0), ("a", 0.5)]


def test_nothing_to_rank():
    assert rank_targets([target("down", 1.0, status="failed")]) == []


def test_equal_scores_share_a_rank_and_name_each_other():
    # Given two targets that each win one workload by the same margin
    ranking = rank_targets([target("a", 100.0, 50.0), target("b", 50.0, 100.0), target("c", 10.0, 10.0)])
    # Then a and b share rank 1, and c is third (competition ranking); one run shows nothing equivalent: the
    # shared rank is undecided, and every rank provisional
    assert [(r.target, r.rank, r.undecided_with) for r in ranking] == [("a", 1, ["b"]), ("b", 1, ["a"]), ("c", 3, [])]
    assert all(r.provisional and not r.tied_with for r in ranking)


def test_difference_within_the_tie_tolerance_is_a_tie():
    # Given throughputs 1.5% apart and the default 2% tolerance
    ranking = rank_targets([target("a", 1000.0), target("b", 985.0)])
    # Then neither wins
    assert [r.rank for r in ranking] == [1, 1]


def test_difference_beyond_the_tie_tolerance_is_a_win():
    ranking = rank_targets([target("a", 1000.0), target("b", 985.0)], RankingConfig(tie_tolerance=0.01))
    assert [(r.target, r.rank) for r in ranking] == [("a", 1), ("b", 2)]


def test_two_runs_give_no_interval_and_rank_by_the_means():
    # Given a is 10% faster on average but its two repetitions spread by +-14%
    a = with_runs("a", run(950.0), run(1250.0, repetition=2))
    b = with_runs("b", run(1000.0), run(1000.0, repetition=2))
    # When ranked on throughput with no tolerance
    ranking = rank_targets([a, b], THROUGHPUT_ONLY)
    # Then two runs measure no interval: the means decide, and the basis says so
    assert [(r.target, r.rank, r.tied_with) for r in ranking] == [("a", 1, []), ("b", 2, [])]
    assert "provisional order by the means (2 runs per point: no confidence interval)" in ranking[0].basis


def test_difference_beyond_run_to_run_noise_is_a_win():
    a = with_runs("a", run(1190.0), run(1210.0, repetition=2))
    b = with_runs("b", run(995.0), run(1005.0, repetition=2))
    ranking = rank_targets([a, b], THROUGHPUT_ONLY)
    assert [(r.target, r.rank) for r in ranking] == [("a", 1), ("b", 2)]


def test_clamped_point_is_left_out_for_every_target_and_flagged():
    # Given b could only run the 8-client point with 6 clients, and was faster there
    a = with_runs("a", run(100.0, clients=4), run(200.0, clients=8))
    b = with_runs("b", run(50.0, clients=4), run(900.0, clients=6, requested=8))
    # When ranked
    ranking = by_target(rank_targets([a, b], THROUGHPUT_ONLY))
    # Then only the 4-client point counts, and b's entry says why its 8-client run was left out
    assert ranking["a"].rank == 1 and ranking["b"].score == 0.5
    assert ranking["b"].flags == ["tpcb at 8 clients ran with 6 (clamped): not compared"]


def test_target_with_only_clamped_runs_is_not_ranked_as_complete():
    a = with_runs("a", run(100.0, clients=8))
    b = with_runs("b", run(900.0, clients=6, requested=8))
    ranking = rank_targets([a, b])
    assert [r.target for r in ranking] == ["a"]
    assert "clamped" in unranked_reasons([a, b], ranking, [target_metrics(a), target_metrics(b)])["b"]


def test_failed_target_is_explained():
    down = target("down", 1.0, status="failed")
    assert unranked_reasons([down], [], [target_metrics(down)]) == {"down": "failed: connection_refused: down"}


def test_latency_weight_can_change_the_winner():
    # Given a has more throughput but b has far lower latency
    a = with_runs("a", run(1000.0, latency=40.0))
    b = with_runs("b", run(900.0, latency=10.0))
    # When latency weighs more than throughput
    ranking = rank_targets([a, b], RankingConfig(weights={"throughput": 0.3, "latency": 0.7}))
    # Then b wins: 0.3 x 0.9 + 0.7 x 1 = 0.97 against 0.3 x 1 + 0.7 x 0.25 = 0.475
    assert [(r.target, r.score) for r in ranking] == [("b", 0.97), ("a", 0.475)]
    assert by_target(ranking)["a"].metric_ranks == {"throughput": 1, "latency": 2}


def test_cost_is_scored_only_when_every_target_has_a_price():
    # Given b is slower but costs a quarter as much
    cheap = rank_targets(
        [target("a", 1000.0, cost=4.0), target("b", 800.0, cost=1.0)], RankingConfig(weights={"throughput": 0.5, "cost": 0.5})
    )
    unpriced = rank_targets(
        [target("a", 1000.0, cost=4.0), target("b", 800.0)], RankingConfig(weights={"throughput": 0.5, "cost": 0.5})
    )
    # Then with prices b wins on cost efficiency; without b's price cost gives its weight up
    assert cheap[0].target == "b" and cheap[0].metrics["cost"] == 1.0
    assert unpriced[0].target == "a" and "cost" not in unpriced[0].metrics
    assert "cost not scored" in unpriced[0].basis


def test_collapse_scores_zero_stability():
    # Given equal throughput, but b's tps collapsed mid-run
    a = with_runs("a", run(300.0, progress=(300, 310, 290, 300)))
    b = with_runs("b", run(300.0, progress=(1000, 15, 36, 20)))
    ranking = by_target(rank_targets([a, b], RankingConfig(weights={"stability": 1.0})))
    assert ranking["a"].metrics["stability"] == 1.0 and ranking["b"].metrics["stability"] == 0.0
    assert ranking["b"].rank == 2


def test_a_spike_then_an_ordinary_interval_does_not_zero_stability():
    # Given b's progress with a one-interval spike, its last interval under 25% of it (no collapse)
    a = with_runs("a", run(300.0, progress=(300, 310, 290, 300, 300)))
    b = with_runs("b", run(300.0, progress=(348.8, 258.8, 337.0, 1229.7, 250.2)))
    ranking = by_target(rank_targets([a, b], RankingConfig(weights={"stability": 1.0})))
    # Then b is scored on its variation, not zeroed as collapsed
    assert 0.0 < ranking["b"].metrics["stability"] < 1.0


def test_default_weights_describe_the_composite():
    ranking = rank_targets([target("a", 1.0)])
    assert "weights throughput 0.5" in ranking[0].basis and "within 2% share a rank" in ranking[0].basis


def test_negative_or_all_zero_weights_are_refused():
    base = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    with pytest.raises(MatrixError) as refused:
        parse_campaign({**base, "ranking": {"weights": {"throughput": -1}}})
    assert refused.value.problems[0].path == "$.ranking.weights"
    with pytest.raises(MatrixError):
        parse_campaign({**base, "ranking": {"weights": {"throughput": 0}}})


def test_matrix_weights_reach_the_aggregate_through_the_plan():
    # Given a matrix that ranks on latency alone, and two targets where the faster has the worse latency
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"][1] = {**data["targets"][0], "name": "b"}
    data["ranking"] = {"weights": {"latency": 1.0}, "tie_tolerance": 0.0}
    plan = plan_campaign(parse_campaign(data), "cid")
    common = dict(
        campaign_id="cid", workload="tpcb", tool="pgbench", status="succeeded", started_at="s", finished_at="f", wall_s=1.0
    )
    summaries = [
        *(StepSummary(step_id=f"{t}/tpcb/init", target=t, kind="init", **common) for t in ("a", "b")),
        *(
            StepSummary(
                step_id=f"{t}/tpcb/c4-r1", target=t, kind="run", clients=4, tps=tps, latency_ms=Latency(avg=lat), **common
            )
            for t, tps, lat in (("a", 1000.0, 50.0), ("b", 500.0, 5.0))
        ),
    ]
    outcomes = [
        TargetOutcome(name=t, steps=[{"step_id": s.step_id, "status": "succeeded"} for s in summaries if s.target == t])
        for t in ("a", "b")
    ]
    # When the campaign is aggregated
    results = aggregate(plan, outcomes, summaries, "s", "f")
    # Then the plan carried the weights and b wins on latency
    assert plan.ranking.weights == {"latency": 1.0}
    assert [r.target for r in results.ranking] == ["b", "a"]


def test_overlapping_confidence_intervals_are_no_tie_when_welch_separates_them():
    # Given three runs each: a 100/110/120, b 130/140/150 (95% t-intervals [85.2, 134.8] and [115.2, 164.8] overlap)
    a = with_runs("a", run(100.0), run(110.0, repetition=2), run(120.0, repetition=3))
    b = with_runs("b", run(130.0), run(140.0, repetition=2), run(150.0, repetition=3))
    # When ranked on throughput alone
    ranking = rank_targets([a, b], THROUGHPUT_ONLY)
    # Then Welch's test on the ratio (1.27x, p ~ 0.025) separates them: overlapping intervals are no tie
    assert [(r.target, r.rank, r.tied_with) for r in ranking] == [("b", 1, []), ("a", 2, [])]
    assert "Welch's test on the ratio of means over 3+ runs per point" in ranking[0].basis


def test_a_difference_within_the_noise_of_three_runs_is_undecided_not_a_tie():
    # Given three runs each, b 5% faster on average with +-10% spread
    a = with_runs("a", run(90.0), run(100.0, repetition=2), run(110.0, repetition=3))
    b = with_runs("b", run(95.0), run(105.0, repetition=2), run(115.0, repetition=3))
    ranked = rank([a, b], THROUGHPUT_ONLY)
    # Then they share a rank, undecided: nothing separates them, nor shows them within 5%
    assert [(r.target, r.rank, r.tied_with, r.undecided_with) for r in ranked.entries] == [
        ("b", 1, [], ["a"]),
        ("a", 1, [], ["b"]),
    ]
    assert ranked.comparisons[0].outcome == "inconclusive" and ranked.comparisons[0].runs_needed is not None


def test_targets_within_the_margin_at_low_noise_tie_as_equivalent():
    # Given three runs each, 1% apart with 0.5% spread: the interval lies within 5% of 1
    a = with_runs("a", run(100.0), run(100.5, repetition=2), run(99.5, repetition=3))
    b = with_runs("b", run(101.0), run(101.5, repetition=2), run(100.5, repetition=3))
    ranked = rank([a, b], THROUGHPUT_ONLY)
    assert [(r.target, r.rank, r.tied_with, r.undecided_with) for r in ranked.entries] == [
        ("b", 1, ["a"], []),
        ("a", 1, ["b"], []),
    ]
    assert ranked.comparisons[0].outcome == "equivalent"
    assert headline(ranked.entries, ranked.comparisons).startswith("b and a tie for first (score 1.000): equivalent within 5%")


def test_a_margin_of_zero_shows_nothing_equivalent():
    a = with_runs("a", run(100.0), run(100.5, repetition=2), run(99.5, repetition=3))
    b = with_runs("b", run(101.0), run(101.5, repetition=2), run(100.5, repetition=3))
    config = THROUGHPUT_ONLY.model_copy(update={"equivalence_margin_pct": 0.0})
    assert rank([a, b], config).comparisons[0].outcome != "equivalent"


def test_intervals_apart_are_a_win():
    a = with_runs("a", run(100.0), run(101.0, repetition=2), run(102.0, repetition=3))
    b = with_runs("b", run(130.0), run(131.0, repetition=2), run(132.0, repetition=3))
    ranking = rank_targets([a, b], THROUGHPUT_ONLY)
    assert [(r.target, r.rank) for r in ranking] == [("b", 1), ("a", 2)]


def test_a_ranking_on_single_runs_says_so():
    ranking = rank_targets([target("a", 1000.0), target("b", 500.0)])
    assert "1 run per point: no confidence interval" in ranking[0].basis
