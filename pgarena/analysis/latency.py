"""Latency distributions as HdrHistograms: exact enough to merge across workers, never averaged percentiles."""

from __future__ import annotations

from pathlib import Path

from hdrh.histogram import HdrHistogram

from pgarena.model.results import Latency
from pgarena.model.series import SecondBucket, ShardSeries

# Microseconds from 1 us to one hour at 3 significant digits (0.1% precision).
LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def pgbench_log_histogram(paths: list[Path]) -> tuple[HdrHistogram, int]:
    """Histogram of per-transaction latencies from pgbench --log files, and the failed/skipped count.

    Line format: client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries],
    where time is the latency in microseconds, or "failed" / "skipped".
    """
    histogram, not_done = new_histogram(), 0
    for path in paths:
        with path.open() as lines:
            for line in lines:
                fields = line.split()
                if len(fields) < 3:
                    continue
                if fields[2].isdigit():
                    histogram.record_value(min(max(int(fields[2]), LOWEST_US), HIGHEST_US))
                else:
                    not_done += 1
    return histogram, not_done


def _ms(us: float) -> float:
    return round(us / 1000, 3)


def percentiles_of(histogram: HdrHistogram) -> Latency:
    """p50/p95/p99/max in milliseconds, read from the histogram (never computed from other percentiles)."""
    if histogram.get_total_count() == 0:
        return Latency()
    ms = _ms
    return Latency(
        p50=ms(histogram.get_value_at_percentile(50)),
        p95=ms(histogram.get_value_at_percentile(95)),
        p99=ms(histogram.get_value_at_percentile(99)),
        max=ms(histogram.get_max_value()),
    )


def encode(histogram: HdrHistogram) -> str:
    data = histogram.encode()
    return data.decode() if isinstance(data, bytes) else data


def decode(encoded: str) -> HdrHistogram:
    return HdrHistogram.decode(encoded)


def merged(encoded: list[str]) -> HdrHistogram:
    total = new_histogram()
    for item in encoded:
        total.add(decode(item))
    return total


def pgbench_log_series(paths: list[Path]) -> ShardSeries | None:
    """Per-second buckets of a pgbench --log (fields: client txn latency_us script epoch_s epoch_us ...)."""
    buckets: dict[int, tuple[HdrHistogram, list[int]]] = {}
    start, end = float("inf"), float("-inf")
    for path in paths:
        with path.open() as lines:
            for line in lines:
                fields = line.split()
                if len(fields) < 6 or not fields[4].isdigit() or not fields[5].isdigit():
                    continue
                second = int(fields[4])
                completed = second + int(fields[5]) / 1_000_000
                histogram, counts = buckets.setdefault(second, (new_histogram(), [0, 0]))
                if fields[2].isdigit():
                    latency_us = int(fields[2])
                    histogram.record_value(min(max(latency_us, LOWEST_US), HIGHEST_US))
                    counts[0] += 1
                    start = min(start, completed - latency_us / 1_000_000)
                else:
                    counts[1] += 1
                end = max(end, completed)
    if not buckets:
        return None
    return ShardSeries(
        start_epoch=start if start != float("inf") else min(buckets),
        end_epoch=end,
        seconds=[SecondBucket(t=t, count=c[0], failed=c[1], hist=encode(h)) for t, (h, c) in sorted(buckets.items())],
    )
