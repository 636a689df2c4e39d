"""pgbench --log -> histograms in one streaming pass, checked against recording every line one by one."""

import random
import zlib

import numpy as np
import pytest

import pgarena.tools.pgbench.txlog as txlog
from pgarena.analysis.latency import HIGHEST_US, LOWEST_US, decode, encode, new_histogram
from pgarena.tools.pgbench import _txlog
from pgarena.tools.pgbench.txlog import encode_counts, histogram_of_counts, read_txlog

START = 1_700_000_000


def log_lines(rng, seconds, per_second, clients=8, extra_fields=0, not_done=0.01):  # noqa: PLR0913  # a generated log's knobs, as keywords with defaults
    """pgbench --log lines in end-time order; `extra_fields` appends schedule lag / retries columns."""
    lines, numbers = [], [0] * clients
    for t in range(START, START + seconds):
        for micro in sorted(rng.randrange(1_000_000) for _ in range(per_second)):
            client = rng.randrange(clients)
            roll = rng.random()
            latency = "failed" if roll < not_done / 2 else "skipped" if roll < not_done else str(int(rng.lognormvariate(8, 1.2)))
            tail = "".join(f" {rng.randrange(100)}" for _ in range(extra_fields))
            lines.append(f"{client} {numbers[client]} {latency} 0 {t} {micro}{tail}\n")
            numbers[client] += 1
    return lines


def reference(lines):
    """What recording each line by hand gives: the whole-run histogram, not-done count, per-second buckets."""
    whole, not_done, per_second = new_histogram(), 0, {}
    start, end = None, None
    for line in lines:
        fields = line.rstrip("\n").split(" ")  # the scanner's separator: one space
        second, ended = int(fields[4]), int(fields[4]) * 1_000_000 + int(fields[5])
        h, counts = per_second.setdefault(second, (new_histogram(), [0, 0]))
        end = ended if end is None else max(end, ended)
        if fields[2].isdigit():
            value = min(max(int(fields[2]), LOWEST_US), HIGHEST_US)
            whole.record_value(value)
            h.record_value(value)
            counts[0] += 1
            start = ended - int(fields[2]) if start is None else min(start, ended - int(fields[2]))
        else:
            not_done += 1
            counts[1] += 1
    buckets = {t: (c[0], c[1], encode(h)) for t, (h, c) in per_second.items()}
    return encode(whole), not_done, buckets, start / 1e6, end / 1e6


def assert_matches(log, lines):
    whole, not_done, buckets, start, end = reference(lines)
    assert encode(log.histogram) == whole
    assert log.not_done == not_done
    assert log.series is not None
    assert log.series.start_epoch == pytest.approx(start, abs=1e-6)
    assert log.series.end_epoch == pytest.approx(end, abs=1e-6)
    got = {b.t: (b.count, b.failed, b.hist) for b in log.series.seconds}
    assert got.keys() == buckets.keys()
    for t, (count, failed, hist) in buckets.items():
        assert got[t][:2] == (count, failed)
        assert decode(got[t][2]).get_total_count() == count
        assert encode(decode(got[t][2])) == hist


def write(path, lines):
    path.write_text("".join(lines))
    return path


def test_every_magnitude_lands_in_hdrhistograms_bucket(tmp_path):
    # Given latencies around every power of two, and random ones, past the histogram's highest
    values = sorted(
        {v for k in range(36) for v in (2**k - 1, 2**k, 2**k + 1)} | {random.Random(3).randrange(0, 2**40) for _ in range(5000)}
    )
    lines = [f"0 {i} {v} 0 {START} {i % 1_000_000}\n" for i, v in enumerate(values)]
    log = read_txlog([write(tmp_path / "pgbench_log.1", lines)], per_second=True)
    # Then each is counted where record_value puts it (clamped into the histogram's range)
    expected = new_histogram()
    for v in values:
        expected.record_value(min(max(v, LOWEST_US), HIGHEST_US))
    assert list(log.histogram.counts) == list(expected.counts)
    assert encode(log.histogram) == encode(expected)


