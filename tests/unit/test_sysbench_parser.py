"""The sysbench parser against real sysbench 1.0.20 captures and hand-made 0.5 outputs.

Every expected number below was copied from the fixture file it is checked
against: the parser must return exactly what sysbench printed.
"""

from pathlib import Path

import pytest

from pgarena.tools.sysbench.parser import (
    SysbenchHistogramBucket,
    SysbenchInterval,
    SysbenchPrepareLog,
    SysbenchReport,
    SysbenchSummary,
    parse_sysbench,
)

SYSBENCH_FIXTURES = Path(__file__).parents[1] / "fixtures" / "sysbench"


def parse_fixture(name: str) -> SysbenchReport:
    return parse_sysbench((SYSBENCH_FIXTURES / name).read_text())


def summary(**printed: object) -> dict[str, object]:
    # Fields the fixture does not print must come back as None, not a default.
    return {field: None for field in SysbenchSummary.model_fields} | printed


def sb10(**printed: object) -> dict[str, object]:
    # Header lines every 1.0.20 run capture here prints alike.
    return summary(**({"sysbench_version": "1.0.20", "threads": 4, "report_interval_s": 1.0, "percentile": 95.0} | printed))


def stats(  # noqa: PLR0913  # one parameter per figure of sysbench's report
    read: int, write: int, other: int, total: int, transactions: int, tps: float, qps: float, ignored: int, ignored_per_s: float
) -> dict[str, object]:
    # The "SQL statistics:" block; every 1.0 capture here printed "reconnects: 0 (0.00 per sec.)".
    return {
        "queries_read": read,
        "queries_write": write,
        "queries_other": other,
        "queries_total": total,
        "transactions": transactions,
        "tps": tps,
        "queries": total,
        "qps": qps,
        "ignored_errors": ignored,
        "ignored_errors_per_s": ignored_per_s,
        "reconnects": 0,
        "reconnects_per_s": 0.0,
    }


def general(  # noqa: PLR0913  # one parameter per figure of sysbench's report
    time_s: float,
    events: int,
    lat_min: float,
    lat_avg: float,
    lat_max: float,
    lat_pct: float | None,
    lat_sum: float,
    events_avg: float,
    events_stddev: float,
    exec_avg: float,
    exec_stddev: float,
) -> dict[str, object]:
    # "General statistics:", "Latency (ms):" and "Threads fairness:" blocks.
    return {
        "total_time_s": time_s,
        "total_events": events,
        "latency_min_ms": lat_min,
        "latency_avg_ms": lat_avg,
        "latency_max_ms": lat_max,
        "latency_pct_ms": lat_pct,
        "latency_sum_ms": lat_sum,
        "events_avg": events_avg,
        "events_stddev": events_stddev,
        "exec_time_avg_s": exec_avg,
        "exec_time_stddev_s": exec_stddev,
    }


def i10(  # noqa: PLR0913  # one parameter per figure of sysbench's report
    elapsed: float,
    tps: float,
    qps: float,
    r: float,
    w: float,
    o: float,
    lat: float | None,
    err: float,
    threads: int = 4,
    pct: float = 95.0,
    **extra: object,
) -> SysbenchInterval:
    return SysbenchInterval(
        elapsed_s=elapsed,
        threads=threads,
        tps=tps,
        qps=qps,
        read_qps=r,
        write_qps=w,
        other_qps=o,
        latency_pct_ms=lat,
        percentile=pct,
        err_per_s=err,
        reconn_per_s=0.0,
        **extra,
    )


