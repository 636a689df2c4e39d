"""The pgbench parser against real pgbench 15/18 captures, pgbench 12 reconstructions and
pgbench 9.6/10/11 outputs composed from their printf formats (fixtures README).

Every expected number below was copied from the fixture file it is checked
against: the parser must return exactly what pgbench printed.
"""

from pathlib import Path

import pytest

from pgarena.tools.pgbench.parser import InitPhases, PgbenchReport, PgbenchSummary, ProgressPoint, StatementLatency, parse_pgbench

PGBENCH_FIXTURES = Path(__file__).parents[1] / "fixtures" / "pgbench"
DEBIAN_15 = "15.20 (Debian 15.20-0+deb12u1)"
TPCB = "<builtin: TPC-B (sort of)>"


def parse_fixture(name: str) -> PgbenchReport:
    return parse_pgbench((PGBENCH_FIXTURES / name).read_text())


def summary(**printed: object) -> dict[str, object]:
    # Fields the fixture does not print must come back as None, not a default.
    return {field: None for field in PgbenchSummary.model_fields} | printed


def pg18(**printed: object) -> dict[str, object]:
    # Header lines every pgbench 18 capture here prints alike (server 15 unless said otherwise).
    return summary(**({"pgbench_version": "18.6", "server_version": DEBIAN_15, "scaling_factor": 1, "max_tries": 1} | printed))


def pg15(**printed: object) -> dict[str, object]:
    return summary(**({"pgbench_version": DEBIAN_15, "scaling_factor": 1, "max_tries": 1} | printed))


def p(elapsed: float, tps: float, lat: float, stddev: float, **extra: object) -> ProgressPoint:
    return ProgressPoint(elapsed_s=elapsed, tps=tps, latency_avg_ms=lat, latency_stddev_ms=stddev, **extra)


