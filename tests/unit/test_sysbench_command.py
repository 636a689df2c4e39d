"""sysbench command lines: the models, the exact argv, and where the password goes."""

import pytest
from pydantic import ValidationError

from pgarena.tools.sysbench.command import cleanup_args, connection_args, prepare_args, run_args, sysbench_binary, sysbench_env
from pgarena.tools.sysbench.spec import SysbenchPrepare, SysbenchRun, connections_used

# The workload shape the matrix will carry (issue 4).
MATRIX_PREPARE = {"tables": 2, "table_size": 1000}
MATRIX_RUN = {"script": "oltp_write_only", "threads": 4, "duration_s": 10}

# The write-heavy test of the managed-services study (METHODOLOGY.md section 1): 250 tables of
# 450,000 rows, 1000 threads for 600 s, 60 s intervals, uniform ids, every read kind at 0.
STUDY_PREPARE = SysbenchPrepare(tables=250, table_size=450_000, threads=16)
STUDY_RUN = SysbenchRun(
    threads=1000,
    duration_s=600,
    report_interval_s=60,
    rand_type="uniform",
    skip_trx=True,
    point_selects=0,
    simple_ranges=0,
    sum_ranges=0,
    order_ranges=0,
    distinct_ranges=0,
    # The study's bare --forced-shutdown: 5% of --time.
    forced_shutdown_s=30,
)


def test_matrix_workload_shape_validates():
    # Given the prepare and run objects a matrix workload will hold
    # When they are validated
    prepare = SysbenchPrepare.model_validate(MATRIX_PREPARE)
    run = SysbenchRun.model_validate(MATRIX_RUN)
    # Then the given fields are kept and the rest take their defaults
    assert (prepare.script, prepare.tables, prepare.table_size, prepare.threads) == ("oltp_read_write", 2, 1000, 1)
    assert (run.script, run.threads, run.duration_s, run.report_interval_s) == ("oltp_write_only", 4, 10, 5)


def test_smallest_prepare_argv():
    # Given the matrix's prepare
    prepare = SysbenchPrepare.model_validate(MATRIX_PREPARE)
    # When its command line is built
    argv = prepare_args(prepare)
    # Then it is the script, the data set size, the thread count and the command
    assert argv == ["oltp_read_write", "--tables=2", "--table_size=1000", "--threads=1", "prepare"]


def test_smallest_run_argv():
    # Given the matrix's run on the matrix's prepare
    run, prepare = SysbenchRun.model_validate(MATRIX_RUN), SysbenchPrepare.model_validate(MATRIX_PREPARE)
    # When its command line is built
    argv = run_args(run, prepare)
    # Then only the options set or always needed appear; the script's defaults are left alone
    assert argv == [
        "oltp_write_only",
        "--tables=2",
        "--table_size=1000",
        "--threads=4",
        "--time=10",
        "--report-interval=5",
        "run",
    ]


def test_write_heavy_study_run_argv():
    # Given the managed-services study's write-heavy run
    # When its command line is built
    argv = run_args(STUDY_RUN, STUDY_PREPARE)
    # Then every option of the study is there, spelled as sysbench 1.0 accepts it
    assert argv == [
        "oltp_read_write",
        "--tables=250",
        "--table_size=450000",
        "--threads=1000",
        "--time=600",
        "--report-interval=60",
        "--rand-type=uniform",
        "--point_selects=0",
        "--simple_ranges=0",
        "--sum_ranges=0",
        "--order_ranges=0",
        "--distinct_ranges=0",
        "--skip_trx=on",
        "--forced-shutdown=30",
        "run",
    ]


def test_write_heavy_study_prepare_argv():
    # Given the study's data set, loaded by 16 threads
    # When its command line is built
    argv = prepare_args(STUDY_PREPARE)
    # Then the sizes and the parallelism are passed
    assert argv == ["oltp_read_write", "--tables=250", "--table_size=450000", "--threads=16", "prepare"]


def test_histogram_percentile_and_write_counts_options():
    # Given a run asking for a histogram, the 99th percentile and custom write counts
    run = SysbenchRun(duration_s=5, histogram=True, percentile=99, index_updates=2, non_index_updates=0, delete_inserts=3)
    # When its command line is built
    argv = run_args(run, SysbenchPrepare())
    # Then each appears once, between the fixed options and the command
    assert argv[6:] == [
        "--index_updates=2",
        "--non_index_updates=0",
        "--delete_inserts=3",
        "--histogram=on",
        "--percentile=99",
        "run",
    ]


def test_cleanup_argv():
    # Given the matrix's prepare
    prepare = SysbenchPrepare.model_validate(MATRIX_PREPARE)
    # When the cleanup command line is built
    argv = cleanup_args(prepare)
    # Then it names the tables to drop
    assert argv == ["oltp_read_write", "--tables=2", "cleanup"]


def test_connection_args_carry_no_password():
    # Given an endpoint
    # When its connection options are built
    argv = connection_args("db.example.internal", 6432, "bench", "sbtest")
    # Then driver, host, port, user and database are set, and no password option
    assert argv == [
        "--db-driver=pgsql",
        "--pgsql-host=db.example.internal",
        "--pgsql-port=6432",
        "--pgsql-user=bench",
        "--pgsql-db=sbtest",
    ]