EXPECTED_SUMMARIES = {
    "run_oltp_read_write_t4_T5_i1.txt": sb10(
        **stats(19152, 5356, 2785, 27293, 1337, 244.70, 4995.15, 31, 5.67),
        **general(5.4631, 1337, 0.89, 16.31, 1012.42, 10.84, 21811.83, 334.2500, 33.41, 5.4530, 0.00),
    ),
    "run_oltp_read_only_t4_T5_i1.txt": sb10(
        **stats(147742, 0, 21106, 168848, 10553, 2105.04, 33680.64, 0, 0.00),
        **general(5.0080, 10553, 0.59, 1.89, 15.14, 5.00, 19995.32, 2638.2500, 54.64, 4.9988, 0.00),
    ),
    "run_oltp_write_only_t4_T5_i1.txt": sb10(
        **stats(0, 5604, 3109, 8713, 1407, 280.07, 1734.37, 69, 13.73),
        **general(5.0228, 1407, 0.34, 14.25, 1015.79, 10.84, 20055.74, 351.7500, 14.79, 5.0139, 0.00),
    ),
    "run_oltp_point_select_t4_T5_i1.txt": sb10(
        **stats(269821, 0, 0, 269821, 269821, 53851.04, 53851.04, 0, 0.00),
        **general(5.0097, 269821, 0.02, 0.07, 9.26, 0.13, 19916.23, 67455.2500, 3887.27, 4.9791, 0.00),
    ),
    "run_oltp_insert_t4_T5_i1.txt": sb10(
        **stats(0, 31843, 0, 31843, 31843, 6357.23, 6357.23, 0, 0.00),
        **general(5.0080, 31843, 0.18, 0.62, 12.19, 0.99, 19897.15, 7960.7500, 65.53, 4.9743, 0.00),
    ),
    "run_oltp_update_index_t4_T5_i1.txt": sb10(
        **stats(0, 29341, 0, 29341, 29341, 5850.24, 5850.24, 0, 0.00),
        **general(5.0146, 29341, 0.13, 0.68, 15.78, 1.86, 19995.09, 7335.2500, 39.44, 4.9988, 0.00),
    ),
    "run_oltp_read_write_histogram_t4_T5_i1.txt": sb10(
        **stats(30128, 8416, 4400, 42944, 2107, 419.96, 8559.41, 45, 8.97),
        **general(5.0164, 2107, 0.95, 9.50, 1015.15, 15.00, 20011.53, 526.7500, 48.29, 5.0029, 0.00),
    ),
    "run_oltp_read_write_percentile99_t4_T5_i1.txt": sb10(
        percentile=99.0,
        **stats(8764, 2447, 1280, 12491, 614, 122.23, 2486.54, 12, 2.39),
        **general(5.0226, 614, 1.14, 32.64, 1022.83, 1013.60, 20039.88, 153.5000, 6.26, 5.0100, 0.01),
    ),
    # "percentile stats: disabled": no percentile, no percentile latency.
    "run_oltp_point_select_percentile0_t2_T2_i1.txt": sb10(
        threads=2,
        percentile=None,
        **stats(167861, 0, 0, 167861, 167861, 83718.60, 83718.60, 0, 0.00),
        **general(2.0042, 167861, 0.02, 0.02, 3.38, None, 3989.16, 83930.5000, 6173.50, 1.9946, 0.00),
    ),
    "run_oltp_point_select_rate200_t2_T3_i1.txt": sb10(
        threads=2,
        target_rate_per_s=200.0,
        **stats(591, 0, 0, 591, 591, 196.58, 196.58, 0, 0.00),
        **general(3.0054, 591, 0.05, 0.28, 1.85, 0.45, 167.13, 295.5000, 1.50, 0.0836, 0.00),
    ),
    "run_write_heavy_cloudsql_t4_T5_i1.txt": sb10(
        forced_shutdown_at_s=5.0,
        unfinished_transactions=4,
        **stats(0, 13573, 9, 13582, 3394, 678.20, 2713.98, 1, 0.20),
        **general(5.0020, 3394, 0.70, 5.89, 41.79, 18.61, 19979.96, 849.5000, 30.00, 4.9950, 0.01),
    ),
    "run_write_heavy_cloudsql_forced_shutdown1_t4_T3_i1.txt": sb10(
        forced_shutdown_at_s=4.0,
        **stats(0, 15062, 6, 15068, 3764, 1247.83, 4995.31, 4, 1.33),
        **general(3.0155, 3764, 0.63, 3.19, 26.62, 8.13, 12004.15, 941.0000, 28.67, 3.0010, 0.01),
    ),
    "sb05_handmade_oltp_write_heavy_t8_T30_i10.txt": summary(
        sysbench_version="0.5",
        threads=8,
        report_interval_s=10.0,
        queries_read=0,
        queries_write=120000,
        queries_other=60000,
        queries_total=180000,
        transactions=30000,
        tps=999.67,
        read_write_requests=120000,
        read_write_requests_per_s=3998.67,
        other_operations=60000,
        other_operations_per_s=1999.33,
        ignored_errors=3,
        ignored_errors_per_s=0.10,
        reconnects=0,
        reconnects_per_s=0.00,
        total_time_s=30.0100,
        total_events=30000,
        event_execution_time_s=239.8412,
        latency_min_ms=1.52,
        latency_avg_ms=7.99,
        latency_max_ms=182.35,
        latency_pct_ms=13.78,
        percentile=95.0,
        events_avg=3750.0000,
        events_stddev=21.48,
        exec_time_avg_s=29.9802,
        exec_time_stddev_s=0.00,
    ),
}

