"""pgbench's per-transaction log (--log) -> latency histograms, whole-run and per second, in one pass.

Line format: client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries], where
time is the latency in microseconds, or "failed" / "skipped"; time_epoch/time_us is when the
transaction ended. A study-scale log holds millions of lines: they are parsed and counted into
HdrHistogram buckets by a compiled scanner (_txlog.c, built by setup.py into the worker image and the
local virtualenv; the Lambda bundle never imports this module), a block at a time, on two cores: a
block's two halves, or two thread files' blocks at once. Memory stays bounded whatever the run's length:
per-second counts live in a ring of WINDOW_S seconds, and a second is encoded as soon as every file has
read past it.
"""

from __future__ import annotations

import base64
import ctypes
import mmap
import os
import struct
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from hdrh.histogram import HdrHistogram

from pgarena.analysis.latency import decode, new_histogram
from pgarena.model.series import SecondBucket, ShardSeries
from pgarena.tools.pgbench import _txlog
from pgarena.tools.pgbench.edges import edge_seconds_of, edges

# Bytes scanned at a time, shared by the files (pgbench -j writes one per thread; two files' shares of
# 512 KiB or more are scanned at once): large enough that a block's two halves pay for their thread
# (per-call costs were a fifth of the time at 1 MiB), small enough that a block spans less time than the
# ring (WINDOW_S), or the scan stops part-way and the second half's work is dropped. A file's share is at least MIN_BLOCK_BYTES. A file is mapped
# MAP_BYTES at a time, and pages scanned are given back at once (_File.consume).
BLOCK_BYTES = 8 << 20
MIN_BLOCK_BYTES = 256 << 10
MAP_BYTES = 32 << 20
# A late line's end is looked for this many bytes at a time (pgbench's lines are under 100).
MAX_LINE = 4096
# Seconds held open at once (a ring of bucket counts: WINDOW_S x 184 KiB). Files further apart in
# time than this are read in turns; a line older than the ring is merged into its encoded second.
WINDOW_S = 64
# Fields of a --log line that a file's first line must have (the 6 of every pgbench since 9.x), and the
# most digits of an end second (the scanner's MAX_SECOND_DIGITS).
FIELDS = 6
SECOND_DIGITS = 12
# _TEMPLATE's bucket layout (counts array length, bucket magnitudes) is the same for every histogram.
_TEMPLATE = new_histogram()
_LAYOUT = (
    _TEMPLATE.unit_magnitude,
    _TEMPLATE.sub_bucket_half_count_magnitude,
    _TEMPLATE.sub_bucket_half_count,
    _TEMPLATE.sub_bucket_mask,
    _TEMPLATE.lowest_trackable_value,
    _TEMPLATE.highest_trackable_value,
    _TEMPLATE.counts_len,
)
_COUNTS_BYTES = 8 * _TEMPLATE.counts_len
_NO_WARMUP = -(2**62)
# The scanner's stats slots (_txlog.c).
WARMUP, NOT_DONE, MIN_START_US, MAX_END_US, MAX_SECOND, BAD_LINES, SKIPPED = range(7)


def _new_stats() -> array[int]:
    return array("q", [0, 0, 2**62, -1, -1, 0, 0])


def _counts() -> memoryview:
    """A zeroed counts array as the scanner writes it (int64, one per bucket)."""
    return memoryview(bytearray(_COUNTS_BYTES)).cast("q")


@dataclass
class ScriptLog:
    """One script of a weighted mix (-f file@weight) in the measured window: its latencies and lines not done."""

    histogram: HdrHistogram
    not_done: int


class _PerScript:
    """The scanner's per-script counts (a row of buckets per script) and its done / not-done lines."""

    def __init__(self, scripts: int) -> None:
        self.counts = memoryview(bytearray(_COUNTS_BYTES * scripts)).cast("q")
        self.stats = array("q", [0] * (2 * scripts))
        self.scripts = scripts

    def logs(self) -> list[ScriptLog]:
        n = _TEMPLATE.counts_len
        return [
            ScriptLog(histogram=histogram_of_counts(self.counts[s * n : (s + 1) * n]), not_done=self.stats[2 * s + 1])
            for s in range(self.scripts)
        ]