@pytest.mark.parametrize(
    "recorded",
    [{}, {0: 1}, {5: 1, 6: 1, 9: 3}, {1: 2**48}, {0: 1, 5: 2**40, 23551: 3}, "lognormal"],
    ids=["empty", "first-bucket", "runs-of-one", "largest-count", "last-bucket", "lognormal"],
)
def test_encode_counts_is_hdrhistograms_wire_format(recorded):
    # Given bucket counts: edge cases of the varint encoding, and a second of a realistic run
    counts = np.zeros(new_histogram().counts_len, dtype=np.int64)
    if recorded == "lognormal":
        h = new_histogram()
        for v in np.random.default_rng(4).lognormal(np.log(150_000), 1.5, 6000).astype(np.int64) + 1:
            h.record_value(int(v))
        counts = np.ctypeslib.as_array(h.counts).astype(np.int64)
    else:
        for index, count in recorded.items():
            counts[index] = count
    # Then at zlib's default level it is hdrh's encoding byte for byte, and at the fast level it decodes the same
    assert encode_counts(counts, level=zlib.Z_DEFAULT_COMPRESSION) == encode(histogram_of_counts(counts))
    fast = decode(encode_counts(counts))
    assert np.array_equal(np.ctypeslib.as_array(fast.counts), counts)
    assert fast.get_total_count() == counts.sum()


def test_one_pass_gives_the_run_histogram_and_the_per_second_series(tmp_path, monkeypatch):
    # Given a 20-second log read in small blocks, so seconds and lines straddle block boundaries
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 4096)
    lines = log_lines(random.Random(1), seconds=20, per_second=150)
    log = read_txlog([write(tmp_path / "pgbench_log.1", lines)], per_second=True)
    # Then every figure equals recording each line by hand
    assert_matches(log, lines)


def test_several_thread_files_are_merged_second_by_second(tmp_path, monkeypatch):
    # Given pgbench -j 3: one log file per thread, each in time order, interleaved in time
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 2048)
    rng = random.Random(2)
    files = [log_lines(rng, seconds=12, per_second=n) for n in (40, 90, 5)]
    paths = [write(tmp_path / f"pgbench_log.1.{i}", lines) for i, lines in enumerate(files)]
    log = read_txlog(paths, per_second=True)
    assert_matches(log, [line for lines in files for line in lines])


def test_a_line_out_of_time_order_is_merged_into_its_second(tmp_path, monkeypatch):
    # Given a line for second 2 that turns up after second 15 was logged (a clock step back)
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 1024)
    lines = log_lines(random.Random(5), seconds=16, per_second=30)
    late = f"0 999 12345 0 {START + 2} 500\n"
    lines.append(late)
    log = read_txlog([write(tmp_path / "pgbench_log.1", lines)], per_second=True)
    assert_matches(log, lines)


def test_rate_and_retry_columns_and_a_cut_last_line(tmp_path):
    # Given --rate and --max-tries columns, and a last line cut short by a killed pgbench
    lines = log_lines(random.Random(6), seconds=3, per_second=50, extra_fields=2)
    path = write(tmp_path / "pgbench_log.1", [*lines, "3 77 123"])
    log = read_txlog([path], per_second=True)
    assert_matches(log, lines)


def test_without_per_second_only_the_run_histogram_is_made(tmp_path):
    lines = log_lines(random.Random(7), seconds=4, per_second=60)
    log = read_txlog([write(tmp_path / "pgbench_log.1", lines)], per_second=False)
    assert log.series is None
    assert encode(log.histogram) == reference(lines)[0]


def test_empty_logs_give_no_series(tmp_path):
    log = read_txlog([write(tmp_path / "pgbench_log.1", [])], per_second=True)
    assert log.series is None and log.histogram.get_total_count() == 0 and log.not_done == 0


def test_a_file_that_is_not_a_pgbench_log_is_named(tmp_path):
    path = write(tmp_path / "pgbench_log.1", ["progress: 1.0 s, 10.0 tps\n"])
    with pytest.raises(ValueError, match=r"pgbench_log\.1.*not a pgbench --log file"):
        read_txlog([path], per_second=True)


@pytest.mark.parametrize("window_s", [64, 3])
def test_a_large_block_is_scanned_in_two_halves_with_the_same_result(tmp_path, monkeypatch, window_s):
    # Given a block past the scanner's two-halves threshold (2 MiB), with failed lines; with a ring of 3
    # seconds, either half stops at a second past the ring (the first half's stop drops the second's work)
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 12 << 20)
    monkeypatch.setattr(txlog, "WINDOW_S", window_s)
    lines = log_lines(random.Random(11), seconds=40, per_second=4000, clients=200)
    path = write(tmp_path / "pgbench_log.1", lines)
    assert path.stat().st_size > 4 << 20
    assert_matches(read_txlog([path], per_second=True), lines)


