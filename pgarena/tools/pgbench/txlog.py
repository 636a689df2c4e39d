"""pgbench's per-transaction log (--log) -> latency histograms, whole-run and per second, in one pass.

Line format: client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries], where
time is the latency in microseconds, or "failed" / "skipped"; time_epoch/time_us is when the
transaction ended. A study-scale log holds millions of lines, so it is parsed by pyarrow in blocks
and bucketed with numpy (worker image only: the Lambda bundle never imports this module), and
recorded into HdrHistograms by bucket counts rather than value by value. Memory stays bounded by a
few blocks per file whatever the run's length: a second's histogram is encoded as soon as every
file has read past it.
"""

from __future__ import annotations

import base64
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from hdrh.histogram import HdrHistogram

from pgarena.analysis.latency import HIGHEST_US, LOWEST_US, decode, new_histogram
from pgarena.model.series import SecondBucket, ShardSeries

# Bytes pyarrow reads and parses at a time, per file: large enough to amortise per-block work,
# small enough that a handful of files in flight stays far below the worker's memory.
BLOCK_BYTES = 2 << 20
NOT_DONE = ["failed", "skipped"]
# Columns read (0-based): the latency, and the end time's seconds and microseconds.
LATENCY, EPOCH_S, EPOCH_US = 2, 4, 5
# _TEMPLATE's bucket layout (counts array length, bucket magnitudes) is the same for every histogram.
_TEMPLATE = new_histogram()


@dataclass
class TransactionLog:
    histogram: HdrHistogram  # every completed transaction's latency (us), in the measured window
    not_done: int  # failed or skipped transactions, in the measured window
    series: ShardSeries | None  # per-second buckets, when asked for and anything was logged
    warmup_transactions: int = 0  # lines (done or not) that ended before the measured window
    end_epoch: float | None = None  # when the last logged transaction ended


def _counts_index_computed(latency_us: np.ndarray) -> np.ndarray:
    """HdrHistogram's counts-array index of each value (its _counts_index_for, vectorised)."""
    h = _TEMPLATE
    values = np.clip(latency_us, LOWEST_US, HIGHEST_US).astype(np.int64)
    # bit_length(v | mask) is 64 - clz: the float64's exponent field minus 1022, exact below 2**53.
    pow2_ceiling = ((values | h.sub_bucket_mask).astype(np.float64).view(np.int64) >> 52) - 1022
    bucket = pow2_ceiling - h.unit_magnitude - (h.sub_bucket_half_count_magnitude + 1)
    sub_bucket = values >> (bucket + h.unit_magnitude)
    index: np.ndarray = ((bucket + 1) << h.sub_bucket_half_count_magnitude) + (sub_bucket - h.sub_bucket_half_count)
    return index


# Latencies below this (us) find their index in a table (one gather instead of eight array passes);
# the rare longer ones are computed. 2**21 us is 2.1 s; int16 holds every index (counts_len < 2**15),
# 4 MiB, built in slices so that its int64 temporaries never add to the worker's peak memory.
TABLE_US = 1 << 21
_INDEX_TABLE = np.concatenate(
    [_counts_index_computed(np.arange(lo, lo + (1 << 16))).astype(np.int16) for lo in range(0, TABLE_US, 1 << 16)]
)


def counts_index(latency_us: np.ndarray) -> np.ndarray:
    """HdrHistogram's counts-array index of each value (its _counts_index_for, vectorised)."""
    index: np.ndarray = _INDEX_TABLE[np.clip(latency_us, 0, TABLE_US - 1)].astype(np.int64)
    long = latency_us >= TABLE_US
    if long.any():
        index[long] = _counts_index_computed(latency_us[long])
    return index


def histogram_of_counts(counts: np.ndarray) -> HdrHistogram:
    """A histogram holding these bucket counts (what record_value would have built, bucket for bucket)."""
    histogram = new_histogram()
    np.ctypeslib.as_array(histogram.counts)[:] = counts
    recorded = np.flatnonzero(counts)
    if len(recorded):
        histogram.set_internal_tacking_values(int(recorded[0]), int(recorded[-1]), int(counts.sum()))
    return histogram


# HdrHistogram's V2 wire format (hdrh.codec): a payload header, the counts as ZigZag LEB128 varints
# (a run of n zero counts as -n), zlib-compressed behind a compression header, then base64.
_V2_ENCODING_COOKIE = 0x1C849303 | 0x10
_V2_COMPRESSION_COOKIE = 0x1C849304 | 0x10
_LEB128_MAX_BYTES = 9  # the ninth byte carries a full 8 bits
# zlib's fastest level: 5x faster than hdrh's default (6) on a second's histogram, ~6% larger; any
# level decodes the same. A per-second series encodes one histogram per second of the run.
ZLIB_LEVEL = 1