@dataclass
class TransactionLog:
    histogram: HdrHistogram  # every completed transaction's latency (us), in the measured window
    not_done: int  # failed or skipped transactions, in the measured window
    series: ShardSeries | None  # per-second buckets, when asked for and anything was logged
    skipped: int = 0  # of not_done, skipped (--rate with --latency-limit: late before they started)
    warmup_transactions: int = 0  # lines (done or not) that ended before the measured window
    end_epoch: float | None = None  # when the last logged transaction ended
    start_epoch: float | None = None  # when the first logged transaction began
    scripts: list[ScriptLog] | None = None  # per script number, when asked for (a weighted mix)


def histogram_of_counts(counts: memoryview) -> HdrHistogram:
    """A histogram holding these bucket counts (what record_value would have built, bucket for bucket)."""
    histogram = new_histogram()
    ctypes.memmove(histogram.counts, counts.tobytes(), _COUNTS_BYTES)
    recorded = [i for i, n in enumerate(counts) if n]
    if recorded:
        histogram.set_internal_tacking_values(recorded[0], recorded[-1], sum(counts))
    return histogram


# HdrHistogram's V2 wire format (hdrh.codec): a payload header, the counts as ZigZag LEB128 varints
# (a run of n zero counts as -n), zlib-compressed behind a compression header, then base64; _txlog.encode
# does all but base64. The payload header's length field (bytes 4-7) is filled in by the scanner.
_V2_ENCODING_COOKIE = 0x1C849303 | 0x10
_V2_COMPRESSION_COOKIE = 0x1C849304 | 0x10
_PAYLOAD_HEADER = struct.pack(
    ">IIIIQQd",
    _V2_ENCODING_COOKIE,
    0,
    0,
    _TEMPLATE.significant_figures,
    _TEMPLATE.lowest_trackable_value,
    _TEMPLATE.highest_trackable_value,
    1.0,
)


def _encoded(counts: memoryview, start: int, stop: int, level: int | None = None, into: memoryview | None = None) -> str:
    """The V2 encoding of counts that are zero outside [start, stop) (with into: added to it and cleared).
    level None: zlib's Huffman-only strategy, which on a second's histogram is 1.7x faster than level 1
    and 13% smaller (varints repeat few byte strings); any setting decodes the same. A per-second series
    encodes one histogram per second of the run."""
    huffman = level is None
    raw = _txlog.encode(
        counts,
        start,
        stop,
        _PAYLOAD_HEADER,
        _V2_COMPRESSION_COOKIE,
        zlib.Z_DEFAULT_COMPRESSION if level is None else level,
        huffman,
        into,
    )
    return base64.b64encode(raw).decode()


def encode_counts(counts: memoryview, level: int | None = None) -> str:
    """The histogram holding these bucket counts, encoded without building it: at zlib's default level,
    byte for byte what encode(histogram_of_counts(counts)) gives; at any level, the same when decoded."""
    return _encoded(counts, 0, _TEMPLATE.counts_len, level)


class _File:
    """One log file, mapped MAP_BYTES at a time and scanned a block at a time: the scanner reads the
    page cache itself (no copy: reading into a buffer cost a third of the time), and no more than a
    mapping's worth of the file is ever resident. `stats` are the scanner's, for this file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open("rb") as head:
            first = head.readline().split()
        if len(first) < FIELDS or not (first[4].isdigit() and len(first[4]) <= SECOND_DIGITS):
            raise ValueError(f"{path}: not a pgbench --log file (first line has {len(first)} fields, expected 6 to 8)")
        self.first_second = int(first[4])
        self.fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self.fd).st_size
        self.offset = 0  # the first unread byte
        self.map: mmap.mmap | None = None
        self.map_offset = 0
        self.block = BLOCK_BYTES  # read_txlog shares it out among the files
        self.released = 0  # bytes of the mapping given back (whole pages, already scanned)
        self.stats = _new_stats()

    @property
    def seen(self) -> int:
        """The latest end second read from this file (-1 before any)."""
        return self.stats[MAX_SECOND]

    def pending(self) -> memoryview | None:
        """Up to `block` unread bytes; None at the end (and the file closed)."""
        if self.offset >= self.size:
            self.close()
            return None
        mapped_to = self.map_offset + (len(self.map) if self.map is not None else 0)
        if self.map is None or (mapped_to - self.offset < self.block and mapped_to < self.size):
            # A mapping starts on a page; the previous one is unmapped once its last view is gone.
            self.map_offset = self.offset - self.offset % mmap.ALLOCATIONGRANULARITY
            length = min(self.size - self.map_offset, MAP_BYTES)
            self.map = mmap.mmap(self.fd, length, access=mmap.ACCESS_READ, offset=self.map_offset)
            self.released = 0
            mapped_to = self.map_offset + length
        start = self.offset - self.map_offset
        view = memoryview(self.map)[start : start + self.block]
        if self.offset + len(view) == self.size and view[-1] != ord("\n"):
            return memoryview(bytes(view) + b"\n")  # a last line without its newline is scanned too
        return view

    def consume(self, n: int) -> None:
        """Moves past n scanned bytes, and gives their whole pages back: mapped pages count in the worker's
        memory until then (8 files mapped whole held 163 MiB)."""
        self.offset += n
        scanned = (self.offset - self.map_offset) // mmap.PAGESIZE * mmap.PAGESIZE
        if self.map is not None and scanned > self.released:
            self.map.madvise(mmap.MADV_DONTNEED, self.released, scanned - self.released)
            self.released = scanned

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd, self.map = -1, None

    @staticmethod
    def first_line(block: memoryview) -> memoryview:
        """The block's first line, with its newline (the scanner only hands back whole lines)."""
        at = 0
        while (found := bytes(block[at : at + MAX_LINE]).find(b"\n")) < 0:
            at += MAX_LINE
        return block[: at + found + 1]


