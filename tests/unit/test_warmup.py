"""Warm-up: a run's first warmup_s seconds are left out of every figure, cut once from the transaction log."""

import random

import pytest

from pgarena.analysis.latency import encode, new_histogram
from pgarena.analysis.warmup import measured_progress, window_tps
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.results import ProgressSample
from pgarena.planning.campaign import parse_campaign
from pgarena.tools.pgbench.txlog import first_start_epoch, read_txlog
from tests.unit.test_txlog import START, log_lines, write


def matrix(**run):
    run = {"clients": 2, "duration_s": 10, **run}
    return {
        "campaign": "w",
        "targets": [{"name": "a", "provider": "embedded", "embedded": {}}],
        "workloads": [{"name": "tpcb", "tool": "pgbench", "run": {k: v for k, v in run.items() if v is not None}}],
    }


def test_transactions_ending_before_the_window_are_counted_apart_not_measured(tmp_path):
    # Given 6 seconds of logged transactions, and a window starting 2 s after the first began
    lines = log_lines(random.Random(7), seconds=6, per_second=300, not_done=0.02)
    path = write(tmp_path / "pgbench_log.1", lines)
    start = first_start_epoch([path])
    since = start + 2
    # When the log is read from there
    log = read_txlog([path], per_second=True, since_epoch=since)
    # Then the histogram, the not-done count and the series hold exactly the lines that ended in the window
    kept = [line for line in lines if int(line.split()[4]) * 1_000_000 + int(line.split()[5]) >= round(since * 1e6)]
    expected = new_histogram()
    for line in kept:
        if line.split()[2].isdigit():
            expected.record_value(max(1, int(line.split()[2])))
    assert encode(log.histogram) == encode(expected)
    assert log.not_done == sum(1 for line in kept if not line.split()[2].isdigit())
    assert 0 < log.skipped == sum(1 for line in kept if line.split()[2] == "skipped") < log.not_done
    assert log.warmup_transactions == len(lines) - len(kept) > 0
    assert log.series is not None and log.series.start_epoch == pytest.approx(since)
    assert min(b.t for b in log.series.seconds) >= int(since)
    assert sum(b.count + b.failed for b in log.series.seconds) == len(kept)


def test_the_window_starts_at_the_earliest_transaction_start_of_every_file(tmp_path):
    # Given two threads' logs, the second's first transaction starting 0.5 s earlier than the first's
    a = write(tmp_path / "pgbench_log.1", [f"0 0 1000 0 {START + 1} 0\n", f"0 1 1000 0 {START + 1} 500000\n"])
    b = write(tmp_path / "pgbench_log.1.1", [f"1 0 1500000 0 {START + 1} 0\n"])
    # When the run's start is read / Then it is the earliest start: the second file's, 1.5 s before its end
    assert first_start_epoch([a, b]) == pytest.approx(START - 0.5)
    assert first_start_epoch([write(tmp_path / "empty", [])]) is None


def test_without_a_warmup_nothing_is_left_out(tmp_path):
    # Given a log / When read without a window / Then every line is measured, as before
    lines = log_lines(random.Random(3), seconds=3, per_second=100)
    log = read_txlog([write(tmp_path / "pgbench_log.1", lines)], per_second=False)
    assert log.warmup_transactions == 0
    assert log.histogram.get_total_count() + log.not_done == len(lines)


def test_progress_keeps_the_intervals_wholly_after_the_warmup():
    # Given 1 s progress intervals over 6 s and a 2 s warm-up
    progress = [ProgressSample(elapsed_s=float(t), tps=100.0 * t) for t in range(1, 7)]
    # When the window is applied / Then the intervals (2, 3] onwards are kept, with their own times
    assert [p.elapsed_s for p in measured_progress(progress, 2, 1)] == [3.0, 4.0, 5.0, 6.0]
    # And a 5 s interval straddling the warm-up's end is dropped whole
    coarse = [ProgressSample(elapsed_s=5.0, tps=1.0), ProgressSample(elapsed_s=10.0, tps=2.0)]
    assert [p.elapsed_s for p in measured_progress(coarse, 3, 5)] == [10.0]
    assert measured_progress(progress, 0, 1) == progress


def test_window_tps_is_transactions_per_second_of_the_window():
    assert window_tps(800, 100.0, 108.0) == 100.0
    assert window_tps(0, 100.0, 108.0) is None
    assert window_tps(5, 100.0, 100.0) is None


def test_a_warmup_as_long_as_the_run_is_refused_naming_both_fields():
    # Given a 10 s run with a 10 s warm-up / When validated / Then the refusal says what to change
    with pytest.raises(MatrixError) as caught:
        parse_campaign(matrix(warmup_s=10))
    (problem,) = caught.value.problems
    assert problem.path == "$.workloads[0].run"
    assert "warmup_s (10) must be shorter than duration_s (10)" in problem.message


@pytest.mark.parametrize(
    ("run", "says"),
    [
        ({"percentiles": False, "warmup_s": 2}, "warmup_s needs 'percentiles': true"),
        ({"duration_s": None, "transactions": 100, "warmup_s": 2}, "warmup_s needs 'duration_s' (-T)"),
        ({"warmup_s": -1}, "greater than or equal to 0"),
    ],
)
def test_a_warmup_the_run_cannot_cut_is_refused(run, says):
    with pytest.raises(MatrixError) as caught:
        parse_campaign(matrix(**run))
    assert says in str(caught.value)


def test_a_warmup_shorter_than_the_run_validates():
    campaign = parse_campaign(matrix(warmup_s=3))
    assert campaign.workloads[0].run.warmup_s == 3