def encode_counts(counts: np.ndarray, level: int = ZLIB_LEVEL) -> str:
    """The histogram holding these bucket counts, encoded without building it: at zlib's default level,
    byte for byte what encode(histogram_of_counts(counts)) gives; at any level, the same when decoded."""
    recorded = np.flatnonzero(counts)
    tokens = np.zeros(0, dtype=np.int64)
    if len(recorded):
        zeros_before = np.diff(recorded, prepend=-1) - 1
        # [-zeros, count] per recorded bucket, without the -0 of buckets that follow a recorded one
        pairs = np.stack([-zeros_before, counts[recorded].astype(np.int64)], axis=1).ravel()
        tokens = pairs[np.tile([False, True], len(recorded)) | (np.repeat(zeros_before, 2) != 0)]
    zigzag = ((tokens << 1) ^ (tokens >> 63)).view(np.uint64)
    widths = np.ones(len(zigzag), dtype=np.int64)
    for k in range(1, _LEB128_MAX_BYTES):
        widths += zigzag >= np.uint64(1 << (7 * k))
    ends = np.cumsum(widths)
    out = np.zeros(int(ends[-1]) if len(ends) else 0, dtype=np.uint8)
    starts = ends - widths
    for k in range(int(widths.max()) if len(widths) else 0):
        more = widths > k
        shifted = zigzag[more] >> np.uint64(7 * k)
        if k == _LEB128_MAX_BYTES - 1:
            out[starts[more] + k] = (shifted & np.uint64(0xFF)).astype(np.uint8)
        else:
            follow = np.where(widths[more] > k + 1, 0x80, 0).astype(np.uint64)
            out[starts[more] + k] = ((shifted & np.uint64(0x7F)) | follow).astype(np.uint8)
    h = _TEMPLATE
    header = struct.pack(
        ">IIIIQQd",
        _V2_ENCODING_COOKIE,
        len(out),
        0,
        h.significant_figures,
        h.lowest_trackable_value,
        h.highest_trackable_value,
        1.0,
    )
    compressed = zlib.compress(header + out.tobytes(), level)
    return base64.b64encode(struct.pack(">II", _V2_COMPRESSION_COOKIE, len(compressed)) + compressed).decode()


class _File:
    """One log file, parsed a block of whole lines at a time; `seen` is the last end second read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open("rb") as head:
            width = len(head.readline().split())
        if width < EPOCH_US + 1:
            raise ValueError(f"{path}: not a pgbench --log file (first line has {width} fields, expected 6 to 8)")
        names = [f"f{i}" for i in range(width)]
        wanted = [names[LATENCY], names[EPOCH_S], names[EPOCH_US]]
        # Blocks are cut here and handed to pyarrow whole: its own streaming reader reads ahead
        # without bound (the whole file in flight) when given a path.
        read_options = pacsv.ReadOptions(column_names=names, block_size=2 * BLOCK_BYTES, use_threads=False)
        convert_options = pacsv.ConvertOptions(
            include_columns=wanted, column_types={n: pa.int64() for n in wanted}, null_values=NOT_DONE
        )
        self.options = {
            "read_options": read_options,
            "parse_options": pacsv.ParseOptions(delimiter=" ", quote_char=False),
            "convert_options": convert_options,
        }
        # A line cut short (the tool killed mid-write) is skipped, as the line-by-line parser did. The
        # handler is a Python call per bad line and slows every block it is set on: only a block that
        # failed without it is parsed again with it.
        self.lenient = {
            **self.options,
            "parse_options": pacsv.ParseOptions(delimiter=" ", quote_char=False, invalid_row_handler=lambda _: "skip"),
        }
        self.file: BinaryIO | None = path.open("rb")
        self.rest = b""
        self.seen = -1

    def next_block(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(latency_us or -1 when not done, end second, end microsecond), or None at the end of the file."""
        while self.file is not None:
            chunk = self.file.read(BLOCK_BYTES)
            if chunk:
                cut = chunk.rfind(b"\n") + 1
                data, self.rest = self.rest + memoryview(chunk)[:cut], chunk[cut:]  # one copy, not two
            else:  # the end: a last line without its newline is parsed too
                data, self.rest = self.rest, b""
                self.file.close()
                self.file = None
            if not data:
                continue
            try:
                table = pacsv.read_csv(pa.py_buffer(data), **self.options)
            except pa.ArrowInvalid:
                try:
                    table = pacsv.read_csv(pa.py_buffer(data), **self.lenient)
                except pa.ArrowInvalid as error:
                    raise ValueError(f"{self.path}: unreadable pgbench --log line ({error})") from None
            if table.num_rows:
                latency = pc.fill_null(table.column(0), -1).to_numpy()
                return latency, table.column(1).to_numpy(), table.column(2).to_numpy()
        return None


