"""Issue 26.2: aggregation holds one step's shard series at a time, so its peak memory stays under the
Aggregate function's whatever the shard count. Measured as the strict local runtime measures a Lambda's:
the peak resident memory of a process that does only that (bench/limits.py aggregate)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pgarena.planning.footprint import AGGREGATE_MEMORY_MIB, SERIES_PARSED_BYTES_PER_S

pytestmark = pytest.mark.integration

BENCH = Path(__file__).resolve().parents[2] / "bench" / "limits.py"
SECONDS = 20  # each synthetic shard's measured seconds at 2,000 tps: one encoded HdrHistogram a second


def aggregated(targets: int) -> dict:
    """Aggregate `targets` x 20 client counts, each run on 10 workers, in a child process; its figures."""
    command = [sys.executable, str(BENCH), "aggregate", "--workers", "10", "--seconds", str(SECONDS)]
    command += ["--targets", str(targets), "--clients", "20", "--repetitions", "1"]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=1800).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_2000_shards_aggregate_under_the_function_s_memory_and_grow_it_by_less_than_their_series():
    # Given 200 and 2,000 synthetic shards (1 and 10 targets x 20 client counts x 10 workers)
    small, large = aggregated(1), aggregated(10)
    assert (small["shards"], large["shards"]) == (200, 2_000)
    # Then the 2,000 are aggregated within the Aggregate function's memory
    assert large["peak_rss_mib"] < AGGREGATE_MEMORY_MIB, large
    # And the 1,800 more shards add well under what holding their series at once would (bench/limits.py
    # --eager measured 86 MiB more for these 2,000 than streamed). The growth streamed is mostly the results
    # themselves: 26 MiB when results.json was 1.8 MiB, 31-33 MiB since each point carries its merged latency
    # (over time and by percentile: 2.2 MiB), against 65 MiB of series held and about 117 MiB eager.
    held_mib = 1_800 * SECONDS * SERIES_PARSED_BYTES_PER_S / 2**20
    assert large["peak_rss_mib"] - small["peak_rss_mib"] < 0.6 * held_mib, (small, large, held_mib)