# (number of points, first point, last point)
EXPECTED_INTERVALS = {
    "run_oltp_read_write_t4_T5_i1.txt": (
        5,
        i10(1, 16.96, 423.92, 307.22, 75.81, 40.90, 10.27, 1.00),
        i10(5, 267.97, 5428.40, 3807.58, 1065.88, 554.94, 10.84, 4.00),
    ),
    "run_oltp_read_only_t4_T5_i1.txt": (
        5,
        i10(1, 2163.21, 34638.39, 30308.97, 0.00, 4329.42, 3.96, 0.00),
        i10(5, 2109.05, 33731.85, 29514.74, 0.00, 4217.11, 5.09, 0.00),
    ),
    "run_oltp_write_only_t4_T5_i1.txt": (
        5,
        i10(1, 251.69, 1580.05, 0.00, 1006.76, 573.29, 12.08, 14.98),
        i10(5, 11.00, 67.00, 0.00, 40.00, 27.00, 8.90, 2.00),
    ),
    "run_oltp_point_select_t4_T5_i1.txt": (
        5,
        i10(1, 53106.19, 53106.19, 53106.19, 0.00, 0.00, 0.11, 0.00),
        i10(5, 63951.58, 63951.58, 63951.58, 0.00, 0.00, 0.09, 0.00),
    ),
    "run_oltp_insert_t4_T5_i1.txt": (
        5,
        i10(1, 7762.00, 7762.00, 0.00, 7762.00, 0.00, 0.75, 0.00),
        i10(5, 5411.70, 5411.70, 0.00, 5411.70, 0.00, 1.25, 0.00),
    ),
    "run_oltp_update_index_t4_T5_i1.txt": (
        5,
        i10(1, 7104.91, 7104.91, 0.00, 7104.91, 0.00, 0.87, 0.00),
        i10(5, 6541.18, 6541.18, 0.00, 6541.18, 0.00, 1.39, 0.00),
    ),
    "run_oltp_read_write_histogram_t4_T5_i1.txt": (
        5,
        i10(1, 119.82, 2476.21, 1747.32, 476.27, 252.61, 13.46, 1.00),
        i10(5, 714.37, 14465.70, 10141.63, 2843.52, 1480.55, 15.55, 11.96),
    ),
    "run_oltp_read_write_percentile99_t4_T5_i1.txt": (
        5,
        i10(1, 20.97, 485.29, 349.49, 88.87, 46.93, 18.61, 0.00, pct=99.0),
        i10(5, 14.00, 300.94, 209.96, 60.99, 29.99, 1013.60, 1.00, pct=99.0),
    ),
    # A 2 s run with 1 s intervals printed a single interval line.
    "run_oltp_point_select_percentile0_t2_T2_i1.txt": (
        1,
        i10(1, 79901.10, 79901.10, 79901.10, 0.00, 0.00, None, 0.00, threads=2, pct=0.0),
        i10(1, 79901.10, 79901.10, 79901.10, 0.00, 0.00, None, 0.00, threads=2, pct=0.0),
    ),
    "run_oltp_point_select_rate200_t2_T3_i1.txt": (
        3,
        i10(1, 177.74, 177.74, 177.74, 0.00, 0.00, 0.59, 0.00, threads=2, queue_length=0, concurrency=0),
        i10(3, 221.00, 221.00, 221.00, 0.00, 0.00, 0.39, 0.00, threads=2, queue_length=0, concurrency=0),
    ),
    # The interval cut by the forced shutdown prints a 0.00 percentile latency.
    "run_write_heavy_cloudsql_t4_T5_i1.txt": (
        5,
        i10(1, 766.61, 3073.42, 0.00, 3070.42, 2.99, 12.75, 0.00),
        i10(5, 568.61, 2269.44, 0.00, 2268.44, 1.00, 0.00, 0.00),
    ),
    "run_write_heavy_cloudsql_forced_shutdown1_t4_T3_i1.txt": (
        3,
        i10(1, 827.51, 3315.02, 0.00, 3314.02, 1.00, 15.27, 1.00),
        i10(3, 1501.86, 6020.42, 0.00, 6016.42, 4.00, 4.33, 3.00),
    ),
    "error_run_backends_terminated_t2_T5_i1.txt": (
        2,
        i10(1, 381.46, 7721.06, 5410.33, 1529.83, 780.89, 11.45, 3.99, threads=2),
        i10(2, 348.07, 6972.44, 4884.01, 1379.28, 709.15, 11.65, 1.00, threads=2),
    ),
    "sb05_handmade_oltp_write_heavy_t8_T30_i10.txt": (
        3,
        SysbenchInterval(
            elapsed_s=10,
            threads=8,
            tps=1003.21,
            read_qps=0.00,
            write_qps=4012.84,
            latency_pct_ms=13.52,
            percentile=95,
            err_per_s=0.10,
            reconn_per_s=0.00,
        ),
        SysbenchInterval(
            elapsed_s=30,
            threads=8,
            tps=997.39,
            read_qps=0.00,
            write_qps=3989.56,
            latency_pct_ms=13.85,
            percentile=95,
            err_per_s=0.00,
            reconn_per_s=0.00,
        ),
    ),
}