class _Seconds:
    """Per-second buckets: open ones hold their rows' counts indices until every file is past them."""

    def __init__(self) -> None:
        self.open: dict[int, list[np.ndarray]] = {}
        self.failed: dict[int, int] = {}
        self.closed: dict[int, SecondBucket] = {}

    def add(self, second: np.ndarray, index: np.ndarray, not_done_second: np.ndarray) -> None:
        if len(second):
            order = np.argsort(second, kind="stable") if np.any(second[1:] < second[:-1]) else None
            if order is not None:
                second, index = second[order], index[order]
            cuts = np.flatnonzero(second[1:] != second[:-1]) + 1
            for start, part in zip(np.concatenate(([0], cuts)).tolist(), np.split(index, cuts)):
                self.open.setdefault(int(second[start]), []).append(part)
        for t, n in zip(*np.unique(not_done_second, return_counts=True)):
            self.failed[int(t)] = self.failed.get(int(t), 0) + int(n)
            self.open.setdefault(int(t), [])

    def close_before(self, watermark: float) -> None:
        for t in sorted(t for t in self.open if t < watermark):
            parts, failed = self.open.pop(t), self.failed.pop(t, 0)
            counts = np.bincount(np.concatenate(parts), minlength=_TEMPLATE.counts_len) if parts else None
            late = self.closed.get(t)
            if late is not None:  # a line out of time order: merge into what was encoded already
                previous = np.ctypeslib.as_array(decode(late.hist).counts).astype(np.int64)
                counts = previous if counts is None else counts + previous
                failed += late.failed
            if counts is None:
                counts = np.zeros(_TEMPLATE.counts_len, dtype=np.int64)
            self.closed[t] = SecondBucket(t=t, count=int(counts.sum()), failed=failed, hist=encode_counts(counts))


def first_start_epoch(paths: list[Path]) -> float | None:
    """When the run's first logged transaction began: the earliest start in each file's first block
    (each file is one pgbench thread, whose clients all start at once), or None for empty logs."""
    starts = []
    for path in paths:
        if path.stat().st_size == 0:
            continue
        block = _File(path).next_block()
        if block is not None:
            latency, second, micro = block
            done = latency >= 0
            if np.any(done):
                starts.append(int((second[done] * 1_000_000 + micro[done] - latency[done]).min()))
    return min(starts) / 1_000_000 if starts else None


def read_txlog(paths: list[Path], per_second: bool, since_epoch: float | None = None) -> TransactionLog:
    """The run's latency histogram, the failed/skipped count and (per_second) the per-second series.

    `since_epoch` starts the measured window (a warm-up left out): transactions that ended before it are
    only counted (warmup_transactions), and the series starts there."""
    files = [_File(p) for p in paths if p.stat().st_size > 0]
    since_us = None if since_epoch is None else round(since_epoch * 1_000_000)
    warmup = 0
    total = np.zeros(_TEMPLATE.counts_len, dtype=np.int64)
    seconds = _Seconds()
    not_done, start_us, end_us = 0, None, None
    while files:
        # Read from the file furthest behind, so all files move through time together.
        current = min(files, key=lambda f: f.seen)
        block = current.next_block()
        if block is None:
            files.remove(current)
        else:
            latency, second, micro = block
            ended_us = second * 1_000_000 + micro
            end_us = max(end_us or 0, int(ended_us.max()))
            current.seen = int(second.max())
            if since_us is not None and int(ended_us.min()) < since_us:
                measured = ended_us >= since_us
                warmup += len(measured) - int(np.count_nonzero(measured))
                latency, second, ended_us = latency[measured], second[measured], ended_us[measured]
            done = latency >= 0
            failed = len(latency) - int(np.count_nonzero(done))
            if failed:  # rare: most logs have no failed or skipped line at all
                latency, ended_us, done_second = latency[done], ended_us[done], second[done]
                not_done += failed
            else:
                done_second = second
            index = counts_index(latency)
            total += np.bincount(index, minlength=len(total))
            if len(index):
                first = int((ended_us - latency).min())
                start_us = first if start_us is None else min(start_us, first)
            if per_second:
                seconds.add(done_second, index, second[~done] if failed else second[:0])
        if per_second:
            seconds.close_before(min((f.seen for f in files), default=float("inf")))
    series = None
    if per_second and seconds.closed:
        buckets = [seconds.closed[t] for t in sorted(seconds.closed)]
        assert end_us is not None  # seconds were closed: rows were read
        start_epoch = start_us / 1_000_000 if start_us is not None else float(buckets[0].t)
        series = ShardSeries(
            start_epoch=max(start_epoch, since_epoch) if since_epoch is not None else start_epoch,
            end_epoch=end_us / 1_000_000,
            seconds=buckets,
        )
    return TransactionLog(
        histogram=histogram_of_counts(total),
        not_done=not_done,
        series=series,
        warmup_transactions=warmup,
        end_epoch=end_us / 1_000_000 if end_us is not None else None,
    )
