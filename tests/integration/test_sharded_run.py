"""Distributed load: 4 workers on one target, started together, merged exactly."""

import bisect
import gzip
import json
import math

import pytest

from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

MATRIX = {
    "campaign": "sharded",
    "connections": {"monitor_interval_s": 1},
    "targets": [{"name": "pg", "provider": "embedded", "embedded": {"settings": {"fsync": "off", "synchronous_commit": "off"}}}],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 2},
            "run": {"clients": 10, "jobs": 1, "duration_s": 6, "progress_s": 1, "workers": 4},
        }
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    result = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("results"))
    assert result.status == "SUCCEEDED", result.error
    return result


@pytest.fixture(scope="module")
def workload(run):
    (target,) = run.results.targets
    (w,) = target.workloads
    assert w.status == "succeeded" and not w.degraded, w.error
    return w


@pytest.fixture(scope="module")
def raw_window(run, workload):
    """The common window recomputed from each shard's raw output, and the transactions inside it."""
    series = [
        json.loads((run.results_dir / next(p for p in s.raw if p.endswith("series.json"))).read_text()) for s in workload.shards
    ]
    start = math.ceil(max(s["start_epoch"] for s in series))
    end = math.floor(min(s["end_epoch"] for s in series))
    latencies_ms, per_shard = [], []
    for shard in workload.shards:
        count = 0
        for path in [p for p in shard.raw if p.endswith(".gz")]:
            for line in gzip.open(run.results_dir / path, "rt"):
                fields = line.split()
                if fields[2].isdigit() and start <= int(fields[4]) < end:
                    latencies_ms.append(int(fields[2]) / 1000)
                    count += 1
        per_shard.append(count)
    return end - start, sorted(latencies_ms), per_shard


def test_clients_are_split_across_four_shards(workload):
    assert [s.clients for s in workload.shards] == [3, 3, 2, 2]
    assert workload.clients == 10 and workload.requested_clients is None


def test_shards_start_together(workload):
    assert all(s.barrier.all_arrived for s in workload.shards)
    assert len({s.barrier.start_epoch for s in workload.shards}) == 1
    assert workload.start_skew_s < 0.5


def test_merged_tps_is_the_sum_of_the_shards_over_the_common_window(workload, raw_window):
    window_s, _, per_shard = raw_window
    assert window_s == workload.window_s >= 3
    assert sum(per_shard) == workload.transactions
    assert workload.tps == pytest.approx(sum(n / window_s for n in per_shard))


@pytest.mark.parametrize("p", [50, 95, 99])
def test_merged_percentiles_match_the_concatenated_raw_latencies(workload, raw_window, p):
    _, latencies_ms, _ = raw_window
    merged = getattr(workload.latency_ms, f"p{p}")
    # Within HdrHistogram's precision (3 significant digits: 0.1%, and 1 us of rounding): the merged
    # value is a p-th percentile of the raw latencies once widened by that precision.
    low, high = merged / 1.001 - 0.001, merged * 1.001 + 0.001
    assert bisect.bisect_left(latencies_ms, low) / len(latencies_ms) <= p / 100
    assert bisect.bisect_right(latencies_ms, high) / len(latencies_ms) >= p / 100


def test_each_shard_keeps_its_own_summary(workload):
    assert all(s.status == "succeeded" and s.tps > 0 and s.raw for s in workload.shards)