EXPECTED_PREPARE = {
    "prepare_oltp_read_write_tables2_size1000.txt": SysbenchPrepareLog(
        tables_created=["sbtest1", "sbtest2"],
        rows_announced={"sbtest1": 1000, "sbtest2": 1000},
        secondary_indexes=["sbtest1", "sbtest2"],
    ),
    # Backend terminated during the bulk insert: the load was announced, never confirmed by an index line.
    "error_prepare_backend_terminated_tables1_size300000.txt": SysbenchPrepareLog(
        tables_created=["sbtest1"],
        rows_announced={"sbtest1": 300000},
        secondary_indexes=[],
    ),
    "sb05_handmade_prepare_tables2.txt": SysbenchPrepareLog(
        tables_created=["sbtest1", "sbtest2"],
        rows_announced={"sbtest1": 450000, "sbtest2": 450000},
        secondary_indexes=["sbtest1", "sbtest2"],
    ),
}

CONNECTION_REFUSED = (
    'FATAL: Connection to database failed: connection to server at "127.0.0.1", port 1 failed: Connection refused'
)
THREAD_INIT_FAILED = "FATAL: `thread_init' function failed: /usr/share/sysbench/oltp_common.lua:349: connection creation failed"
BAD_HOST = (
    'FATAL: Connection to database failed: could not translate host name "no-such-host.invalid" to address: '
    "Name or service not known"
)
PREPARE_CONNECT_FAILED = (
    "FATAL: `sysbench.cmdline.call_command' function failed: /usr/share/sysbench/oltp_common.lua:83: connection creation failed"
)

