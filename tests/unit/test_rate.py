"""Open-loop runs: a rate that was not delivered is flagged `rate_not_sustained` and its latency is not ranked."""

import random

from pgarena.analysis.metrics import target_metrics
from pgarena.analysis.ranking import rank_targets
from pgarena.analysis.rate import RATE_NOT_SUSTAINED, TRANSACTIONS_SKIPPED, lag_trend, rate_incident, skipped_incident
from pgarena.model.figures import Latency
from pgarena.model.matrix import RankingConfig
from pgarena.model.results import CampaignResults, ProgressSample, TargetResult, WorkloadResult
from pgarena.report import build_reports


def lagged(*lags_ms: float, tps: float = 400.0) -> list[ProgressSample]:
    return [ProgressSample(elapsed_s=float(i + 1), tps=tps, lag_ms=lag) for i, lag in enumerate(lags_ms)]


def test_met_rate_with_steady_lag_is_not_flagged():
    # Given 400 tps asked, 398 delivered, lag jittering around 0.15 ms
    # When checked
    incident = rate_incident(400.0, 398.0, lagged(0.15, 0.14, 0.15, 0.16, 0.14, 0.15))
    # Then nothing is flagged
    assert incident is None


def test_throughput_below_95_percent_of_the_rate_is_flagged():
    # Given 8000 tps asked and 2306 delivered (the case of issue 16)
    # When checked
    incident = rate_incident(8000.0, 2306.0, [])
    # Then the run is flagged, and the message gives both figures
    assert incident is not None and incident.kind == RATE_NOT_SUSTAINED
    assert "delivered 2,306.0 tps, 29% of the 8,000 tps asked" in incident.message


def test_just_above_95_percent_is_met():
    # Given 95.1% of the rate delivered, no lag series
    # When checked
    # Then the rate counts as met
    assert rate_incident(1000.0, 951.0, []) is None


def test_growing_schedule_lag_is_flagged_even_at_full_throughput():
    # Given the asked rate delivered on average but the lag climbing from 0.7 s to 2.1 s
    progress = lagged(700.0, 750.0, 900.0, 1300.0, 1700.0, 2100.0)
    # When checked
    incident = rate_incident(400.0, 400.0, progress)
    # Then it is flagged for the lag, first and last thirds' medians named
    assert incident is not None
    assert incident.message.endswith("schedule lag grew from 725.0 ms to 1,900.0 ms; latency not ranked")
    assert incident.at_s == 6.0


def test_small_lag_growth_is_jitter():
    # Given lag tripling, but only from 1 ms to 3 ms
    # When checked
    # Then it is not a backlog
    assert rate_incident(400.0, 400.0, lagged(1.0, 1.0, 2.0, 2.0, 3.0, 3.0)) is None


def test_a_few_skipped_transactions_under_a_kept_schedule_are_not_a_shortfall():
    # Given 1000 tps asked with a latency limit, 96% delivered, the other 4% skipped, the lag at 0.7 ms
    progress = lagged(0.7, 0.7, 0.8, 0.7, 0.6, 0.7, tps=960.0)
    # Then the rate was sustained: the schedule was kept, and under 5% of it skipped
    assert rate_incident(1000.0, 960.0, progress, transactions=57_600, skipped=2_400) is None


def test_skipping_more_than_5_percent_of_the_schedule_is_not_sustaining_the_rate():
    # Given 1000 tps asked with a latency limit, 87% delivered, the other 13% skipped, the lag at 0.7 ms
    progress = lagged(0.7, 0.7, 0.8, 0.7, 0.6, 0.7, tps=870.0)
    # Then the schedule was kept by skipping: the latency of the 87% that ran is not ranked
    incident = rate_incident(1000.0, 870.0, progress, transactions=52_200, skipped=7_800)
    assert incident is not None and incident.kind == RATE_NOT_SUSTAINED
    assert "skipped 13.0% of the schedule (over 5%, --latency-limit)" in incident.message
    # And the skipped transactions are an incident of their own, with their count and share
    skipped = skipped_incident(52_200, 7_800, 6.0)
    assert skipped is not None and skipped.kind == TRANSACTIONS_SKIPPED and skipped.at_s == 6.0
    assert skipped.message.startswith("7,800 transactions skipped (13.0% of the 60,000 scheduled)")


def test_a_short_run_below_95_percent_within_poisson_noise_is_sustained():
    # Given 100 tps asked over 5 s: 500 scheduled give or take 22; 470 delivered (94%) is within that noise
    assert rate_incident(100.0, 94.0, [], transactions=470, skipped=0) is None
    # But 400 (80%) is beyond it
    assert rate_incident(100.0, 80.0, [], transactions=400, skipped=0) is not None