@pytest.mark.parametrize("window_s", [64, 3])
def test_thread_files_are_scanned_two_at_once_with_the_same_result(tmp_path, monkeypatch, window_s):
    # Given pgbench -j 3: two files large enough to be scanned at once, one per core (512 KiB blocks and
    # more), beside a small one; with a ring of 3 seconds each file stops on its own at a second past the
    # ring, its work kept
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 3 << 20)
    monkeypatch.setattr(txlog, "WINDOW_S", window_s)
    rng = random.Random(11)
    files = [log_lines(rng, seconds=40, per_second=n, clients=200) for n in (3000, 1500, 10)]
    paths = [write(tmp_path / f"pgbench_log.1.{i}", lines) for i, lines in enumerate(files)]
    assert_matches(read_txlog(paths, per_second=True), [line for lines in files for line in lines])
    log = read_txlog(paths, per_second=False)
    assert encode(log.histogram) == reference([line for lines in files for line in lines])[0]


def test_two_blocks_scanned_at_once_keep_their_files_stats_apart():
    # Given two files' blocks in one call: each file's stats are its own (its last second, its lines)
    first = "".join(f"0 {i} 100 0 {START + i} 5\n" for i in range(3))
    second = "".join(f"1 {i} failed 0 {START + 10 + i} 7\n" for i in range(2))
    total, stats, other_stats = txlog._counts(), txlog._new_stats(), txlog._new_stats()
    ours, theirs = _txlog.scan(
        first.encode(), txlog._LAYOUT, txlog._NO_WARMUP, 0, 1, None, None, total, stats, second.encode(), other_stats
    )
    assert ours == (len(first), -1) and theirs == (len(second), -1)
    assert (stats[txlog.MAX_SECOND], stats[txlog.NOT_DONE]) == (START + 2, 0)
    assert (other_stats[txlog.MAX_SECOND], other_stats[txlog.NOT_DONE]) == (START + 11, 2)
    assert sum(total) == 3
    # Memory the other scan writes at the same time is refused; so is half of the pair
    for shared in (stats, total[: len(stats)]):
        with pytest.raises(ValueError, match="other_stats: memory that stats, total, window or meta use too"):
            _txlog.scan(b"", txlog._LAYOUT, 0, 0, 1, None, None, total, stats, b"", shared)
    with pytest.raises(TypeError, match="both or neither"):
        _txlog.scan(b"", txlog._LAYOUT, 0, 0, 1, None, None, total, stats, b"")


@pytest.mark.parametrize("window_s", [64, 3])
def test_two_files_at_once_equal_one_after_the_other(window_s):
    # Given two files' blocks of over 512 KiB (scanned at once on two cores), with failed lines, warm-up
    # lines and, with a ring of 3 seconds, stops past it: ring, counts, stats and stops are those of
    # scanning them one after the other
    rng = random.Random(13)
    first = "".join(log_lines(rng, seconds=12, per_second=2000, clients=50)).encode()
    second = "".join(log_lines(rng, seconds=12, per_second=1800, clients=50)).encode()
    assert min(len(first), len(second)) > 512 << 10
    since_us = (START + 1) * 1_000_000

    def scanned(together):
        ring = txlog._Ring(base=START, total=txlog._counts())
        stats = (txlog._new_stats(), txlog._new_stats())
        args = (txlog._LAYOUT, since_us, START, window_s, ring.window, ring.meta, ring.total)
        if together:
            stops = _txlog.scan(first, *args, stats[0], second, stats[1])
        else:
            stops = (_txlog.scan(first, *args, stats[0]), _txlog.scan(second, *args, stats[1]))
        return stops, [list(s) for s in stats], bytes(ring.window), bytes(ring.meta), bytes(ring.total)

    one_after_the_other = scanned(False)
    assert scanned(True) == one_after_the_other
    stops = one_after_the_other[0]
    assert all(stop >= 0 for _, stop in stops) if window_s == 3 else stops == ((len(first), -1), (len(second), -1))


def test_seconds_further_apart_than_the_ring_are_read_in_turns(tmp_path, monkeypatch):
    # Given a ring of 4 seconds, a 10-second gap in one file, and another file 6 seconds behind it
    monkeypatch.setattr(txlog, "WINDOW_S", 4)
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 4096)
    rng = random.Random(12)
    early = log_lines(rng, seconds=8, per_second=40)
    shifted = [
        line.replace(f" {START + k} ", f" {START + k + 18} ") for line in early for k in range(8) if f" {START + k} " in line
    ]
    behind = [
        line.replace(f" {START + k} ", f" {START + k + 6} ") for line in early for k in range(8) if f" {START + k} " in line
    ]
    first = write(tmp_path / "pgbench_log.1", early + shifted)
    second = write(tmp_path / "pgbench_log.1.1", behind)
    assert_matches(read_txlog([first, second], per_second=True), early + shifted + behind)


