"""Confidence intervals over repetitions (pgarena.analysis.intervals) and what results.json says about them."""

import math
from statistics import stdev

import pytest

from pgarena.analysis.intervals import SINGLE_RUN_NOTE, interval, overlap, relative_half_width, t_975
from pgarena.analysis.metrics import campaign_statistics, point_metrics, target_metrics, with_points
from pgarena.model.figures import Interval, Latency
from pgarena.model.results import TargetResult, WorkloadResult


def test_three_runs_give_the_t_interval_with_two_degrees_of_freedom():
    # Given three repetitions 100, 110, 120 (mean 110, sample stddev 10)
    ci = interval([100.0, 110.0, 120.0])
    # Then the 95% interval is 110 +- 4.303 x 10 / sqrt(3)
    half = 4.303 * 10 / math.sqrt(3)
    assert (ci.n, ci.mean, ci.stddev) == (3, 110.0, 10.0)
    assert ci.ci95_low == pytest.approx(110 - half) and ci.ci95_high == pytest.approx(110 + half)
    assert ci.half_width == pytest.approx(half)


def test_one_run_has_a_mean_and_no_interval():
    ci = interval([42.0])
    assert (ci.n, ci.mean, ci.stddev, ci.ci95_low, ci.ci95_high) == (1, 42.0, None, None, None)
    assert relative_half_width(ci) == 0.0


def test_no_runs_no_interval():
    assert interval([]) is None


@pytest.mark.parametrize(("df", "t"), [(1, 12.706), (2, 4.303), (9, 2.262), (30, 2.042), (45, 2.021), (1000, 1.96)])
def test_t_quantiles_come_from_the_table_erring_wide_between_rows(df, t):
    assert t_975(df) == t


def test_t_quantile_needs_a_degree_of_freedom():
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_975(0)


def test_intervals_overlap_or_not():
    a, b, c = interval([100.0, 110.0, 120.0]), interval([130.0, 140.0, 150.0]), interval([200.0, 201.0, 202.0])
    # a and b: mean +- stddev ([100, 120], [130, 150]) apart, but their 95% intervals overlap
    assert a.mean + a.stddev < b.mean - b.stddev and overlap(a, b)
    assert not overlap(a, c)
    assert overlap(Interval(n=1, mean=5.0), Interval(n=1, mean=5.0)) and not overlap(Interval(n=1, mean=5.0), a)


def run(repetition, tps, p95, p99):
    return WorkloadResult(
        name="tpcb",
        tool="pgbench",
        clients=4,
        repetition=repetition,
        status="succeeded",
        tps=tps,
        latency_ms=Latency(avg=1.0, p95=p95, p99=p99),
    )


def test_a_point_reports_mean_stddev_n_and_intervals_for_tps_p95_and_p99():
    runs = [run(1, 1000.0, 2.0, 4.0), run(2, 1100.0, 2.2, 4.6), run(3, 1050.0, 2.1, 4.3)]
    p = point_metrics("a", "tpcb", 4, runs)
    assert p.tps_interval.n == 3 and p.tps_interval.mean == pytest.approx(1050.0)
    assert p.tps_interval.stddev == pytest.approx(stdev([1000.0, 1100.0, 1050.0]))
    assert p.p95_interval.ci95_low < 2.1 < p.p95_interval.ci95_high
    assert p.p99_interval.mean == pytest.approx(4.3) and p.p99_interval.half_width is not None


def test_results_carry_the_points_and_say_when_there_is_one_run():
    one = TargetResult(name="a", provider="p", status="succeeded", workloads=[run(1, 1000.0, 2.0, 4.0)])
    single = with_points(one, target_metrics(one))
    (point,) = single.points
    assert point.n == 1 and point.tps.ci95_low is None
    assert campaign_statistics([single], repetitions=1).note == SINGLE_RUN_NOTE
    two = TargetResult(name="b", provider="p", status="succeeded", workloads=[run(1, 900.0, 2, 4), run(2, 950.0, 2, 4)])
    repeated = with_points(two, target_metrics(two))
    stats = campaign_statistics([repeated], repetitions=2)
    assert stats.note is None and "t-interval" in stats.method
    assert campaign_statistics([single, repeated], repetitions=2).note == "1 of 2 points have 1 run: no confidence interval there"