EXPECTED_SUMMARIES = {
    "pg18_run_tpcb_c4_j2_T5_P1.txt": pg18(
        transaction_type=TPCB,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=5.0,
        transactions=6932,
        failed_transactions=0,
        latency_avg_ms=2.874,
        latency_stddev_ms=2.338,
        initial_connection_time_ms=19.415,
        tps=1385.868381,
    ),
    "pg15_run_tpcb_c4_j2_T5_P1.txt": pg15(
        transaction_type=TPCB,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=5.0,
        transactions=7905,
        failed_transactions=0,
        latency_avg_ms=2.521,
        latency_stddev_ms=1.610,
        initial_connection_time_ms=14.776,
        tps=1582.425766,
    ),
    "pg18_run_select_only_prepared_c4_j2_T5_P1.txt": pg18(
        transaction_type="<builtin: select only>",
        query_mode="prepared",
        clients=4,
        threads=2,
        duration_s=5.0,
        transactions=255747,
        failed_transactions=0,
        latency_avg_ms=0.070,
        latency_stddev_ms=0.289,
        initial_connection_time_ms=12.136,
        tps=51225.151754,
    ),
    "pg15_run_select_only_prepared_c4_j2_T5_P1.txt": pg15(
        transaction_type="<builtin: select only>",
        query_mode="prepared",
        clients=4,
        threads=2,
        duration_s=5.0,
        transactions=208320,
        failed_transactions=0,
        latency_avg_ms=0.088,
        latency_stddev_ms=0.245,
        initial_connection_time_ms=23.352,
        tps=41817.646396,
    ),
    "pg18_run_tpcb_c2_t200.txt": pg18(
        transaction_type=TPCB,
        query_mode="simple",
        clients=2,
        threads=1,
        transactions=400,
        transactions_expected=400,
        failed_transactions=0,
        latency_avg_ms=1.035,
        initial_connection_time_ms=11.688,
        tps=1932.460505,
    ),
    "pg15_run_tpcb_c2_t200.txt": pg15(
        transaction_type=TPCB,
        query_mode="simple",
        clients=2,
        threads=1,
        transactions=400,
        transactions_expected=400,
        failed_transactions=0,
        latency_avg_ms=1.151,
        initial_connection_time_ms=9.017,
        tps=1737.845940,
    ),
    "pg18_run_simple_update_extended_c4_j2_T3_P1.txt": pg18(
        transaction_type="<builtin: simple update>",
        query_mode="extended",
        clients=4,
        threads=2,
        duration_s=3.0,
        transactions=6547,
        failed_transactions=0,
        latency_avg_ms=1.821,
        latency_stddev_ms=1.132,
        initial_connection_time_ms=10.783,
        tps=2178.130268,
    ),
    "pg15_run_simple_update_extended_c4_j2_T3_P1.txt": pg15(
        transaction_type="<builtin: simple update>",
        query_mode="extended",
        clients=4,
        threads=2,
        duration_s=3.0,
        transactions=6744,
        failed_transactions=0,
        latency_avg_ms=1.768,
        latency_stddev_ms=2.244,
        initial_connection_time_ms=12.544,
        tps=2252.242474,
    ),
    "pg18_run_tpcb_r_c2_T3.txt": pg18(
        transaction_type=TPCB,
        query_mode="simple",
        clients=2,
        threads=1,
        duration_s=3.0,
        transactions=5481,
        failed_transactions=0,
        latency_avg_ms=1.095,
        initial_connection_time_ms=9.486,
        tps=1827.203429,
    ),
    "pg15_run_tpcb_r_c2_T3.txt": pg15(
        transaction_type=TPCB,
        query_mode="simple",
        clients=2,
        threads=1,
        duration_s=3.0,
        transactions=4819,
        failed_transactions=0,
        latency_avg_ms=1.243,
        initial_connection_time_ms=9.133,
        tps=1608.599314,
    ),
    "pg18_run_tpcb_rate_R400_L20_maxtries3_c4_j2_T3_P1.txt": pg18(
        transaction_type=TPCB,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=3.0,
        transactions=1218,
        failed_transactions=0,
        transactions_retried=0,
        total_retries=0,
        transactions_skipped=0,
        latency_limit_ms=20.0,
        transactions_above_latency_limit=0,
        schedule_lag_avg_ms=0.149,
        schedule_lag_max_ms=3.433,
        latency_avg_ms=1.551,
        latency_stddev_ms=0.958,
        initial_connection_time_ms=8.417,
        tps=406.052110,
        max_tries=3,
    ),
    "pg15_run_tpcb_rate_R400_L20_maxtries3_c4_j2_T3_P1.txt": pg15(
        transaction_type=TPCB,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=3.0,
        transactions=1231,
        failed_transactions=0,
        transactions_retried=0,
        total_retries=0,
        transactions_skipped=0,
        latency_limit_ms=20.0,
        transactions_above_latency_limit=0,
        schedule_lag_avg_ms=0.143,
        schedule_lag_max_ms=2.550,
        latency_avg_ms=1.386,
        latency_stddev_ms=0.557,
        initial_connection_time_ms=12.658,
        tps=412.220065,
        max_tries=3,
    ),
    "pg18_run_multi_script_c2_t100.txt": pg18(
        transaction_type="multiple scripts",
        query_mode="simple",
        clients=2,
        threads=1,
        transactions=200,
        transactions_expected=200,
        failed_transactions=0,
        latency_avg_ms=1.051,
        initial_connection_time_ms=5.758,
        tps=1902.261789,
    ),
    "pg15_run_multi_script_c2_t100.txt": pg15(
        transaction_type="multiple scripts",
        query_mode="simple",
        clients=2,
        threads=1,
        transactions=200,
        transactions_expected=200,
        failed_transactions=0,
        latency_avg_ms=0.889,
        initial_connection_time_ms=6.077,
        tps=2249.870632,
    ),
    "pg18_run_aborted_divzero_c2_j1_T8_P1.txt": pg18(
        transaction_type="divzero.sql",
        query_mode="simple",
        clients=2,
        threads=1,
        duration_s=8.0,
        transactions=72350,
        failed_transactions=0,
        latency_avg_ms=0.054,
        latency_stddev_ms=0.101,
        initial_connection_time_ms=9.501,
        tps=24841.773184,
    ),
    "pg18_run_aborted_thread0_no_progress_c2_j2_T8_P1.txt": pg18(
        transaction_type="divzero.sql",
        query_mode="simple",
        clients=2,
        threads=2,
        duration_s=8.0,
        transactions=139200,
        failed_transactions=0,
        latency_avg_ms=0.063,
        latency_stddev_ms=0.051,
        initial_connection_time_ms=3.495,
        tps=17407.060739,
    ),
    "pg15_run_aborted_divzero_c2_j2_T8_P1.txt": pg15(
        transaction_type="divzero.sql",
        query_mode="simple",
        clients=2,
        threads=2,
        duration_s=8.0,
        transactions=60612,
        failed_transactions=0,
        latency_avg_ms=0.072,
        latency_stddev_ms=0.078,
        initial_connection_time_ms=5.581,
        tps=14634.644549,
    ),
    "pg18_run_custom_script_vacuum_errors_ignored_t10.txt": pg18(
        transaction_type="select1.sql",
        query_mode="simple",
        clients=1,
        threads=1,
        transactions=10,
        transactions_expected=10,
        failed_transactions=0,
        latency_avg_ms=0.129,
        initial_connection_time_ms=3.112,
        tps=7763.975155,
    ),
    "pg18_server18_run_tpcb_c4_j2_T3_P1.txt": pg18(
        transaction_type=TPCB,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=3.0,
        transactions=7220,
        failed_transactions=0,
        latency_avg_ms=1.657,
        latency_stddev_ms=0.812,
        initial_connection_time_ms=5.874,
        tps=2407.718840,
        server_version=None,
    ),
    "pg15_server18_run_tpcb_c4_j2_T3_P1.txt": pg15(
        transaction_type=TPCB,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=3.0,
        transactions=6116,
        failed_transactions=0,
        latency_avg_ms=1.955,
        latency_stddev_ms=1.024,
        initial_connection_time_ms=9.365,
        tps=2039.148585,
        server_version="18.6",
    ),
    "pg12_run_tpcb_c10_t1000.txt": summary(
        transaction_type=TPCB,
        scaling_factor=10,
        query_mode="simple",
        clients=10,
        threads=1,
        transactions=10000,
        transactions_expected=10000,
        latency_avg_ms=11.013,
        tps=896.967014,
        tps_including_connections=895.483651,
        tps_excluding_connections=896.967014,
    ),
    "pg12_run_tpcb_c4_j2_T5_P1.txt": summary(
        transaction_type=TPCB,
        scaling_factor=1,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=5.0,
        transactions=7905,
        latency_avg_ms=2.521,
        latency_stddev_ms=1.610,
        tps=1582.425766,
        tps_including_connections=1579.123456,
        tps_excluding_connections=1582.425766,
    ),
    "pg12_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt": summary(
        transaction_type=TPCB,
        scaling_factor=1,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=3.0,
        transactions=1224,
        transactions_skipped=1,
        latency_limit_ms=20.0,
        transactions_above_latency_limit=1,
        schedule_lag_avg_ms=0.143,
        schedule_lag_max_ms=2.550,
        latency_avg_ms=1.386,
        latency_stddev_ms=0.557,
        tps=408.000361,
        tps_including_connections=407.513205,
        tps_excluding_connections=408.000361,
    ),
    "pg12_run_tpcb_r_c2_T3.txt": summary(
        transaction_type=TPCB,
        scaling_factor=1,
        query_mode="simple",
        clients=2,
        threads=1,
        duration_s=3.0,
        transactions=4819,
        latency_avg_ms=1.245,
        tps=1608.599314,
        tps_including_connections=1606.133370,
        tps_excluding_connections=1608.599314,
    ),
    "pg96_run_tpcb_c4_j2_T5_P1.txt": summary(
        transaction_type=TPCB,
        scaling_factor=1,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=5.0,
        transactions=6311,
        latency_avg_ms=3.165,
        latency_stddev_ms=1.902,
        tps=1262.907513,
        tps_including_connections=1261.947610,
        tps_excluding_connections=1262.907513,
    ),
    "pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt": summary(
        transaction_type=TPCB,
        scaling_factor=1,
        query_mode="simple",
        clients=4,
        threads=2,
        duration_s=3.0,
        transactions=1202,
        transactions_skipped=1,
        latency_limit_ms=20.0,
        transactions_above_latency_limit=1,
        schedule_lag_avg_ms=0.146,
        schedule_lag_max_ms=2.617,
        latency_avg_ms=1.436,
        latency_stddev_ms=0.589,
        tps=400.921504,
        tps_including_connections=400.468839,
        tps_excluding_connections=400.921504,
    ),
    "pg11_run_tpcb_c2_t200.txt": summary(
        transaction_type=TPCB,
        scaling_factor=1,
        query_mode="simple",
        clients=2,
        threads=1,
        transactions=400,
        transactions_expected=400,
        latency_avg_ms=1.583,
        tps=1265.937043,
        tps_including_connections=1263.391517,
        tps_excluding_connections=1265.937043,
    ),
    "pg11_run_aborted_divzero_c2_j1_T8_P1.txt": summary(
        transaction_type="divzero.sql",
        scaling_factor=1,
        query_mode="simple",
        clients=2,
        threads=1,
        duration_s=8.0,
        transactions=70120,
        latency_avg_ms=0.055,
        latency_stddev_ms=0.099,
        tps=24158.031188,
        tps_including_connections=24120.554712,
        tps_excluding_connections=24158.031188,
    ),
    "pg12_run_aborted_divzero_c2_j1_T8_P1.txt": summary(
        transaction_type="divzero.sql",
        scaling_factor=1,
        query_mode="simple",
        clients=2,
        threads=1,
        duration_s=8.0,
        transactions=72350,
        latency_avg_ms=0.054,
        latency_stddev_ms=0.101,
        tps=24841.773184,
        tps_including_connections=24802.367193,
        tps_excluding_connections=24841.773184,
    ),
}

