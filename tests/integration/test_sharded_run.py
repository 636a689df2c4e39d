"""Distributed load: 4 workers on one target, started together, merged exactly."""

import bisect
import gzip

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
    """The common span recomputed from each shard's raw per-transaction log (the latest first start to the
    earliest last end, in microseconds), and the transactions that ended inside it."""
    logs = [
        [line.split() for path in s.raw if path.endswith(".gz") for line in gzip.open(run.results_dir / path, "rt")]
        for s in workload.shards
    ]
    ended = [[(int(f[4]) * 1_000_000 + int(f[5]), f[2]) for f in lines] for lines in logs]
    start = max(min(end - int(latency) for end, latency in shard if latency.isdigit()) for shard in ended)
    end = min(max(end for end, _ in shard) for shard in ended)
    latencies_ms, per_shard = [], []
    for shard in ended:
        inside = [int(latency) / 1000 for at, latency in shard if latency.isdigit() and start <= at <= end]
        latencies_ms += inside
        per_shard.append(len(inside))
    return (end - start) / 1_000_000, sorted(latencies_ms), per_shard


def test_clients_are_split_across_four_shards(workload):
    assert [s.clients for s in workload.shards] == [3, 3, 2, 2]
    assert workload.clients == 10 and workload.requested_clients is None


def test_shards_start_together(workload):
    assert all(s.barrier.all_arrived for s in workload.shards)
    assert len({s.barrier.start_epoch for s in workload.shards}) == 1
    assert workload.start_skew_s < 0.5


def test_merged_tps_is_the_sum_of_the_shards_over_the_common_window(workload, raw_window):
    window_s, _, per_shard = raw_window
    # The span to the microsecond: a 6 s run keeps nearly all of it, where whole seconds kept 3 to 5
    assert window_s == workload.window_s > 5
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
