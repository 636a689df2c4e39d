"""Merging shards' latencies: HdrHistograms (what pgarena does) against concatenating every sample and
sorting (the naive exact way), side by side in one run.

    .venv/bin/python bench/merge.py [--shards 16] [--samples 1000000]

Prints time and peak memory of each, and the ratios, plus the largest p50/p95/p99 difference.
"""

from __future__ import annotations

import argparse
import math
import random
import time
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

from pgarena.analysis.latency import decode, encode, new_histogram, values_at_percentiles

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[T, float, int]:
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, elapsed, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, default=16, help="shards whose latencies are merged (%(default)s)")
    parser.add_argument("--samples", type=int, default=1_000_000, help="latencies per shard (%(default)s)")
    options = parser.parse_args()
    rng = random.Random(7)
    print(f"generating {options.shards} shards x {options.samples:,} latencies (us, log-normal)...", flush=True)
    shards = [[int(rng.lognormvariate(7.5, 0.6)) + 1 for _ in range(options.samples)] for _ in range(options.shards)]
    encoded = []
    for samples in shards:  # what each worker ships: one encoded histogram
        h = new_histogram()
        for value in samples:
            h.record_value(value)
        encoded.append(encode(h))

    def merge_histograms() -> dict[int, int]:
        total = new_histogram()
        for item in encoded:
            total.add(decode(item))
        return dict(zip((50, 95, 99), values_at_percentiles(total, [50, 95, 99]), strict=True))

    def concatenate_and_sort() -> dict[int, int]:
        everything = sorted(value for samples in shards for value in samples)
        return {p: everything[math.ceil(p / 100 * len(everything)) - 1] for p in (50, 95, 99)}

    hdr, hdr_s, hdr_peak = timed(merge_histograms)
    naive, naive_s, naive_peak = timed(concatenate_and_sort)
    worst = max(abs(hdr[p] - naive[p]) / naive[p] for p in hdr)
    print(f"hdrhistogram merge : {hdr_s:8.3f} s  peak {hdr_peak / 2**20:9.1f} MiB  {hdr}")
    print(f"concatenate + sort : {naive_s:8.3f} s  peak {naive_peak / 2**20:9.1f} MiB  {naive}")
    print(
        f"ratio (naive / hdr): time {naive_s / hdr_s:.0f}x, memory {naive_peak / hdr_peak:.0f}x; "
        f"largest percentile difference {worst:.4%} (HdrHistogram precision 0.1%)"
    )


if __name__ == "__main__":
    main()