# (number of points, first point, last point)
EXPECTED_PROGRESS = {
    "pg18_run_tpcb_c4_j2_T5_P1.txt": (5, p(1.0, 1277.9, 3.064, 1.598, failed=0), p(5.0, 1373.9, 2.905, 1.451, failed=0)),
    "pg15_run_tpcb_c4_j2_T5_P1.txt": (5, p(1.0, 1318.9, 2.980, 2.185, failed=0), p(5.0, 1588.1, 2.516, 1.433, failed=0)),
    "pg18_run_select_only_prepared_c4_j2_T5_P1.txt": (
        5,
        p(1.0, 45291.1, 0.079, 0.327, failed=0),
        p(5.0, 54228.4, 0.066, 0.268, failed=0),
    ),
    "pg15_run_select_only_prepared_c4_j2_T5_P1.txt": (
        5,
        p(1.0, 34603.1, 0.105, 0.299, failed=0),
        p(5.0, 43687.7, 0.084, 0.213, failed=0),
    ),
    "pg18_run_simple_update_extended_c4_j2_T3_P1.txt": (
        3,
        p(1.0, 2222.0, 1.776, 1.227, failed=0),
        p(3.0, 2259.2, 1.759, 0.982, failed=0),
    ),
    "pg15_run_simple_update_extended_c4_j2_T3_P1.txt": (
        3,
        p(1.0, 2077.7, 1.898, 3.772, failed=0),
        p(3.0, 2309.1, 1.723, 0.986, failed=0),
    ),
    "pg18_run_tpcb_rate_R400_L20_maxtries3_c4_j2_T3_P1.txt": (
        3,
        p(1.0, 380.0, 1.533, 0.689, failed=0, lag_ms=0.132, skipped=0, retried=0, retries=0),
        p(3.0, 389.0, 1.518, 0.563, failed=0, lag_ms=0.157, skipped=0, retried=0, retries=0),
    ),
    # -T 3 -P 1, yet only two points: the last interval's report can be lost at the end of the run.
    "pg15_run_tpcb_rate_R400_L20_maxtries3_c4_j2_T3_P1.txt": (
        2,
        p(1.0, 395.9, 1.481, 0.587, failed=0, lag_ms=0.148, skipped=0, retried=0, retries=0),
        p(2.0, 428.0, 1.343, 0.596, failed=0, lag_ms=0.142, skipped=0, retried=0, retries=0),
    ),
    "pg18_run_aborted_divzero_c2_j1_T8_P1.txt": (
        2,
        p(1.0, 36568.6, 0.052, 0.104, failed=0),
        p(2.0, 26447.3, 0.042, 0.106, failed=0),
    ),
    "pg15_run_aborted_divzero_c2_j2_T8_P1.txt": (
        4,
        p(1.0, 25777.5, 0.048, 0.064, failed=0),
        p(4.0, 11278.8, 0.089, 0.039, failed=0),
    ),
    "pg18_run_aborted_thread0_no_progress_c2_j2_T8_P1.txt": (0, None, None),
    "pg18_server18_run_tpcb_c4_j2_T3_P1.txt": (
        3,
        p(1.0, 2394.6, 1.657, 0.794, failed=0),
        p(3.0, 2258.1, 1.769, 0.840, failed=0),
    ),
    "pg15_server18_run_tpcb_c4_j2_T3_P1.txt": (
        3,
        p(1.0, 1895.8, 2.080, 1.021, failed=0),
        p(3.0, 2405.8, 1.658, 0.880, failed=0),
    ),
    "pg18_run_tpcb_c2_t200.txt": (0, None, None),
    "pg15_run_tpcb_r_c2_T3.txt": (0, None, None),
    "pg12_run_tpcb_c4_j2_T5_P1.txt": (5, p(1.0, 1318.9, 2.980, 2.185), p(5.0, 1588.1, 2.516, 1.433)),
    "pg12_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt": (
        3,
        p(1.0, 395.9, 1.481, 0.587, lag_ms=0.148, skipped=0),
        p(3.0, 401.0, 1.402, 0.611, lag_ms=0.139, skipped=0),
    ),
    "pg12_run_aborted_divzero_c2_j1_T8_P1.txt": (2, p(1.0, 36568.6, 0.052, 0.104), p(2.0, 26447.3, 0.042, 0.106)),
    "pg96_run_tpcb_c4_j2_T5_P1.txt": (5, p(1.0, 1205.3, 3.300, 2.018), p(5.0, 1281.1, 3.122, 1.869)),
    "pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt": (
        3,
        p(1.0, 392.9, 1.502, 0.601, lag_ms=0.151, skipped=0),
        p(3.0, 398.0, 1.421, 0.590, lag_ms=0.146, skipped=0),
    ),
    "pg11_run_tpcb_c2_t200.txt": (0, None, None),
    "pg11_run_aborted_divzero_c2_j1_T8_P1.txt": (2, p(1.0, 35102.4, 0.054, 0.098), p(2.0, 25871.0, 0.043, 0.101)),
}

