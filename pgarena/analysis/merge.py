"""Exact merging of shards: tps adds up over the span all shards ran; percentiles come from merged
histograms, never from averaging per-shard percentiles. Pure.

The common span runs from the latest shard's first transaction start to the earliest shard's last
transaction end, to the microsecond (pgbench logs each end in epoch seconds and microseconds), and a
transaction counts when it ended inside it. Whole seconds inside the span come from the shards'
per-second histograms; the span's first and last seconds, cut part-way, from the transactions each
shard kept of its first and last seconds (ShardSeries.edges).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from pgarena.analysis.latency import HIGHEST_US, LOWEST_US, decode, discard, encode, new_histogram, percentiles_of
from pgarena.analysis.latency_intervals import IntervalAccumulator
from pgarena.model.metrics import IntervalHistogram
from pgarena.model.results import ProgressSample
from pgarena.model.series import EdgeSecond, MergedRun, ShardSeries

US = 1_000_000


class NoCommonWindow(ValueError):
    pass


@dataclass(frozen=True)
class Span:
    """[start_us, end_us], both ends included: epoch microseconds."""

    start_us: int
    end_us: int

    @property
    def seconds(self) -> float:
        return (self.end_us - self.start_us) / US

    def whole(self, t: int) -> bool:
        """Every microsecond of second t is inside the span."""
        return t * US >= self.start_us and t * US + US - 1 <= self.end_us


def common_span(series: list[ShardSeries]) -> Span:
    """From the latest first-transaction start to the earliest last-transaction end."""
    return Span(max(round(s.start_epoch * US) for s in series), min(round(s.end_epoch * US) for s in series))


def _cut_where_edges_are_missing(span: Span, series: list[ShardSeries]) -> Span:
    """A span edge inside a second some shard kept no transactions of (shards started over EDGE_S apart)
    moves to that second's whole-second boundary, inward: the count stays exact, over a shorter span."""
    for shard in series:
        kept = {e.t for e in shard.edges}
        ran = {b.t for b in shard.seconds if b.count or b.failed}
        first, last = span.start_us // US, span.end_us // US
        if not span.whole(first) and first in ran and first not in kept:
            span = Span((first + 1) * US, span.end_us)
        if not span.whole(last) and last in ran and last not in kept:
            span = Span(span.start_us, last * US - 1)
    return span


def _partial(edge: EdgeSecond, span: Span) -> tuple[list[int], int]:
    """The latencies of the transactions done in edge's second inside the span, and the not-done count."""
    low, high = span.start_us - edge.t * US, span.end_us - edge.t * US
    ends, failed = edge.ends_us(), edge.not_done_us()
    done = slice(bisect_left(ends, low), bisect_right(ends, high))
    return edge.latencies_us()[done], bisect_right(failed, high) - bisect_left(failed, low)


def merge(series: list[ShardSeries], interval_s: int | None = None) -> MergedRun:
    """`interval_s`: also the run's latency intervals of that length (MergedRun.intervals), from the same pass."""
    if not series:
        raise NoCommonWindow("no shard logged a transaction")
    span = _cut_where_edges_are_missing(common_span(series), series)
    if span.end_us <= span.start_us:
        raise NoCommonWindow("the shards never ran at the same time")
    first, last = span.start_us // US, span.end_us // US
    histogram = new_histogram()
    per_second: dict[int, int] = {t: 0 for t in range(first, last + 1) if span.whole(t)}
    intervals = IntervalAccumulator(min(per_second, default=0), max(per_second, default=-1), interval_s or 1)
    seconds = [{b.t: b for b in shard.seconds if first <= b.t <= last} for shard in series]
    edges = [{e.t: e for e in shard.edges} for shard in series]
    shard_counts, failed = [0] * len(series), 0
    # Second by second, each shard's in turn: a second's histogram is decoded once, for the whole and its interval.
    for t in range(first, last + 1):
        for i, shard_seconds in enumerate(seconds):
            bucket = shard_seconds.get(t)
            if bucket is None:
                continue
            if span.whole(t):
                decoded = decode(bucket.hist)
                histogram.add(decoded)
                if interval_s:
                    intervals.add(t, decoded, bucket.count)
                discard(decoded)
                per_second[t] += bucket.count
                shard_counts[i], failed = shard_counts[i] + bucket.count, failed + bucket.failed
                continue
            # A second without its transactions kept has none (_cut_where_edges_are_missing moved the span past others).
            edge = edges[i].get(t) or EdgeSecond.of(t, [], [])
            latencies, not_done = _partial(edge, span)
            for value in latencies:  # clamped into range as the worker's scanner records them
                histogram.record_value(min(max(value, LOWEST_US), HIGHEST_US))
            shard_counts[i], failed = shard_counts[i] + len(latencies), failed + not_done
    window_s = span.seconds
    encoded = encode(histogram)
    latency = percentiles_of(histogram).model_copy(
        update={"avg": round(histogram.get_mean_value() / 1000, 3), "stddev": round(histogram.get_stddev() / 1000, 3)}
    )
    starts = [s.start_epoch for s in series]
    start_epoch = span.start_us / US
    discard(histogram)
    return MergedRun(
        start_skew_s=round(max(starts) - min(starts), 6),
        window_start_epoch=start_epoch,
        window_end_epoch=span.end_us / US,
        window_s=window_s,
        tps=sum(shard_counts) / window_s,
        transactions=sum(shard_counts),
        failed_transactions=failed,
        latency=latency,
        histogram=encoded,
        intervals=intervals.intervals() if interval_s else (),
        # Whole seconds only: a part-second's count is no interval's tps.
        progress=[ProgressSample(elapsed_s=round(t + 1 - start_epoch, 6), tps=float(per_second[t])) for t in sorted(per_second)],
        shard_tps=[c / window_s for c in shard_counts],
    )


def run_intervals(series: list[ShardSeries], interval_s: int) -> tuple[IntervalHistogram, ...]:
    """A run's latency intervals over the whole seconds its shards all ran; none when they never ran together."""
    try:
        return merge(series, interval_s).intervals
    except NoCommonWindow:
        return ()