# Everything the tests here check by name, beyond the tables above.
OTHER_FIXTURES = {
    "cleanup_oltp_read_write_tables2.txt",
    "error_run_missing_tables.txt",
    "error_run_connection_refused.txt",
    "error_run_bad_host.txt",
    "error_prepare_no_password.txt",
    "error_prepare_password_failed.txt",
}

CLEAN_RUNS = [name for name in EXPECTED_SUMMARIES if "cloudsql_t4_T5" not in name]


def test_every_fixture_file_is_covered():
    # Given the fixture folder
    on_disk = {path.name for path in SYSBENCH_FIXTURES.glob("*.txt")}
    # When the names the tests check are collected
    covered = set(EXPECTED_SUMMARIES) | set(EXPECTED_INTERVALS) | set(EXPECTED_PREPARE) | OTHER_FIXTURES
    # Then no capture sits unchecked
    assert on_disk == covered


@pytest.mark.parametrize("name", sorted(EXPECTED_SUMMARIES))
def test_summary_equals_printed_values(name):
    # Given a run output that reached its report
    # When it is parsed
    report = parse_fixture(name)
    # Then every summary field is the printed value, and None where nothing was printed
    assert report.summary is not None
    assert report.summary.model_dump() == EXPECTED_SUMMARIES[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_INTERVALS))
def test_interval_series_length_and_endpoints(name):
    # Given a run output with --report-interval lines
    count, first, last = EXPECTED_INTERVALS[name]
    # When it is parsed
    intervals = parse_fixture(name).intervals
    # Then the series has one point per printed line, first and last as printed
    assert len(intervals) == count
    assert (intervals[0], intervals[-1]) == (first, last)


def test_interval_elapsed_seconds_run_one_by_one():
    # Given a 5 s run reporting every second
    # When it is parsed
    intervals = parse_fixture("run_oltp_read_write_t4_T5_i1.txt").intervals
    # Then the points are the printed seconds, in order
    assert [p.elapsed_s for p in intervals] == [1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("name", sorted(EXPECTED_PREPARE))
def test_prepare_progress_lines(name):
    # Given a prepare output, complete or cut short
    # When it is parsed
    report = parse_fixture(name)
    # Then tables, announced row counts and indexes are the printed ones
    assert report.prepare == EXPECTED_PREPARE[name]


def test_prepare_output_has_only_the_version_in_its_summary():
    # Given a prepare output
    # When it is parsed
    report = parse_fixture("prepare_oltp_read_write_tables2_size1000.txt")
    # Then nothing is mistaken for run statistics or intervals
    assert report.summary == SysbenchSummary(sysbench_version="1.0.20")
    assert (report.intervals, report.errors, report.finished) == ([], [], False)


def test_cleanup_lists_dropped_tables():
    # Given a cleanup output
    # When it is parsed
    report = parse_fixture("cleanup_oltp_read_write_tables2.txt")
    # Then the dropped tables are listed in printed order, and nothing else
    assert report.dropped_tables == ["sbtest1", "sbtest2"]
    assert (report.prepare, report.errors) == (None, [])


def test_histogram_rows_as_printed():
    # Given a --histogram run
    # When it is parsed
    histogram = parse_fixture("run_oltp_read_write_histogram_t4_T5_i1.txt").histogram
    # Then there is one bucket per printed row, first and last as printed
    assert len(histogram) == 173
    assert histogram[0] == SysbenchHistogramBucket(value_ms=0.954, count=1)
    assert histogram[-1] == SysbenchHistogramBucket(value_ms=1013.597, count=6)


def test_histogram_counts_add_up_to_the_events():
    # Given a --histogram run, which prints "total number of events: 2107"
    # When it is parsed
    report = parse_fixture("run_oltp_read_write_histogram_t4_T5_i1.txt")
    # Then the buckets hold every event once
    assert report.summary is not None
    assert sum(b.count for b in report.histogram) == report.summary.total_events == 2107


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED_SUMMARIES if "histogram" not in n))
def test_runs_without_histogram_flag_have_no_buckets(name):
    # Given a run without --histogram
    # When it is parsed
    report = parse_fixture(name)
    # Then no bucket is made up
    assert report.histogram == []


