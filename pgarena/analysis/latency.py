"""Latency distributions as HdrHistograms: exact enough to merge across workers, never averaged percentiles."""

from __future__ import annotations

import math
from bisect import bisect_left
from fractions import Fraction
from itertools import accumulate

from hdrh.histogram import HdrHistogram

from pgarena.model.figures import Latency

# Microseconds from 1 us to one hour at 3 significant digits (0.1% precision).
LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def values_at_percentiles(histogram: HdrHistogram, percentiles: list[float]) -> list[int]:
    """pgarena's one percentile definition, for single and merged runs alike.

    The p-th percentile of n samples is the smallest recorded value with at least p% of the samples
    at or below it: the sample of rank ceil(p/100 * n) in ascending order. It is read from the
    histogram as the highest value equivalent to that sample's bucket, so it is never below the
    sample and at most 0.1% above it (3 significant digits). HdrHistogram's own
    get_value_at_percentile rounds the rank to the nearest count instead, which can land one
    sample short of p% (e.g. rank 8873 of 8963 for p99, where 8874 is needed).
    """
    total = histogram.get_total_count()
    if total == 0:
        raise ValueError("no samples: an empty histogram has no percentiles")
    cumulative = list(accumulate(histogram.counts))
    values = []
    for p in percentiles:
        if not 0 < p <= 100:
            raise ValueError(f"percentile {p} is outside (0, 100]")
        # Exact arithmetic: 0.99 * 100 is 99.00000000000001 in floats, and ceil would make it 100.
        rank = max(1, math.ceil(Fraction(str(p)) * total / 100))
        index = bisect_left(cumulative, rank)
        values.append(histogram.get_highest_equivalent_value(histogram.get_value_from_index(index)))
    return values


def _ms(us: float) -> float:
    return round(us / 1000, 3)


def percentiles_of(histogram: HdrHistogram) -> Latency:
    """p50/p95/p99/max in milliseconds, read from the histogram (never computed from other percentiles)."""
    if histogram.get_total_count() == 0:
        return Latency()
    p50, p95, p99 = values_at_percentiles(histogram, [50, 95, 99])
    return Latency(p50=_ms(p50), p95=_ms(p95), p99=_ms(p99), max=_ms(histogram.get_max_value()))


def discard(histogram: HdrHistogram) -> None:
    """Lets a histogram no longer used go as soon as nothing refers to it. hdrh's histogram and its encoder refer
    to each other, so without this only the cycle collector frees it, late: aggregation decodes one a second of
    every run, 184 KiB of counts each, and held them by the dozen (11 MiB of peak memory on 2,000 shards)."""
    histogram.encoder.histogram = None


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
