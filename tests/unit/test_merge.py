import pytest

from pgarena.analysis.latency import encode, new_histogram
from pgarena.analysis.merge import NoCommonWindow, Span, common_span, merge
from pgarena.model.series import EdgeSecond, SecondBucket, ShardSeries


def bucket(t, latencies_us):
    h = new_histogram()
    for value in latencies_us:
        h.record_value(value)
    return SecondBucket(t=t, count=len(latencies_us), hist=encode(h))


def series(start, end, per_second, edges=()):
    return ShardSeries(
        start_epoch=start, end_epoch=end, seconds=[bucket(t, lat) for t, lat in per_second.items()], edges=list(edges)
    )


def test_the_window_is_the_common_span_to_the_microsecond():
    a = series(100.2, 110.9, {})
    b = series(101.7, 109.1, {})
    assert common_span([a, b]) == Span(101_700_000, 109_100_000)


def test_tps_adds_up_inside_the_window_only():
    # Given two shards; second 100 is before the common span [101.0, 104.0], and a's second 104 ended after it
    late = EdgeSecond.of(104, [100_000, 200_000, 600_000], [1000] * 3)
    a = series(100.0, 104.5, {100: [1000] * 9, 101: [1000] * 10, 102: [1000] * 10, 103: [1000] * 10, 104: [1000] * 3}, [late])
    b = series(101.0, 104.0, {101: [2000] * 5, 102: [2000] * 5, 103: [2000] * 5})
    merged = merge([a, b])
    assert merged.window_s == 3 and merged.transactions == 45
    assert merged.tps == 15.0 and merged.shard_tps == [10.0, 5.0]
    assert [p.tps for p in merged.progress] == [15.0, 15.0, 15.0]


def test_percentiles_come_from_the_merged_histogram_not_averaged():
    # Shard a: 90 fast transactions; shard b: 10 slow ones. Averaging each shard's p95 would give 5.5 ms.
    a = series(0.0, 2.0, {0: [1000] * 45, 1: [1000] * 45})
    b = series(0.0, 2.0, {0: [10_000] * 5, 1: [10_000] * 5})
    merged = merge([a, b])
    assert merged.latency.p50 == pytest.approx(1.0, rel=1e-3)
    assert merged.latency.p95 == pytest.approx(10.0, rel=1e-3)


def test_skew_is_latest_start_minus_earliest():
    assert merge([series(10.1, 20.0, {12: [5]}), series(10.4, 20.0, {12: [5]})]).start_skew_s == pytest.approx(0.3)


def test_shards_that_never_overlap_have_no_merged_result():
    with pytest.raises(NoCommonWindow):
        merge([series(0.0, 1.5, {0: [5]}), series(1.6, 3.0, {2: [5]})])