CLIENT_SIDE_STEPS = [
    "dropping old tables",
    "creating tables",
    "generating data (client-side)",
    "vacuuming",
    "creating primary keys",
]
SERVER_SIDE_STEPS = [
    "dropping old tables",
    "creating tables",
    "generating data (server-side)",
    "vacuuming",
    "creating primary keys",
]
PG11_STEPS = ["dropping old tables", "creating tables", "generating data", "vacuuming", "creating primary keys"]

EXPECTED_INIT = {
    # Before 13 there is no total: the last tuple line's "elapsed" is the only timing printed.
    "pg96_init_s1.txt": InitPhases(
        steps=["creating tables", "vacuum", "set primary keys"],
        rows_generated=100000,
        rows_total=100000,
        generate_elapsed_s=0.11,
        completed=True,
    ),
    "pg10_init_s3.txt": InitPhases(
        steps=["creating tables", "vacuum", "set primary keys"],
        rows_generated=300000,
        rows_total=300000,
        generate_elapsed_s=0.17,
        completed=True,
    ),
    "pg11_init_s1.txt": InitPhases(
        steps=PG11_STEPS, rows_generated=100000, rows_total=100000, generate_elapsed_s=0.09, completed=True
    ),
    "pg12_init_s1.txt": InitPhases(
        steps=PG11_STEPS, rows_generated=100000, rows_total=100000, generate_elapsed_s=0.08, completed=True
    ),
    "pg18_init_s1.txt": InitPhases(
        total_s=0.34,
        phases_s={"drop tables": 0.00, "create tables": 0.00, "client-side generate": 0.17, "vacuum": 0.10, "primary keys": 0.06},
        steps=CLIENT_SIDE_STEPS,
        rows_generated=100000,
        rows_total=100000,
        generate_elapsed_s=0.01,
        completed=True,
    ),
    "pg15_init_s1.txt": InitPhases(
        total_s=0.30,
        phases_s={"drop tables": 0.02, "create tables": 0.02, "client-side generate": 0.11, "vacuum": 0.12, "primary keys": 0.04},
        steps=CLIENT_SIDE_STEPS,
        rows_generated=100000,
        rows_total=100000,
        generate_elapsed_s=0.03,
        completed=True,
    ),
    "pg18_init_s1_IdtGvp.txt": InitPhases(
        total_s=0.32,
        phases_s={"drop tables": 0.01, "create tables": 0.00, "server-side generate": 0.17, "vacuum": 0.09, "primary keys": 0.05},
        steps=SERVER_SIDE_STEPS,
        completed=True,
    ),
    "pg15_init_s1_IdtGvp.txt": InitPhases(
        total_s=0.28,
        phases_s={"drop tables": 0.01, "create tables": 0.00, "server-side generate": 0.16, "vacuum": 0.07, "primary keys": 0.04},
        steps=SERVER_SIDE_STEPS,
        completed=True,
    ),
}

