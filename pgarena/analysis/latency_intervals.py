"""A point's latency over time and its percentile distribution, from its runs' histograms merged. Pure.

Each run's per-second histograms (ShardSeries, from the transaction log) are grouped into progress
intervals of whole seconds inside the run's window (every shard running), from its first whole second:
interval k holds the transactions that ended in seconds first + k x interval_s onward. A point's interval k
merges interval k of every run (its repetitions and their shards) and reads p50/p95/p99 from the merged
histogram: percentiles are never averaged. The distribution reads the point's whole histogram (every run's
window, as each run's own percentiles do) at PERCENTILES.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from hdrh.histogram import HdrHistogram

from pgarena.analysis.latency import decode, encode, new_histogram, percentiles_of, values_at_percentiles
from pgarena.model.metrics import IntervalHistogram, LatencyInterval, PercentileLatency, PointLatency, RunHistograms
from pgarena.model.series import ShardSeries

# results.json keeps a few numbers per interval: a long run's intervals are widened (whole multiples of the
# tool's) so that a point has at most this many.
MAX_INTERVALS = 360
# Where the distribution is read: the HdrHistogram plot's percentiles, to 99.9999% (1 in a million). 0 is the
# fastest transaction. A percentile past what the histogram can tell apart (rank n, the slowest) ends the list.
PERCENTILES = (
    0.0, 10.0, 25.0, 50.0, 68.4, 75.0, 82.2, 90.0, 94.4, 96.8, 98.2, 99.0, 99.44, 99.68, 99.82, 99.9, 99.944, 99.968,
    99.982, 99.99, 99.9944, 99.9968, 99.9982, 99.999, 99.9999,
)  # fmt: skip


def _ms(us: int) -> float:
    return round(us / 1000, 3)


def interval_length(interval_s: int | None, duration_s: int | None) -> int:
    """The tool's progress interval (1 s without one), widened to a whole multiple so a run of duration_s has at
    most MAX_INTERVALS of them. From the plan, not the run: every run of a point gets the same intervals."""
    base = max(1, interval_s or 1)
    return base * max(1, math.ceil((duration_s or 0) / base / MAX_INTERVALS))


def run_intervals(series: Sequence[ShardSeries], interval_s: int) -> tuple[IntervalHistogram, ...]:
    """The run's intervals: its shards' per-second histograms over the whole seconds all of them ran, summed
    per interval of interval_s seconds. The last interval may be shorter (its elapsed_s says where it ends)."""
    if not series:
        return ()
    first = math.ceil(max(s.start_epoch for s in series))
    last = math.floor(min(s.end_epoch for s in series)) - 1  # the last second wholly inside every shard's window
    if last < first:
        return ()
    by_second = [{b.t: b for b in s.seconds if b.count} for s in series]
    out = []
    for start in range(first, last + 1, interval_s):
        stop = min(start + interval_s, last + 1)
        histogram, count = new_histogram(), 0
        for seconds in by_second:
            for t in range(start, stop):
                bucket = seconds.get(t)
                if bucket is not None:
                    histogram.add(decode(bucket.hist))
                    count += bucket.count
        out.append(IntervalHistogram(elapsed_s=float(stop - first), transactions=count, histogram=encode(histogram)))
    return tuple(out)


def distribution(histogram: HdrHistogram) -> list[PercentileLatency]:
    """The latency at each of PERCENTILES, up to the first one that is the slowest transaction (rank n)."""
    total = histogram.get_total_count()
    if total == 0:
        return []
    # 0%: the fastest transaction, read as every other percentile is (its bucket's highest equivalent value)
    out = [PercentileLatency(percentile=0.0, ms=_ms(histogram.get_highest_equivalent_value(histogram.get_min_value())))]
    for p in PERCENTILES[1:]:
        (value,) = values_at_percentiles(histogram, [p])
        out.append(PercentileLatency(percentile=p, ms=_ms(value)))
        if math.ceil(Fraction(str(p)) * total / 100) >= total:
            break
    return out


def point_latency(runs: Sequence[RunHistograms]) -> PointLatency | None:
    """The point's intervals (interval k of every run merged) and distribution; None without a run, a transaction,
    or with runs of different interval lengths (the plan gives a point's runs the same)."""
    if not runs or len({r.interval_s for r in runs}) > 1:
        return None
    whole = new_histogram()
    for run in runs:
        whole.add(decode(run.histogram))
    if whole.get_total_count() == 0:
        return None
    intervals = []
    for k in range(max((len(r.intervals) for r in runs), default=0)):
        parts = [r.intervals[k] for r in runs if k < len(r.intervals) and r.intervals[k].transactions]
        if not parts:
            continue
        merged = new_histogram()
        for part in parts:
            merged.add(decode(part.histogram))
        p50, p95, p99 = values_at_percentiles(merged, [50, 95, 99])
        intervals.append(
            LatencyInterval(
                elapsed_s=max(p.elapsed_s for p in parts),
                transactions=sum(p.transactions for p in parts),
                runs=len(parts),
                p50=_ms(p50),
                p95=_ms(p95),
                p99=_ms(p99),
            )
        )
    return PointLatency(
        interval_s=runs[0].interval_s,
        transactions=whole.get_total_count(),
        latency_ms=percentiles_of(whole),
        intervals=intervals,
        distribution=distribution(whole),
    )
