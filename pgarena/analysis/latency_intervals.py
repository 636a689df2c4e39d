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

from pgarena.analysis.latency import decode, discard, encode, new_histogram, percentiles_of, values_at_percentiles
from pgarena.model.metrics import IntervalHistogram, LatencyInterval, PercentileLatency, PointLatency, RunHistograms

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


class IntervalAccumulator:
    """A run's intervals built as its whole seconds come, in time order (each second's histogram decoded once,
    for the run's merge and its interval alike): one interval's histogram held at a time. Whole seconds first ..
    last are the window's; interval k ends at first + (k + 1) x interval_s, or at last + 1 for the last one."""

    def __init__(self, first: int, last: int, interval_s: int) -> None:
        self.first, self.last, self.interval_s = first, last, interval_s
        self.done: list[IntervalHistogram] = []
        self.histogram, self.count = new_histogram(), 0

    def add(self, t: int, histogram: HdrHistogram, count: int) -> None:
        """Second t's transactions (t from first to last, in order; a shard's seconds of one t one after another)."""
        self._close_before((t - self.first) // self.interval_s)
        self.histogram.add(histogram)
        self.count += count

    def _close_before(self, k: int) -> None:
        while len(self.done) < k:
            stop = min(self.first + (len(self.done) + 1) * self.interval_s, self.last + 1)
            # An interval without a transaction keeps its place (point_latency merges interval k with interval k).
            encoded = encode(self.histogram) if self.count else ""
            self.done.append(IntervalHistogram(elapsed_s=float(stop - self.first), transactions=self.count, histogram=encoded))
            # Reused, not made anew: a histogram is 184 KiB of counts, freed only when the garbage collector gets to it.
            self.histogram.reset()
            self.count = 0

    def intervals(self) -> tuple[IntervalHistogram, ...]:
        """The run's intervals; the accumulator is done with."""
        if self.last >= self.first:
            self._close_before(-(-(self.last + 1 - self.first) // self.interval_s))
        discard(self.histogram)
        return tuple(self.done)


def distribution(histogram: HdrHistogram) -> list[PercentileLatency]:
    """The latency at each of PERCENTILES, up to the first one that is the slowest transaction (rank n)."""
    total = histogram.get_total_count()
    if total == 0:
        return []
    # Up to the first percentile of rank n (the slowest transaction): beyond it the histogram tells nothing more.
    last = next((p for p in PERCENTILES[1:] if math.ceil(Fraction(str(p)) * total / 100) >= total), PERCENTILES[-1])
    shown = [p for p in PERCENTILES[1:] if p <= last]
    # 0%: the fastest transaction, read as every other percentile is (its bucket's highest equivalent value)
    out = [PercentileLatency(percentile=0.0, ms=_ms(histogram.get_highest_equivalent_value(histogram.get_min_value())))]
    out += [
        PercentileLatency(percentile=p, ms=_ms(v)) for p, v in zip(shown, values_at_percentiles(histogram, shown), strict=True)
    ]
    return out


def point_latency(runs: Sequence[RunHistograms]) -> PointLatency | None:
    """The point's intervals (interval k of every run merged) and distribution; None without a run, a transaction,
    or with runs of different interval lengths (the plan gives a point's runs the same)."""
    if not runs or len({r.interval_s for r in runs}) > 1:
        return None
    whole = new_histogram()
    for run in runs:
        _add(whole, run.histogram)
    if whole.get_total_count() == 0:
        return None
    intervals = []
    merged = new_histogram()
    for k in range(max((len(r.intervals) for r in runs), default=0)):
        parts = [r.intervals[k] for r in runs if k < len(r.intervals) and r.intervals[k].transactions]
        if not parts:
            continue
        merged.reset()
        for part in parts:
            _add(merged, part.histogram)
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
    point = PointLatency(
        interval_s=runs[0].interval_s,
        transactions=whole.get_total_count(),
        latency_ms=percentiles_of(whole),
        intervals=intervals,
        distribution=distribution(whole),
    )
    discard(whole)
    discard(merged)
    return point


def _add(histogram: HdrHistogram, encoded: str) -> None:
    decoded = decode(encoded)
    histogram.add(decoded)
    discard(decoded)