@pytest.mark.parametrize("name", sorted(CLEAN_RUNS))
def test_clean_runs_report_no_errors_and_finish(name):
    # Given a run that finished normally
    # When it is parsed
    report = parse_fixture(name)
    # Then there are no errors, no forced shutdown, and the closing block was printed
    assert (report.errors, report.forced_shutdown, report.finished) == ([], False, True)


def test_forced_shutdown_is_flagged_and_kept_as_error():
    # Given the study's bare --forced-shutdown at --time=5 (5% of 5 s: shut down at the limit)
    # When it is parsed
    report = parse_fixture("run_write_heavy_cloudsql_t4_T5_i1.txt")
    # Then the shutdown is flagged, its FATAL line kept, and the report still read
    assert report.forced_shutdown is True
    assert report.errors == ["FATAL: The --max-time limit has expired, forcing shutdown..."]
    assert report.finished is True


def test_disabled_percentile_gives_no_interval_latency():
    # Given --percentile=0, which still prints "lat (ms,0%): 0.00"
    # When it is parsed
    interval = parse_fixture("run_oltp_point_select_percentile0_t2_T2_i1.txt").intervals[0]
    # Then the percentile is the printed 0 and the meaningless latency is None
    assert (interval.percentile, interval.latency_pct_ms) == (0.0, None)


def test_missing_tables_keeps_error_without_repeat_marker():
    # Given a run against a database with no sbtest tables (sysbench then segfaulted, exit 139)
    # When it is parsed
    report = parse_fixture("error_run_missing_tables.txt")
    # Then the prepare failure is the only error, "(last message repeated 1 times)" is not one,
    # and the run is not finished
    assert report.errors == ['FATAL: PQprepare() failed: ERROR:  relation "sbtest1" does not exist']
    assert (report.intervals, report.finished) == ([], False)


def test_missing_tables_summary_has_header_only():
    # Given the same failed run
    # When it is parsed
    report = parse_fixture("error_run_missing_tables.txt")
    # Then only the header lines made it into the summary
    assert report.summary is not None
    assert report.summary.model_dump(exclude_none=True) == {
        "sysbench_version": "1.0.20",
        "threads": 2,
        "report_interval_s": 1.0,
    }


def test_connection_refused_keeps_every_fatal_line():
    # Given 4 threads that each failed to connect to a closed port
    # When the output is parsed
    report = parse_fixture("error_run_connection_refused.txt")
    # Then each thread's two FATAL lines are kept in order, then the final one; libpq's hint is not
    assert report.errors == [CONNECTION_REFUSED, THREAD_INIT_FAILED] * 4 + ["FATAL: Thread initialization failed!"]
    assert report.finished is False


def test_bad_host_yields_dns_error():
    # Given sysbench pointed at a host name that does not resolve
    # When its output is parsed
    report = parse_fixture("error_run_bad_host.txt")
    # Then the resolver error comes first
    assert report.errors[0] == BAD_HOST


def test_missing_password_error():
    # Given a prepare against a scram-sha-256 server with no PGPASSWORD
    # When its output is parsed
    report = parse_fixture("error_prepare_no_password.txt")
    # Then libpq's message and sysbench's follow-up are the errors
    assert report.errors == [
        'FATAL: Connection to database failed: connection to server at "127.0.0.1", port 55432 failed: '
        "fe_sendauth: no password supplied",
        PREPARE_CONNECT_FAILED,
    ]


def test_wrong_password_error():
    # Given a prepare with a wrong PGPASSWORD
    # When its output is parsed
    report = parse_fixture("error_prepare_password_failed.txt")
    # Then the server's authentication failure comes first
    assert report.errors[0] == (
        'FATAL: Connection to database failed: connection to server at "127.0.0.1", port 55432 failed: '
        'FATAL:  password authentication failed for user "postgres"'
    )


