"""A shard's first and last seconds, transaction by transaction (ShardSeries.edges), from its pgbench
--log files: the merge cuts the shards' common span inside those seconds to the microsecond.

The lines of a --log file come in the order their transactions ended (a thread logs each one as it
ends), so a second's lines are found by bisecting the file on the end second, and read from there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from pgarena.model.series import EdgeSecond

# Seconds kept at each end of a shard's run: the common span starts inside one of a shard's first two
# seconds whenever the shards started less than a second apart (the barrier starts them together).
EDGE_S = 2
# A thread logs a transaction a little after it ended, and its clients interleave: lines are looked for
# this many seconds either side of the seconds asked for.
SLACK_S = 2
# Bisection stops once the range is this small and reads on (pgbench's lines are under 100 bytes).
READ_BYTES = 1 << 16
# A --log line: client_id transaction_no latency_us|failed|skipped script_no end_epoch end_us [lag] [retries]
FIELDS = 6


def edge_seconds_of(seconds: Iterable[int]) -> set[int]:
    """The first and last EDGE_S of the seconds a shard's transactions ended in."""
    ordered = sorted(set(seconds))
    return {*ordered[:EDGE_S], *ordered[-EDGE_S:]}


def _end_second(line: bytes) -> int | None:
    fields = line.split()
    return int(fields[4]) if len(fields) >= FIELDS and fields[4].isdigit() else None


def _start_near(log: BinaryIO, size: int, second: int) -> int:
    """An offset at or before the first line that ended at `second` - SLACK_S or later."""
    low, high = 0, size
    while high - low > READ_BYTES:
        middle = (low + high) // 2
        log.seek(middle)
        log.readline()  # the rest of the line the seek landed in
        ended = _end_second(log.readline())
        if ended is None or ended >= second - SLACK_S:
            high = middle
        else:
            low = middle
    return low


def _lines_around(log: BinaryIO, size: int, first: int, last: int) -> Iterable[list[bytes]]:
    """The fields of each line that ended from `first` - SLACK_S to `last` + SLACK_S (and a few more)."""
    offset = _start_near(log, size, first)
    log.seek(offset)
    if offset:
        log.readline()
    for line in log:
        fields = line.split()
        if len(fields) < FIELDS or not (fields[4].isdigit() and fields[5].isdigit()):
            continue
        if int(fields[4]) > last + SLACK_S:
            return
        yield fields


def edges(paths: list[Path], seconds: set[int], since_us: int | None = None) -> list[EdgeSecond]:
    """Every transaction that ended in one of `seconds` (ones that ended before since_us, the warm-up's,
    left out, as the per-second series leaves them out)."""
    if not seconds:
        return []
    done: dict[int, list[tuple[int, int]]] = defaultdict(list)
    not_done: dict[int, list[int]] = defaultdict(list)
    groups = _runs(sorted(seconds))
    for path in paths:
        size = path.stat().st_size
        with path.open("rb") as log:
            seen: set[tuple[bytes, bytes, bytes, bytes]] = set()  # two groups' reads may overlap
            for first, last in groups:
                for fields in _lines_around(log, size, first, last):
                    t, us = int(fields[4]), int(fields[5])
                    key = (fields[0], fields[1], fields[4], fields[5])
                    if t not in seconds or key in seen or (since_us is not None and t * 1_000_000 + us < since_us):
                        continue
                    seen.add(key)
                    if fields[2].isdigit():
                        done[t].append((us, int(fields[2])))
                    else:
                        not_done[t].append(us)
    kept = []
    for t in sorted(seconds):
        ended = sorted(done[t])
        kept.append(EdgeSecond.of(t, [us for us, _ in ended], [lat for _, lat in ended], sorted(not_done[t])))
    return kept


def _runs(seconds: list[int]) -> list[tuple[int, int]]:
    """Consecutive seconds as (first, last) groups: each group is read in one pass."""
    groups: list[tuple[int, int]] = []
    for t in seconds:
        if groups and t == groups[-1][1] + 1:
            groups[-1] = (groups[-1][0], t)
        else:
            groups.append((t, t))
    return groups