CLEAN_RUNS = [name for name in EXPECTED_SUMMARIES if "aborted" not in name and "vacuum_errors" not in name]


def test_every_fixture_file_is_covered():
    # Given the fixture folder
    on_disk = {path.name for path in PGBENCH_FIXTURES.glob("*.txt")}
    # When the names the tests check are collected
    covered = (
        set(EXPECTED_SUMMARIES)
        | set(EXPECTED_INIT)
        | {
            "pg18_error_not_initialized.txt",
            "pg10_error_connection_refused.txt",
            "pg15_error_connection_refused.txt",
            "pg18_error_connection_refused.txt",
            "pg15_error_bad_host.txt",
            "pg18_error_bad_host.txt",
        }
    )
    # Then no capture sits unchecked
    assert on_disk == covered


@pytest.mark.parametrize("name", sorted(EXPECTED_SUMMARIES))
def test_summary_equals_printed_values(name):
    # Given a captured (or, pg12_*, reconstructed) run output
    # When it is parsed
    report = parse_fixture(name)
    # Then every summary field is the printed value, and None where nothing was printed
    assert report.summary is not None
    assert report.summary.model_dump() == EXPECTED_SUMMARIES[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_PROGRESS))
def test_progress_series_length_and_endpoints(name):
    # Given a run output, with or without -P lines
    count, first, last = EXPECTED_PROGRESS[name]
    # When it is parsed
    progress = parse_fixture(name).progress
    # Then the series has one point per printed line, first and last as printed
    assert len(progress) == count
    assert (progress[0] if progress else None) == first
    assert (progress[-1] if progress else None) == last


@pytest.mark.parametrize("name", sorted(EXPECTED_INIT))
def test_init_phases_equal_printed_values(name):
    # Given a `pgbench -i` output ending in "done in X s (...)."
    # When it is parsed
    init = parse_fixture(name).init
    # Then the total and every phase are the printed seconds
    assert init == EXPECTED_INIT[name]


def test_init_phases_keep_printed_order():
    # Given a server-side-generate init output
    # When it is parsed
    init = parse_fixture("pg18_init_s1_IdtGvp.txt").init
    # Then the phases come in the order pgbench ran them
    assert init is not None
    assert list(init.phases_s) == ["drop tables", "create tables", "server-side generate", "vacuum", "primary keys"]


def test_init_output_has_no_run_summary_or_progress():
    # Given an init output (with its tuple-count progress line)
    # When it is parsed
    report = parse_fixture("pg15_init_s1.txt")
    # Then nothing is mistaken for a run report
    assert (report.summary, report.progress) == (None, [])