def test_kept_schedules_are_flagged_at_most_at_the_stated_rate():
    # Given 2,000 seeded Poisson schedules of 100 tps over 5 s, each delivered in full
    rng = random.Random(3)
    flagged = 0
    for _ in range(2000):
        arrivals, t = 0, rng.expovariate(100.0)
        while t < 5.0:
            arrivals, t = arrivals + 1, t + rng.expovariate(100.0)
        flagged += rate_incident(100.0, arrivals / 5.0, [], transactions=arrivals, skipped=0) is not None
    # Then almost none is flagged (a fixed 95% flagged about 13% of them)
    assert flagged <= 0.001 * 2000 + 3


def test_delivered_and_skipped_under_95_percent_is_still_a_shortfall():
    # Given 1000 tps asked, 800 delivered and 50 skipped per second
    incident = rate_incident(1000.0, 800.0, [], transactions=48_000, skipped=3_000)
    # Then the schedule was not kept, and the message counts the skipped in
    assert incident is not None and incident.kind == RATE_NOT_SUSTAINED
    assert "delivered 800.0 tps (850.0 with the 3,000 skipped), 85% of the 1,000 tps asked" in incident.message


def test_no_skipped_transaction_is_no_incident():
    assert skipped_incident(52_200, 0, 6.0) is None
    assert skipped_incident(None, 10, 6.0) is None


def test_lag_trend_needs_three_samples():
    # Given two lag samples
    # When the trend is asked for
    # Then there is none
    assert lag_trend(lagged(1.0, 50.0)) is None
    assert lag_trend(lagged(1.0, 5.0, 50.0)) == (1.0, 50.0)


def test_run_without_a_rate_is_never_flagged():
    # Given a closed-loop run (no --rate)
    # When checked
    # Then there is no incident
    assert rate_incident(None, 10.0, lagged(1.0, 500.0, 1000.0)) is None


def run(tps: float, p95: float, incidents=()) -> WorkloadResult:
    return WorkloadResult(
        name="tpcb",
        tool="pgbench",
        clients=4,
        repetition=1,
        status="succeeded",
        tps=tps,
        rate_tps=1000.0,
        latency_ms=Latency(avg=p95 / 2, p95=p95),
        incidents=list(incidents),
    )


def flagged_pair() -> list[TargetResult]:
    short = rate_incident(1000.0, 400.0, [])
    assert short is not None
    # a met its rate at 20 ms p95; b fell short and its p95 of 5 ms does not count
    return [
        TargetResult(name="a", provider="p", status="succeeded", workloads=[run(990.0, 20.0)]),
        TargetResult(name="b", provider="p", status="succeeded", workloads=[run(400.0, 5.0, [short])]),
    ]


def test_flagged_point_is_marked_and_found():
    # Given a target whose run did not sustain its rate
    # When its metrics are computed
    metrics = target_metrics(flagged_pair()[1])
    # Then the point is marked and the incident is a finding of the run
    assert metrics.points[0].rate_not_sustained is True
    assert [(f.source, f.kind) for f in metrics.findings] == [("run", RATE_NOT_SUSTAINED)]


def test_skipped_transactions_are_found_but_the_point_is_sustained():
    # Given a run that kept its schedule and skipped transactions
    skipped = skipped_incident(52_200, 7_800, 6.0)
    assert skipped is not None
    target = TargetResult(name="a", provider="p", status="succeeded", workloads=[run(870.0, 20.0, [skipped])])
    # When its metrics are computed
    metrics = target_metrics(target)
    # Then the skipped transactions are a finding of the run, and the rate counts as sustained
    assert metrics.points[0].rate_not_sustained is False
    assert [(f.source, f.kind) for f in metrics.findings] == [("run", TRANSACTIONS_SKIPPED)]


def test_flagged_point_is_not_ranked_on_latency():
    # Given a latency-only ranking where b's latency would win
    config = RankingConfig(weights={"throughput": 0.5, "latency": 0.5}, tie_tolerance=0.0)
    # When the targets are ranked
    ranking = {r.target: r for r in rank_targets(flagged_pair(), config)}
    # Then latency is not scored at that point, throughput decides, and b carries the flag
    assert "latency" not in ranking["a"].metrics
    assert ranking["a"].rank == 1
    assert ranking["b"].flags == ["tpcb at 4 clients: rate not sustained: latency not ranked at this point"]


def test_report_shows_the_incident():
    # Given results holding a flagged run
    results = CampaignResults(
        campaign_id="c-1",
        campaign="c",
        started_at="2024-01-01T00:00:00",
        finished_at="2024-01-01T00:01:00",
        targets=flagged_pair(),
        ranking=[],
    )
    # When the reports are built
    files = build_reports(results)
    # Then the HTML and the summary name the incident
    assert b"rate_not_sustained" in files["report.html"]
    assert b"rate_not_sustained" in files["summary.md"]