@dataclass
class _Ring:
    """Per-second bucket counts for seconds base .. base + WINDOW_S - 1, in row t % WINDOW_S of window,
    and of meta: lines, lines not done, the lowest and highest bucket recorded (_txlog.c). A second's
    counts are added to `total` when it is closed."""

    base: int
    total: memoryview
    per_script: _PerScript | None = None
    # Anonymous memory: zero pages until written, so only the buckets recorded ever become resident.
    window: memoryview = field(default_factory=lambda: memoryview(mmap.mmap(-1, _COUNTS_BYTES * WINDOW_S)).cast("q"))
    meta: memoryview = field(default_factory=lambda: memoryview(bytearray(8 * 4 * WINDOW_S)).cast("q"))
    closed: dict[int, SecondBucket] = field(default_factory=dict)

    def close_before(self, second: int) -> None:
        """Encodes every second below `second` that has lines (its counts added to total and cleared:
        only the buckets recorded, a few of the row's 184 KiB), and moves the ring past them."""
        for t in range(self.base, min(second, self.base + WINDOW_S)):
            slot = t % WINDOW_S
            lines, failed, low, high = self.meta[4 * slot : 4 * slot + 4]
            if not lines:
                continue
            done, row = lines - failed, self.window[slot * _TEMPLATE.counts_len : (slot + 1) * _TEMPLATE.counts_len]
            hist = _encoded(row, low, high + 1 if done else low, into=self.total)
            self.closed[t] = SecondBucket(t=t, count=done, failed=failed, hist=hist)
            self.meta[4 * slot : 4 * slot + 4] = _EMPTY_META
        self.base = max(self.base, second)

    def merge_late(self, line: memoryview, since_us: int, stats: array[int], second: int) -> None:
        """A line of a second encoded already (out of time order): scanned alone, added to that second."""
        late = _Ring(base=second, total=self.total)
        _scan([(line, stats)], since_us, late, late.total, self.per_script)
        late.close_before(second + 1)
        added, before = late.closed[second], self.closed.get(second)
        if before is not None:
            merged = decode(before.hist)
            merged.add(decode(added.hist))
            counts = memoryview(bytearray(merged.counts)).cast("q")
            count, failed = before.count + added.count, before.failed + added.failed
            added = SecondBucket(t=second, count=count, failed=failed, hist=encode_counts(counts))
        self.closed[second] = added


_EMPTY_META = array("q", [0, 0, 0, 0])


def first_start_epoch(paths: list[Path]) -> float | None:
    """When the run's first logged transaction began: the earliest start in each file's first block
    (each file is one pgbench thread, whose clients all start at once), or None for empty logs."""
    starts = []
    for path in paths:
        if path.stat().st_size == 0:
            continue
        log = _File(path)
        try:
            block = log.pending()
            if block is not None:
                _scan([(block, log.stats)], _NO_WARMUP, None, _counts())
        finally:
            log.close()
        if log.stats[MIN_START_US] < 2**62:
            starts.append(log.stats[MIN_START_US])
    return min(starts) / 1_000_000 if starts else None


def read_txlog(paths: list[Path], per_second: bool, since_epoch: float | None = None, scripts: int = 0) -> TransactionLog:
    """The run's latency histogram, the failed/skipped count and (per_second) the per-second series.

    `since_epoch` starts the measured window (a warm-up left out): transactions that ended before it are
    only counted (warmup_transactions), and the series starts there. `scripts`: a weighted mix's script
    count; each script's own histogram and not-done lines are counted too (TransactionLog.scripts)."""
    files: list[_File] = []
    try:
        for path in paths:
            if path.stat().st_size > 0:
                files.append(_File(path))
        return _read(files, per_second, since_epoch, _PerScript(scripts) if scripts else None)
    finally:
        for log in files:
            log.close()


