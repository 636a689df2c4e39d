"""A point's latency per interval and its distribution, against a brute-force computation from the raw latencies."""

import math
import random
from fractions import Fraction

import pytest

from pgarena.analysis.latency import encode, new_histogram
from pgarena.analysis.latency_intervals import (
    MAX_INTERVALS,
    PERCENTILES,
    distribution,
    interval_length,
    point_latency,
)
from pgarena.analysis.merge import run_intervals
from pgarena.model.metrics import RunHistograms
from pgarena.model.series import SecondBucket, ShardSeries


def histogram_of(latencies_us):
    h = new_histogram()
    for value in latencies_us:
        h.record_value(value)
    return h


def shard(start, end, per_second):
    seconds = [SecondBucket(t=t, count=len(lat), hist=encode(histogram_of(lat))) for t, lat in sorted(per_second.items())]
    return ShardSeries(start_epoch=start, end_epoch=end, seconds=seconds)


def brute_percentile(latencies_us, p):
    """The sample of rank ceil(p/100 x n), read as pgarena reads every percentile: its bucket's highest equivalent value."""
    ordered = sorted(latencies_us)
    rank = max(1, math.ceil(Fraction(str(p)) * len(ordered) / 100))
    return round(new_histogram().get_highest_equivalent_value(ordered[rank - 1]) / 1000, 3)


def random_run(rng, start, seconds, shards):
    """A run's shards' per-second latencies (us), heavy-tailed, each shard with its own share of a second."""
    runs = []
    for _ in range(shards):
        per_second = {
            t: [int(rng.lognormvariate(7.5, 0.9)) + 1 for _ in range(rng.randint(0, 60))] for t in range(start, start + seconds)
        }
        runs.append(per_second)
    return runs


def test_interval_percentiles_merge_every_run_and_shard_as_brute_force_does():
    # Given a point of three runs (the last with two shards), whose windows start part-way into a second
    rng = random.Random(36)
    runs_raw = [random_run(rng, 1000, 23, 1), random_run(rng, 5000, 23, 1), random_run(rng, 9000, 23, 2)]
    starts = [999.4, 4999.7, 8999.1]
    runs, all_latencies, per_interval = [], [], {}
    for start, shards in zip(starts, runs_raw):
        series = [shard(start, start + 23.6, s) for s in shards]
        intervals = run_intervals(series, 5)
        whole = [v for s in shards for lat in s.values() for v in lat]
        runs.append(RunHistograms(histogram=encode(histogram_of(whole)), interval_s=5, intervals=intervals))
        all_latencies += whole
        first = math.ceil(start)  # the window's first whole second; its last whole one is floor(end) - 1
        for s in shards:
            for t, lat in s.items():
                if first <= t <= math.floor(start + 23.6) - 1:
                    per_interval.setdefault((t - first) // 5, []).extend(lat)
    # When the point's latency is computed
    point = point_latency(runs)
    # Then each interval's percentiles are those of every raw latency that ended in it, over all runs
    assert point is not None and point.interval_s == 5
    assert [i.transactions for i in point.intervals] == [len(per_interval[k]) for k in sorted(per_interval)]
    for k, got in zip(sorted(per_interval), point.intervals, strict=True):
        assert (got.p50, got.p95, got.p99) == tuple(brute_percentile(per_interval[k], p) for p in (50, 95, 99))
        assert got.runs == 3
    # The windows [start, start + 23.6] hold 23, 23 and 22 whole seconds: four intervals of 5 s, then one ending at
    # 23 s (the longest run's; the last run's ends at 22 s)
    assert [i.elapsed_s for i in point.intervals] == [5.0, 10.0, 15.0, 20.0, 23.0]
    # And the point's percentiles and distribution are those of every transaction of every run
    assert point.transactions == len(all_latencies)
    assert point.latency_ms.p99 == brute_percentile(all_latencies, 99)
    shown = {d.percentile: d.ms for d in point.distribution}
    assert shown[99.9] == brute_percentile(all_latencies, 99.9)
    assert shown[0.0] == brute_percentile(all_latencies, 0.001)  # the fastest transaction


def test_a_percentile_is_never_averaged_across_runs():
    # Given two runs: one all fast (1 ms), one with a slow tenth (50 ms); averaging their p95s would give 25.5 ms
    fast = shard(0.0, 2.0, {0: [1000] * 190})
    slow = shard(0.0, 2.0, {0: [1000] * 90 + [50_000] * 10})
    runs = [RunHistograms(histogram=s.seconds[0].hist, interval_s=1, intervals=run_intervals([s], 1)) for s in (fast, slow)]
    (only,) = point_latency(runs).intervals
    # Then the interval's p95 is read from the merged 290 transactions: 1 ms (rank 276 of 290 is fast)
    assert only.p95 == brute_percentile([1000] * 280 + [50_000] * 10, 95) == pytest.approx(1.0, rel=1e-3)
    assert only.p99 == pytest.approx(50.0, rel=1e-3)


def test_the_distribution_stops_at_the_slowest_transaction():
    # Given 1,000 transactions: 99.9% is rank 999, 99.944% rank 1,000 (the slowest): nothing past it is known
    shown = distribution(histogram_of(range(1000, 2000)))
    assert [d.percentile for d in shown] == [p for p in PERCENTILES if p <= 99.944]
    assert shown[-1].ms == brute_percentile(range(1000, 2000), 100)
    assert all(a.ms <= b.ms for a, b in zip(shown, shown[1:]))


def test_intervals_are_the_tools_widened_for_long_runs():
    assert interval_length(5, 60) == 5
    assert interval_length(None, None) == 1
    # A week at 5 s would be 120,960 intervals: widened to whole multiples of 5 s, at most MAX_INTERVALS
    week = interval_length(5, 7 * 86_400)
    assert week % 5 == 0 and 7 * 86_400 / week <= MAX_INTERVALS


def test_runs_of_different_interval_lengths_are_not_merged():
    run = RunHistograms(histogram=encode(histogram_of([1000])), interval_s=5, intervals=())
    assert point_latency([run, RunHistograms(histogram=run.histogram, interval_s=10, intervals=())]) is None
    assert point_latency([]) is None


def test_a_window_without_a_whole_second_has_no_interval():
    assert run_intervals([shard(10.2, 10.9, {10: [1000]})], 5) == ()