def test_password_goes_to_the_environment():
    # Given a password and an sslmode
    # When the environment is built
    env = sysbench_env("s3cret", sslmode="require")
    # Then libpq gets them (sysbench 1.0 has no sslmode option), with pgarena's application name
    assert env == {"PGPASSWORD": "s3cret", "PGSSLMODE": "require", "PGAPPNAME": "pgarena"}


def test_no_password_sets_no_pgpassword():
    # Given no password (e.g. trust or .pgpass)
    # When the environment is built
    env = sysbench_env(None)
    # Then PGPASSWORD is left out rather than set empty
    assert "PGPASSWORD" not in env


def test_extra_args_go_before_the_command():
    # Given a run with an extra option
    run = SysbenchRun(duration_s=5, extra_args=["--rand-seed=1"])
    # When its command line is built
    argv = run_args(run, SysbenchPrepare())
    # Then the option comes last before "run"
    assert argv[-2:] == ["--rand-seed=1", "run"]


@pytest.mark.parametrize(
    "arg",
    [
        "--pgsql-password=x",
        "--pgsql-host=elsewhere",
        "--db-driver=mysql",
        "--threads=8",
        "--time=1",
        "--config-file=/tmp/opts",
        "--table-size=5",
        "oltp_read_only",
        "-x",
        "--",
    ],
)
def test_extra_args_cannot_override_owned_options(arg):
    # Given an extra argument that is a password, a connection option, a modelled option or no option at all
    # When a run holding it is validated
    # Then it is refused
    with pytest.raises(ValidationError, match="extra_args"):
        SysbenchRun(duration_s=5, extra_args=[arg])


def test_prepare_extra_args_are_checked_too():
    # Given a prepare smuggling a password in
    # When it is validated
    # Then it is refused
    with pytest.raises(ValidationError, match="--pgsql-password"):
        SysbenchPrepare(extra_args=["--pgsql-password=x"])


@pytest.mark.parametrize("model", [SysbenchPrepare, SysbenchRun])
def test_unknown_fields_are_refused(model):
    # Given a misspelt field
    # When the model is validated
    # Then validation fails instead of ignoring it
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate({"duration_s": 5, "threds": 4})


def test_run_needs_a_duration():
    # Given a run without duration_s
    # When it is validated
    # Then it is refused: a run without a time limit would never end
    with pytest.raises(ValidationError, match="duration_s"):
        SysbenchRun.model_validate({"threads": 4})


@pytest.mark.parametrize(
    "field,value",
    [("script", "oltp"), ("rand_type", "zipf"), ("threads", 0), ("percentile", 101), ("point_selects", -1)],
)
def test_out_of_range_run_values_are_refused(field, value):
    # Given a value sysbench does not accept
    # When the run is validated
    # Then validation names the field
    with pytest.raises(ValidationError, match=field):
        SysbenchRun.model_validate({"duration_s": 5, field: value})


def test_single_table_scripts_refuse_several_tables():
    # Given select_random_points, whose prepare asserts --tables=1
    # When a two-table prepare is validated
    # Then it is refused before sysbench would fail
    with pytest.raises(ValidationError, match="only tables=1"):
        SysbenchPrepare(script="select_random_points", tables=2)


def test_models_are_frozen():
    # Given a validated run
    run = SysbenchRun(duration_s=5)
    # When a field is assigned
    # Then it is refused
    with pytest.raises(ValidationError):
        run.threads = 8  # type: ignore[misc]  # the model is frozen: the assignment is the point


@pytest.mark.parametrize("threads", [1, 4, 1000])
def test_run_uses_one_connection_per_thread(threads):
    # Given a run with N threads
    # When its connections are counted
    # Then there are N, with no setup connection
    assert connections_used("run", threads) == threads


@pytest.mark.parametrize("threads,tables,expected", [(1, 2, 2), (4, 2, 6), (8, 3, 11), (16, 250, 32)])
def test_prepare_adds_a_probe_connection_per_loading_thread(threads, tables, expected):
    # Given a prepare with N threads loading M tables
    # When its connections are counted
    # Then each thread that loads a table may hold a second, short connection at once
    assert connections_used("prepare", threads, tables) == expected


def test_cleanup_uses_one_connection():
    # Given a cleanup with many threads
    # When its connections are counted
    # Then it is one: cleanup runs in sysbench's main thread
    assert connections_used("cleanup", 8, 3) == 1


def test_binary_from_environment(monkeypatch):
    # Given SYSBENCH pointing at a build
    monkeypatch.setenv("SYSBENCH", "/opt/sysbench/bin/sysbench")
    # When the binary is looked up
    # Then that path is used as given
    assert sysbench_binary() == "/opt/sysbench/bin/sysbench"


def test_binary_missing_everywhere_raises(monkeypatch):
    # Given no SYSBENCH and an empty PATH
    monkeypatch.delenv("SYSBENCH", raising=False)
    monkeypatch.setenv("PATH", "")
    # When the binary is looked up
    # Then the error says how to get it
    with pytest.raises(FileNotFoundError, match="apt-get install sysbench"):
        sysbench_binary()