def test_init_notices_are_not_errors():
    # Given an init on an empty database: "NOTICE:  table ... does not exist, skipping"
    # When it is parsed
    report = parse_fixture("pg18_init_s1.txt")
    # Then the notices are not reported as errors
    assert report.errors == []


@pytest.mark.parametrize("name", ["pg96_init_s1.txt", "pg10_init_s3.txt", "pg11_init_s1.txt", "pg12_init_s1.txt"])
def test_pre13_init_has_no_made_up_total(name):
    # Given a pgbench 9.6-12 init, which ends with a bare "done." and prints no total or phases
    # When it is parsed
    report = parse_fixture(name)
    # Then no total is made up, nothing is an error, and the output is not a run
    assert report.init is not None
    assert (report.init.total_s, report.init.phases_s, report.errors, report.summary) == (None, {}, [], None)


def test_pre13_init_keeps_the_last_tuple_line():
    # Given a scale-3 init, three "N of 300000 tuples" lines
    # When it is parsed
    init = parse_fixture("pg10_init_s3.txt").init
    # Then the figures of the last line are kept, not of the first
    assert init is not None
    assert (init.rows_generated, init.generate_elapsed_s) == (300000, 0.17)


def test_unfinished_init_is_not_completed():
    # Given an init cut off while generating (no "done.")
    text = "creating tables...\n100000 of 300000 tuples (33%) done (elapsed 0.05 s, remaining 0.10 s)\n"
    # When it is parsed
    init = parse_pgbench(text).init
    # Then what was printed is kept and the init is not taken as done
    assert init == InitPhases(steps=["creating tables"], rows_generated=100000, rows_total=300000, generate_elapsed_s=0.05)


def test_second_init_in_one_log_replaces_the_first():
    # Given two pgbench 11 inits, one after the other
    text = (PGBENCH_FIXTURES / "pg11_init_s1.txt").read_text() + (PGBENCH_FIXTURES / "pg10_init_s3.txt").read_text()
    # When parsed together
    init = parse_pgbench(text).init
    # Then the steps and figures are the second one's alone
    assert init == EXPECTED_INIT["pg10_init_s3.txt"]


def test_study_total_time_line_gives_total_and_phases():
    # Given the load-test record of the managed-services study (not a line pgbench prints)
    text = "total time: 11738.59 s (insert 7697.98 s, commit 0.00 s, vacuum 1820.14 s, index 2220.47 s)\n"
    # When it is parsed
    init = parse_pgbench(text).init
    # Then the total and the four phases are the printed seconds, in printed order
    assert init == InitPhases(
        total_s=11738.59, phases_s={"insert": 7697.98, "commit": 0.0, "vacuum": 1820.14, "index": 2220.47}, completed=True
    )


def test_run_output_has_no_init():
    # Given a pgbench 9.6 run ("starting vacuum...end." is not an init step)
    # When it is parsed
    report = parse_fixture("pg96_run_tpcb_c4_j2_T5_P1.txt")
    # Then there is no init
    assert report.init is None


@pytest.mark.parametrize("name", sorted(CLEAN_RUNS))
def test_clean_runs_report_no_errors(name):
    # Given a run that finished normally
    # When it is parsed
    report = parse_fixture(name)
    # Then there are no errors and it is not flagged aborted
    assert (report.errors, report.aborted) == ([], False)


def test_aborted_run_keeps_summary_and_errors():
    # Given a run whose clients died of "division by zero", which pgbench still summarises
    # When it is parsed
    report = parse_fixture("pg18_run_aborted_divzero_c2_j1_T8_P1.txt")
    # Then the summary is there and each error line is kept, in order
    assert report.summary is not None and report.summary.tps == 24841.773184
    assert report.errors == [
        "pgbench: error: client 0 script 0 aborted in command 1 query 0: ERROR:  division by zero",
        "pgbench: error: client 1 script 0 aborted in command 1 query 0: ERROR:  division by zero",
        "pgbench: error: Run was aborted; the above results are incomplete.",
    ]


@pytest.mark.parametrize(
    "name",
    [
        "pg18_run_aborted_divzero_c2_j1_T8_P1.txt",
        "pg18_run_aborted_thread0_no_progress_c2_j2_T8_P1.txt",
        "pg15_run_aborted_divzero_c2_j2_T8_P1.txt",
        "pg12_run_aborted_divzero_c2_j1_T8_P1.txt",
    ],
)
def test_aborted_run_is_flagged(name):
    # Given a run ending in "Run was aborted; the above results are incomplete."
    # When it is parsed
    report = parse_fixture(name)
    # Then the report says so
    assert report.aborted is True