def test_a_line_longer_than_a_block_is_refused_with_the_file_named(tmp_path, monkeypatch):
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 1024)
    path = write(tmp_path / "pgbench_log.7", [f"0 0 100 0 {START} 5\n", "9" * 5000 + "\n"])
    with pytest.raises(ValueError, match=r"pgbench_log\.7: a line longer than 1,024 bytes"):
        read_txlog([path], per_second=False)


LINE = f"0 0 100000000 0 {START} 5\n".encode()
COUNTS = new_histogram().counts_len


def _int64s(n):
    return memoryview(bytearray(8 * n)).cast("q")


@pytest.mark.parametrize(
    "call",
    [
        lambda: _txlog.scan(LINE, (*txlog._LAYOUT[:6], 16), 0, 0, 1, None, None, _int64s(16), txlog._new_stats()),
        lambda: _txlog.scan(LINE, (*txlog._LAYOUT[:6], -5), 0, 0, 1, None, None, _int64s(16), txlog._new_stats()),
        lambda: _txlog.scan(LINE, txlog._LAYOUT, 0, START, 2**62, _int64s(4), _int64s(4), txlog._counts(), txlog._new_stats()),
        lambda: _txlog.scan(
            LINE, txlog._LAYOUT, 0, 2**63 - 2, 4, _int64s(4 * COUNTS), _int64s(16), txlog._counts(), txlog._new_stats()
        ),
        lambda: _txlog.encode(_int64s(16), 2**61, 2**61 + 1, txlog._PAYLOAD_HEADER, 0, -1, True),
    ],
    ids=["layout-short-of-its-highest", "negative-counts-len", "window-size-wrapping", "ring-end-wrapping", "stop-wrapping"],
)
def test_arguments_that_would_reach_past_a_buffer_are_refused(call):
    # Given sizes whose product in bytes wraps round int64 (it passed the size check and the scanner wrote
    # or read far past the buffer), or a layout whose counts index runs past counts_len
    # Then the scanner refuses them before touching a count
    with pytest.raises(ValueError):
        call()


def _with_scripts(rng, lines, scripts):
    """The lines with a script number drawn for each (a weighted mix's fourth field), and one past the mix."""
    out = []
    for line in lines:
        fields = line.split(" ")
        fields[3] = str(rng.randrange(scripts + 1) if rng.random() < 0.01 else rng.randrange(scripts))
        out.append(" ".join(fields))
    return out


def _script_reference(lines, scripts, since_us):
    histograms, not_done = [new_histogram() for _ in range(scripts)], [0] * scripts
    for line in lines:
        fields = line.rstrip("\n").split(" ")
        script, ended = int(fields[3]), int(fields[4]) * 1_000_000 + int(fields[5])
        if script >= scripts or ended < since_us:
            continue
        if fields[2].isdigit():
            histograms[script].record_value(min(max(int(fields[2]), LOWEST_US), HIGHEST_US))
        else:
            not_done[script] += 1
    return [encode(h) for h in histograms], not_done


@pytest.mark.parametrize("per_second", [True, False])
@pytest.mark.parametrize("warmup_s", [0, 4])
def test_each_scripts_transactions_are_counted_apart_in_the_window(tmp_path, monkeypatch, per_second, warmup_s):
    # Given two thread files of a six-script mix (and a few lines of a script past it), a line out of time
    # order, read in blocks small enough that lines are handed back and merged late
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 2048)
    rng = random.Random(8)
    files = [_with_scripts(rng, log_lines(rng, seconds=10, per_second=n), scripts=6) for n in (60, 25)]
    files[0].append(f"0 999 4321 2 {START + 1} 700\n")
    paths = [write(tmp_path / f"pgbench_log.1.{i}", lines) for i, lines in enumerate(files)]
    since = START + warmup_s if warmup_s else None
    # When the log is read with its six scripts counted apart
    log = read_txlog(paths, per_second=per_second, since_epoch=since, scripts=6)
    # Then each script's histogram and not-done lines are its own lines' in the window, and the run's are unchanged
    histograms, not_done = _script_reference([line for lines in files for line in lines], 6, (since or 0) * 1_000_000)
    assert log.scripts is not None
    assert [encode(s.histogram) for s in log.scripts] == histograms
    assert [s.not_done for s in log.scripts] == not_done
    whole = read_txlog(paths, per_second=per_second, since_epoch=since)
    assert encode(log.histogram) == encode(whole.histogram)
    assert whole.scripts is None
