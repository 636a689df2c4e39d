"""Exact merging of shards: tps adds up over the window all shards ran; percentiles come from merged
histograms, never from averaging per-shard percentiles. Pure."""

from __future__ import annotations

import math

from pgarena.analysis.latency import decode, new_histogram, percentiles_of
from pgarena.model.results import ProgressSample
from pgarena.model.series import MergedRun, ShardSeries


class NoCommonWindow(ValueError):
    pass


def common_seconds(series: list[ShardSeries]) -> list[int]:
    """Whole seconds [t, t+1) inside the window when every shard was running."""
    start = max(s.start_epoch for s in series)
    end = min(s.end_epoch for s in series)
    return [t for t in range(math.ceil(start), math.floor(end))]


def merge(series: list[ShardSeries]) -> MergedRun:
    if not series:
        raise NoCommonWindow("no shard logged a transaction")
    seconds = set(common_seconds(series))
    if not seconds:
        raise NoCommonWindow("the shards never ran together for a whole second")
    histogram = new_histogram()
    per_second: dict[int, int] = {t: 0 for t in seconds}
    shard_counts, failed = [], 0
    for shard in series:
        count = 0
        for bucket in shard.seconds:
            if bucket.t in seconds:
                histogram.add(decode(bucket.hist))
                per_second[bucket.t] += bucket.count
                count += bucket.count
                failed += bucket.failed
        shard_counts.append(count)
    window_s = len(seconds)
    first = min(seconds)
    latency = percentiles_of(histogram).model_copy(
        update={"avg": round(histogram.get_mean_value() / 1000, 3), "stddev": round(histogram.get_stddev() / 1000, 3)}
    )
    starts = [s.start_epoch for s in series]
    return MergedRun(
        start_skew_s=round(max(starts) - min(starts), 6),
        window_start_epoch=float(first),
        window_end_epoch=float(max(seconds) + 1),
        window_s=window_s,
        tps=sum(shard_counts) / window_s,
        transactions=sum(shard_counts),
        failed_transactions=failed,
        latency=latency,
        progress=[ProgressSample(elapsed_s=float(t - first + 1), tps=float(per_second[t])) for t in sorted(seconds)],
        shard_tps=[c / window_s for c in shard_counts],
    )