def test_pg12_aborted_run_errors_keep_old_wording():
    # Given a pgbench 12 abort: "client N aborted in command ... (SQL) of script 0; ERROR: ..." and "fatal"
    # When it is parsed
    report = parse_fixture("pg12_run_aborted_divzero_c2_j1_T8_P1.txt")
    # Then those lines are the errors, verbatim
    assert report.errors == [
        "pgbench: error: client 0 aborted in command 1 (SQL) of script 0; ERROR:  division by zero",
        "pgbench: error: client 1 aborted in command 1 (SQL) of script 0; ERROR:  division by zero",
        "pgbench: fatal: Run was aborted; the above results are incomplete.",
    ]


def test_pg11_aborted_run_errors_have_no_log_prefix_and_no_abort_line():
    # Given a pgbench 11 abort: "client N aborted in command 1 (SQL) of script 0; ERROR: ..." and no "Run was aborted"
    # When it is parsed
    report = parse_fixture("pg11_run_aborted_divzero_c2_j1_T8_P1.txt")
    # Then both client lines are the errors, verbatim, and the summary is kept
    assert report.errors == [
        "client 0 aborted in command 1 (SQL) of script 0; ERROR:  division by zero",
        "client 1 aborted in command 1 (SQL) of script 0; ERROR:  division by zero",
    ]
    assert report.aborted is False and report.summary is not None


def test_pg10_connection_refused_keeps_pgbench_and_libpq_lines():
    # Given pgbench 10 pointed at a closed port: its own line, then libpq 10's message
    # When it is parsed
    report = parse_fixture("pg10_error_connection_refused.txt")
    # Then both first lines are errors, the hint lines are not, and there is no summary
    assert report.summary is None
    assert report.errors == [
        'connection to database "pgarena_fixtures" failed:',
        "could not connect to server: Connection refused",
    ]


def test_errors_pgbench_ignores_are_still_errors_without_interleaved_prefix():
    # Given a custom-script run whose initial vacuum failed ("ignoring this error and continuing anyway"),
    # the first message glued to "starting vacuum..." on the same line
    # When it is parsed
    report = parse_fixture("pg18_run_custom_script_vacuum_errors_ignored_t10.txt")
    # Then the three errors are kept, from their "pgbench: error:" prefix on, and the run is not aborted
    assert report.errors == [
        'pgbench: error: ERROR:  relation "pgbench_branches" does not exist',
        'pgbench: error: ERROR:  relation "pgbench_tellers" does not exist',
        'pgbench: error: ERROR:  relation "pgbench_history" does not exist',
    ]
    assert report.aborted is False


@pytest.mark.parametrize("version", ["pg15", "pg18"])
def test_connection_refused_yields_errors_and_no_summary(version):
    # Given pgbench pointed at a closed port
    # When its output is parsed
    report = parse_fixture(f"{version}_error_connection_refused.txt")
    # Then both error lines are kept and there is no summary
    assert report.summary is None
    assert report.errors == [
        'pgbench: error: connection to server at "127.0.0.1", port 1 failed: Connection refused',
        "pgbench: error: could not create connection for setup",
    ]


@pytest.mark.parametrize("version", ["pg15", "pg18"])
def test_bad_host_yields_dns_error(version):
    # Given pgbench pointed at a host name that does not resolve
    # When its output is parsed
    report = parse_fixture(f"{version}_error_bad_host.txt")
    # Then the resolver error comes first
    assert report.errors[0] == (
        'pgbench: error: could not translate host name "no-such-host.invalid" to address: Name or service not known'
    )


def test_uninitialised_database_keeps_version_and_error():
    # Given a run against a database with no pgbench tables (pgbench exits before running)
    # When it is parsed
    report = parse_fixture("pg18_error_not_initialized.txt")
    # Then only the version header made it into the summary, and the error is kept
    assert report.summary is not None
    assert report.summary.model_dump(exclude_none=True) == {"pgbench_version": "18.6", "server_version": DEBIAN_15}
    assert report.errors == [
        'pgbench: error: could not count number of branches: ERROR:  relation "pgbench_branches" does not exist'
    ]


def test_multi_script_per_script_lines_do_not_overwrite_totals():
    # Given a two-script run whose " - " per-script blocks repeat "latency average" and "tps"
    # When it is parsed
    report = parse_fixture("pg18_run_multi_script_c2_t100.txt")
    # Then the totals are the top-level lines, not the last script's
    assert report.summary is not None
    assert (report.summary.latency_avg_ms, report.summary.tps) == (1.051, 1902.261789)