def _scan(
    blocks: list[tuple[memoryview, array[int]]],
    since_us: int,
    ring: _Ring | None,
    total: memoryview,
    per_script: _PerScript | None = None,
) -> list[tuple[int, int]]:
    """Each (block, its file's stats)'s (consumed, stop second), into the ring (or only total): one file's
    block (its two halves on two cores), or two files' at once, one per core where both are large enough
    (a run's thread files each get too small a share of BLOCK_BYTES to split)."""
    window, meta, base, window_s = (ring.window, ring.meta, ring.base, WINDOW_S) if ring else (None, None, 0, 1)
    if not blocks:
        return []
    scripts = (per_script.counts, per_script.stats) if per_script is not None else (None, None)
    if len(blocks) == 1:
        ((block, stats),) = blocks
        return [_txlog.scan(block, _LAYOUT, since_us, base, window_s, window, meta, total, stats, None, None, *scripts)]
    (block, stats), (other, other_stats) = blocks
    return list(_txlog.scan(block, _LAYOUT, since_us, base, window_s, window, meta, total, stats, other, other_stats, *scripts))


def _read(  # noqa: C901  # the reader's modes (per second or not, since a time) in one pass
    files: list[_File], per_second: bool, since_epoch: float | None, per_script: _PerScript | None = None
) -> TransactionLog:
    all_files, files = files, list(files)
    for log in files:  # only the ring bounds a block's time span
        log.block = max(BLOCK_BYTES // len(files), min(BLOCK_BYTES, MIN_BLOCK_BYTES)) if per_second else BLOCK_BYTES
    since_us = _NO_WARMUP if since_epoch is None else round(since_epoch * 1_000_000)
    total = _counts()
    ring = None
    if per_second and files:
        ring = _Ring(base=max(min(f.first_second for f in files), since_us // 1_000_000), total=total, per_script=per_script)
    while files:
        # Read from the two files furthest behind (one per core), so all files move through time together.
        blocks = []
        for log in sorted(files, key=lambda f: f.seen)[:2]:
            block = log.pending()
            if block is None:
                files.remove(log)
            else:
                blocks.append((log, block))
        scanned = _scan([(block, log.stats) for log, block in blocks], since_us, ring, total, per_script)
        for (log, block), (consumed, stop) in zip(blocks, scanned, strict=True):
            if consumed == 0 and stop < 0:
                raise ValueError(f"{log.path}: a line longer than {log.block:,} bytes: not a pgbench --log file")
            log.consume(consumed)
            if ring is not None and 0 <= stop < ring.base:  # a line out of time order, its second encoded already
                line = log.first_line(block[consumed:])
                ring.merge_late(line, since_us, log.stats, stop)
                log.consume(len(line))
            elif stop >= 0:  # a line past the ring: this file waits there until the others catch up
                log.stats[MAX_SECOND] = max(log.seen, stop)
        if ring is not None:
            ring.close_before(min((f.seen for f in files), default=2**62))
    stats = [f.stats for f in all_files]
    start_us = min((s[MIN_START_US] for s in stats), default=2**62)
    end_us = max((s[MAX_END_US] for s in stats), default=-1)
    series = None
    if ring is not None and ring.closed:
        buckets = [ring.closed[t] for t in sorted(ring.closed)]
        start_epoch = start_us / 1_000_000 if start_us < 2**62 else float(buckets[0].t)
        series = ShardSeries(
            start_epoch=max(start_epoch, since_epoch) if since_epoch is not None else start_epoch,
            end_epoch=end_us / 1_000_000,
            seconds=buckets,
            edges=edges([f.path for f in all_files], edge_seconds_of(b.t for b in buckets), since_us),
        )
    return TransactionLog(
        histogram=histogram_of_counts(total),
        not_done=sum(s[NOT_DONE] for s in stats),
        skipped=sum(s[SKIPPED] for s in stats),
        series=series,
        warmup_transactions=sum(s[WARMUP] for s in stats),
        end_epoch=end_us / 1_000_000 if end_us >= 0 else None,
        start_epoch=start_us / 1_000_000 if start_us < 2**62 else None,
        scripts=per_script.logs() if per_script is not None else None,
    )
