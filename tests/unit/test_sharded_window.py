"""A sharded run's window is the shards' exact common span: from the latest shard's first transaction
start to the earliest shard's last transaction end, transactions counted by end time. Shards' pgbench
logs are generated with sub-second offsets, read as a worker reads them, merged as aggregation does, and
checked against counting every line by hand."""

import random
from pathlib import Path

import pytest

from pgarena.analysis.latency import HIGHEST_US, LOWEST_US, new_histogram, percentiles_of
from pgarena.analysis.merge import merge
from pgarena.tools.pgbench.txlog import read_txlog

EPOCH_US = 1_700_000_000 * 1_000_000


def shard_logs(folder: Path, rng: random.Random, start_us: int, run_us: int, clients: int = 6) -> list[Path]:
    """One shard's --log files (two threads): each client runs transaction after transaction from
    start_us for run_us; one in 50 fails. Each file's lines in end-time order, as pgbench writes them."""
    folder.mkdir()
    files: list[list[tuple[int, str]]] = [[], []]
    for client in range(clients):
        clock, number = start_us + rng.randrange(2_000), 0
        while clock < start_us + run_us:
            latency = int(rng.lognormvariate(8, 0.6))
            clock += latency
            shown = "failed" if rng.random() < 0.02 else str(latency)
            files[client % 2].append((clock, f"{client} {number} {shown} 0 {clock // 1_000_000} {clock % 1_000_000}\n"))
            number += 1
    paths = []
    for i, lines in enumerate(files):
        path = folder / ("pgbench_log.1000" + ("" if i == 0 else f".{i}"))
        path.write_text("".join(line for _, line in sorted(lines)))
        paths.append(path)
    return paths


def by_hand(shards: list[list[Path]]) -> tuple[int, int, list[int], int]:
    """The common span's ends (us), the latencies of the transactions done inside it and the failed count."""
    starts, ends, lines = [], [], []
    for paths in shards:
        parsed = [line.split() for path in paths for line in path.read_text().splitlines()]
        done = [(int(f[4]) * 1_000_000 + int(f[5]), int(f[2])) for f in parsed if f[2].isdigit()]
        starts.append(min(end - latency for end, latency in done))
        ends.append(max(int(f[4]) * 1_000_000 + int(f[5]) for f in parsed))
        lines += parsed
    start, end = max(starts), min(ends)
    inside = [f for f in lines if start <= int(f[4]) * 1_000_000 + int(f[5]) <= end]
    return start, end, [int(f[2]) for f in inside if f[2].isdigit()], sum(1 for f in inside if not f[2].isdigit())


@pytest.mark.parametrize("offsets_us", [(370_000, 810_000, 1_120_000), (0, 999_999, 450_123)])
def test_the_merged_window_is_the_exact_common_span_with_every_transaction_that_ended_in_it(tmp_path, offsets_us):
    # Given three shards of an 8 s run that started a fraction of a second apart
    rng = random.Random(sum(offsets_us))
    shards = [shard_logs(tmp_path / f"s{i}", rng, EPOCH_US + offset, 8_000_000 - offset) for i, offset in enumerate(offsets_us)]
    # When each is read as its worker reads it and the three are merged
    merged = merge([read_txlog(paths, per_second=True).series for paths in shards])
    # Then the window is the span to the microsecond, and its transactions are every one that ended in it
    start_us, end_us, latencies, failed = by_hand(shards)
    assert round(merged.window_start_epoch * 1_000_000) == start_us
    assert round(merged.window_end_epoch * 1_000_000) == end_us
    assert merged.window_s == (end_us - start_us) / 1_000_000
    assert merged.transactions == len(latencies) and merged.failed_transactions == failed
    assert merged.tps == len(latencies) / merged.window_s
    expected = new_histogram()
    for latency in latencies:
        expected.record_value(min(max(latency, LOWEST_US), HIGHEST_US))
    assert merged.latency.model_dump(include={"p50", "p95", "p99", "max"}) == percentiles_of(expected).model_dump(
        include={"p50", "p95", "p99", "max"}
    )
    # And the span keeps nearly all of the run, where whole seconds kept 6 of its 8
    assert merged.window_s > 6.5


def test_shards_that_started_further_apart_than_the_kept_seconds_are_cut_at_a_whole_second_and_stay_exact(tmp_path):
    # Given a shard that started 3.4 s after the other, past the two first seconds every shard keeps
    rng = random.Random(7)
    shards = [
        shard_logs(tmp_path / "s0", rng, EPOCH_US, 9_000_000),
        shard_logs(tmp_path / "s1", rng, EPOCH_US + 3_400_000, 5_000_000),
    ]
    # When merged
    merged = merge([read_txlog(paths, per_second=True).series for paths in shards])
    # Then the window starts at the next whole second, and counts exactly what ended inside it
    start_us = round(merged.window_start_epoch * 1_000_000)
    end_us = round(merged.window_end_epoch * 1_000_000)
    assert start_us % 1_000_000 == 0 and start_us > by_hand(shards)[0]
    ended = [line.split() for paths in shards for path in paths for line in path.read_text().splitlines()]
    inside = [f for f in ended if start_us <= int(f[4]) * 1_000_000 + int(f[5]) <= end_us and f[2].isdigit()]
    assert merged.transactions == len(inside)


def test_a_warm_up_cut_inside_a_second_leaves_its_transactions_out_of_the_span(tmp_path):
    # Given two shards whose first 1.3 s are a warm-up (the measured window starts at since)
    rng = random.Random(11)
    shards = [shard_logs(tmp_path / f"s{i}", rng, EPOCH_US + offset, 6_000_000) for i, offset in enumerate((0, 420_000))]
    since_us = EPOCH_US + 1_730_000
    # When each is read from since, and merged
    merged = merge([read_txlog(paths, per_second=True, since_epoch=since_us / 1_000_000).series for paths in shards])
    # Then the span starts at since, and holds every transaction that ended from then to the earliest last end
    ended = [[line.split() for path in paths for line in path.read_text().splitlines()] for paths in shards]
    end_us = min(max(int(f[4]) * 1_000_000 + int(f[5]) for f in lines) for lines in ended)
    inside = [f for lines in ended for f in lines if since_us <= int(f[4]) * 1_000_000 + int(f[5]) <= end_us and f[2].isdigit()]
    assert round(merged.window_start_epoch * 1_000_000) == since_us
    assert merged.transactions == len(inside)