def test_nonzero_retries_skips_and_late_transactions_are_read():
    # Given a pgbench 15+ summary of a run that retried, skipped and ran late (pgbench.c's printf formats)
    text = "\n".join(
        [
            "number of transactions actually processed: 1218",
            "number of failed transactions: 2 (0.164%)",
            "number of transactions retried: 7 (0.575%)",
            "total number of retries: 9",
            "number of transactions skipped: 12 (0.976%)",
            "number of transactions above the 5.0 ms latency limit: 31/1218 (2.545%)",
            "rate limit schedule lag: avg 12.031 (max 250.500) ms",
            "script statistics:",
            " - number of transactions skipped: 4 (0.976%)",  # per script: must not replace the total
        ]
    )
    # When it is parsed
    summary = parse_pgbench(text).summary
    # Then every count is the printed one
    assert summary is not None
    assert (summary.transactions_retried, summary.total_retries, summary.transactions_skipped) == (7, 9, 12)
    assert (summary.latency_limit_ms, summary.transactions_above_latency_limit) == (5.0, 31)
    assert (summary.schedule_lag_avg_ms, summary.schedule_lag_max_ms) == (12.031, 250.5)


def test_pg18_statement_latencies():
    # Given a pgbench 18 -r run ("statement latencies in milliseconds and failures:")
    # When it is parsed
    statements = parse_fixture("pg18_run_tpcb_r_c2_T3.txt").statements
    # Then there is one row per printed statement, with latency and failures as printed
    assert len(statements) == 11
    assert statements[0] == StatementLatency(
        script=None, latency_ms=0.001, failures=0, retries=None, command=r"\set aid random(1, 100000 * :scale)"
    )
    assert statements[-1] == StatementLatency(script=None, latency_ms=0.306, failures=0, retries=None, command="END;")


def test_pg15_statement_commands_match_pg18_despite_wider_spacing():
    # Given the same -r report from pgbench 15 (two blanks before the command) and 18 (one)
    # When both are parsed
    pg15 = parse_fixture("pg15_run_tpcb_r_c2_T3.txt").statements
    pg18 = parse_fixture("pg18_run_tpcb_r_c2_T3.txt").statements
    # Then the command texts are identical
    assert [s.command for s in pg15] == [s.command for s in pg18]


def test_pg12_statement_latencies_have_no_failures_column():
    # Given a pgbench 12 -r report ("statement latencies in milliseconds:")
    # When it is parsed
    statements = parse_fixture("pg12_run_tpcb_r_c2_T3.txt").statements
    # Then the rows carry latency and command, and failures stay None
    assert statements[4] == StatementLatency(script=None, latency_ms=0.062, failures=None, retries=None, command="BEGIN;")


def test_old_format_headline_tps_is_the_excluding_connections_value():
    # Given pgbench 12's two tps lines
    # When parsed
    report = parse_fixture("pg12_run_tpcb_c10_t1000.txt")
    # Then the headline tps is the "excluding connections establishing" one
    assert report.summary is not None
    assert report.summary.tps == report.summary.tps_excluding_connections == 896.967014


def test_parsed_number_reprs_as_the_printed_token():
    # Given a run whose tps line reads "tps = 1385.868381 (...)"
    # When parsed
    report = parse_pgbench((PGBENCH_FIXTURES / "pg18_run_tpcb_c4_j2_T5_P1.txt").read_text())
    # Then the float is float("1385.868381") itself: no rounding on the way
    assert report.summary is not None
    assert repr(report.summary.tps) == "1385.868381"


def test_version_flag_line_sets_pgbench_version():
    # Given the output of `pgbench --version` in front of a run
    text = "pgbench (PostgreSQL) 18.6\ntps = 100.5 (without initial connection time)\n"
    # When parsed
    report = parse_pgbench(text)
    # Then the version is taken from it
    assert report.summary is not None
    assert (report.summary.pgbench_version, report.summary.tps) == ("18.6", 100.5)


def test_pre_96_latency_average_with_colon():
    # Given the 9.5 wording "latency average: 4.176 ms"
    # When parsed
    report = parse_pgbench("latency average: 4.176 ms\n")
    # Then the latency is read all the same
    assert report.summary is not None and report.summary.latency_avg_ms == 4.176


def test_crlf_line_endings_parse_like_lf():
    # Given a capture whose lines end in CRLF
    text = (PGBENCH_FIXTURES / "pg15_run_tpcb_c4_j2_T5_P1.txt").read_text()
    # When both spellings are parsed
    crlf, lf = parse_pgbench(text.replace("\n", "\r\n")), parse_pgbench(text)
    # Then the reports are equal
    assert crlf == lf


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "\n\n\n",
        "hello world",
        "\x00\xff binary \x1b[31m junk",
        "progress: soon s, many tps",
        "done in forever s (drop tables x s).",
        "number of clients: " + "9" * 5000,  # beyond int()'s digit limit
        "tps = (without initial connection time)",
    ],
)
def test_garbage_returns_empty_report(garbage):
    # Given text that is not pgbench output
    # When it is parsed
    report = parse_pgbench(garbage)
    # Then the report is empty rather than an exception
    assert report == PgbenchReport()


def test_non_string_input_returns_empty_report():
    # Given something that is not text at all
    # When it is parsed
    report = parse_pgbench(b"tps = 1.0 (without initial connection time)")  # type: ignore[arg-type]  # bytes on purpose: the wrong type is the input
    # Then the report is empty
    assert report == PgbenchReport()
