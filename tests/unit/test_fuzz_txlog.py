"""The compiled log scanner reads whatever a killed or hostile pgbench left: any bytes, lines cut or garbled,
seconds out of order. It never crashes, and what it counts is exactly what a plain Python reading of the
same lines counts, line for line (a line that is not a --log line is skipped, as a cut one always was)."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pgarena.tools.pgbench.txlog as txlog
from pgarena.analysis.latency import HIGHEST_US, LOWEST_US, encode, new_histogram
from pgarena.tools.pgbench.txlog import read_txlog
from tests.unit.test_txlog import START, assert_matches

# The same examples every run (derandomize): CI is green every time or fails on a real defect, never at random.
FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
DIGITS = re.compile(r"[0-9]+")


def counted(line: str) -> bool:
    """The scanner's rule for a --log line, spelled out: six or more space-separated fields, the first,
    second and fourth not empty, a latency of digits (or failed / skipped), an end second of at most 12
    digits and a microsecond of at most 9."""
    fields = line.rstrip("\n").split(" ")
    if len(fields) < 6 or not (fields[0] and fields[1] and fields[3]):
        return False
    latency, second, micro = fields[2], fields[4], fields[5]
    good_latency = (DIGITS.fullmatch(latency) and len(latency) <= 18) or (latency[:1] in ("f", "s"))
    return bool(good_latency and DIGITS.fullmatch(second) and len(second) <= 12 and DIGITS.fullmatch(micro) and len(micro) <= 9)


GOOD = st.builds(
    lambda c, n, lat, sec, us, extra: f"{c} {n} {lat} 0 {START + sec} {us}{extra}\n",
    st.integers(0, 999),
    st.integers(0, 10**9),
    st.one_of(st.integers(0, 2**40).map(str), st.sampled_from(["failed", "skipped"])),
    st.integers(-3, 40),  # seconds out of order, and gaps
    st.integers(0, 999_999),
    st.sampled_from(["", " 12", " 0 3"]),
)
BAD = st.one_of(
    st.text(alphabet="0123456789 fsa-\t\r.", max_size=60).map(lambda t: t.replace("\n", "") + "\n"),
    GOOD.map(lambda line: line.replace(" ", "  ", 1)),
    GOOD.map(lambda line: line[: len(line) // 2] + "\n"),
    GOOD.map(lambda line: " ".join([*line.split(" ")[:4], "9999999999999", *line.split(" ")[5:]])),  # 13 digits
)


@FUZZ
@given(
    lines=st.lists(st.one_of(GOOD, GOOD, GOOD, BAD), max_size=300),
    cut_last=st.booleans(),
    window_s=st.sampled_from([2, 64]),
    files=st.sampled_from([1, 1, 3]),
)
def test_any_log_is_counted_as_its_lines_say(tmp_path_factory, monkeypatch, lines, cut_last, window_s, files):  # noqa: PLR0913  # pytest fixtures and hypothesis strategies
    monkeypatch.setattr(txlog, "BLOCK_BYTES", 512)
    monkeypatch.setattr(txlog, "WINDOW_S", window_s)
    text = "".join(lines)
    if cut_last and text:
        text = text[:-1]  # the last line without its newline: still read
    # pgbench -j: the lines dealt out to thread files, read two at a time (_txlog.c's scan_two)
    texts = ["".join(text.splitlines(keepends=True)[i::files]) for i in range(files)]
    folder = tmp_path_factory.mktemp("fuzz")
    paths = [folder / f"pgbench_log.1{f'.{i}' if i else ''}" for i in range(files)]
    for path, part in zip(paths, texts):
        path.write_text(part)
    kept = [line for line in text.splitlines(keepends=True) if counted(line if line.endswith("\n") else line + "\n")]
    if not text:  # an empty log (pgbench killed at once): nothing to count
        log = read_txlog(paths, per_second=True)
        assert log.series is None and log.histogram.get_total_count() == 0 and log.not_done == 0
        return
    firsts = [part.split("\n", 1)[0].split() for part in texts if part]
    if any(len(first) < 6 or not (DIGITS.fullmatch(first[4]) and len(first[4]) <= 12) for first in firsts):
        with pytest.raises(ValueError, match="not a pgbench --log file"):  # refused whole, the file named
            read_txlog(paths, per_second=True)
        return
    log = read_txlog(paths, per_second=True)
    done = [line for line in kept if line.split(" ")[2].isdigit()]
    if done:
        assert_matches(log, [line if line.endswith("\n") else line + "\n" for line in kept])
    else:  # nothing done: no start to compare, the failures still counted second by second
        assert log.not_done == len(kept)
        seconds = sorted({int(line.split(" ")[4]) for line in kept})
        assert [b.t for b in log.series.seconds] == seconds if log.series else not seconds
    expected = new_histogram()
    for line in kept:
        latency = line.split(" ")[2]
        if latency.isdigit():
            expected.record_value(min(max(int(latency), LOWEST_US), HIGHEST_US))
    assert encode(log.histogram) == encode(expected)