def test_terminated_backends_leave_intervals_but_no_statistics():
    # Given a run whose backends were terminated mid-run (sysbench segfaulted and printed nothing more)
    # When it is parsed
    report = parse_fixture("error_run_backends_terminated_t2_T5_i1.txt")
    # Then the intervals before the crash survive, with no error line and no end-of-run statistics
    assert report.summary is not None
    assert (report.summary.transactions, report.summary.total_events) == (None, None)
    assert (report.errors, report.finished) == ([], False)


@pytest.mark.parametrize(
    "line",
    [
        # libpq and server messages of the managed-services study, as libpq words them
        "FATAL: Connection to database failed: server closed the connection unexpectedly",
        'FATAL: Connection to database failed: connection to server at "10.0.0.5", port 5432 failed: '
        "FATAL:  sorry, too many clients already",
        'connection to server at "10.0.0.5", port 5432 failed: FATAL:  remaining connection slots are reserved '
        "for non-replication superuser connections",
        "\tserver closed the connection unexpectedly",
    ],
)
def test_connection_loss_and_slot_exhaustion_messages_are_errors(line):
    # Given an output holding one of these messages (not captured: the local server cannot be exhausted safely)
    text = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n" + line + "\n"
    # When it is parsed
    report = parse_sysbench(text)
    # Then the line is an error, stripped
    assert report.errors == [line.strip()]


def test_sb05_read_write_requests_are_not_queries():
    # Given a 0.5 summary, which prints "read/write requests" and "other operations" but no "queries:" line
    # When it is parsed
    report = parse_fixture("sb05_handmade_oltp_write_heavy_t8_T30_i10.txt")
    # Then the 1.0 fields stay None rather than taking the 0.5 figures
    assert report.summary is not None
    assert (report.summary.queries, report.summary.qps, report.summary.latency_sum_ms) == (None, None, None)


def test_version_flag_output():
    # Given the output of `sysbench --version`
    # When it is parsed
    report = parse_sysbench("sysbench 1.0.20\n")
    # Then the version is read from it
    assert report.summary == SysbenchSummary(sysbench_version="1.0.20")


def test_parsed_number_reprs_as_the_printed_token():
    # Given a run whose summary reads "transactions: 1337 (244.70 per sec.)"
    # When parsed
    report = parse_fixture("run_oltp_read_write_t4_T5_i1.txt")
    # Then the float is float("244.70") itself: no rounding on the way
    assert report.summary is not None
    assert repr(report.summary.tps) == "244.7"


def test_crlf_line_endings_parse_like_lf():
    # Given a capture whose lines end in CRLF
    text = (SYSBENCH_FIXTURES / "run_oltp_read_write_histogram_t4_T5_i1.txt").read_text()
    # When both spellings are parsed
    crlf, lf = parse_sysbench(text.replace("\n", "\r\n")), parse_sysbench(text)
    # Then the reports are equal
    assert crlf == lf


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "\n\n\n",
        "hello world",
        "\x00\xff binary \x1b[31m junk",
        "[ soon ] thds: many tps: lots",
        "[ 1s ] queue length: 0, concurrency: 0",  # a queue line with no interval before it
        "       0.954 |*                                        1",  # a histogram row with no header
        "Number of threads: " + "9" * 5000,  # beyond int()'s digit limit
        "transactions:  (per sec.)",
    ],
)
def test_garbage_returns_empty_report(garbage):
    # Given text that is not sysbench output
    # When it is parsed
    report = parse_sysbench(garbage)
    # Then the report is empty rather than an exception
    assert report == SysbenchReport()


def test_non_string_input_returns_empty_report():
    # Given something that is not text at all
    # When it is parsed
    report = parse_sysbench(b"transactions: 1 (1.00 per sec.)")  # type: ignore[arg-type]  # bytes on purpose: the wrong type is the input
    # Then the report is empty
    assert report == SysbenchReport()
