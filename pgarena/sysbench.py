"""sysbench (1.0, pgsql driver) command lines. Pure, except for finding the binary.

A full command is `[sysbench_binary(), *connection_args(...), *prepare_args(...)]`
(or run_args / cleanup_args), run with `sysbench_env(...)` added to the
environment. sysbench reads general options anywhere on the line; the *_args
functions put the script first and the command (prepare/run/cleanup) last.

Facts checked against sysbench 1.0.20 (Debian 12) and PostgreSQL 15:
- The password never goes on the command line. sysbench hands
  `--pgsql-password` (default "") to libpq's PQsetdbLogin, and libpq treats an
  empty password as unset, so it falls back to PGPASSWORD (or PGPASSFILE).
  Checked against a scram-sha-256 server: no password -> "fe_sendauth: no
  password supplied", a wrong PGPASSWORD -> "password authentication failed",
  the right one connects; `--pgsql-password` wins over PGPASSWORD when given.
- sysbench always passes its own host, port, user and database (defaults
  localhost, 5432, sbtest), so PGHOST, PGPORT, PGUSER and PGDATABASE are
  ignored: connection_args must always be given. PGSSLMODE and PGAPPNAME are
  honoured (1.0.20 has no --pgsql-sslmode option).
- Options of the OLTP scripts are spelled with underscores (`--table_size`),
  general ones with dashes (`--report-interval`); sysbench accepts either.
"""

from __future__ import annotations

import os
import shutil
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# The OLTP scripts Debian's sysbench 1.0 ships in /usr/share/sysbench (bulk_insert is left out:
# it has no prepare step and does not use the sbtest tables).
SysbenchScript = Literal[
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_insert",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
]
RandType = Literal["uniform", "gaussian", "special", "pareto"]
SysbenchCommand = Literal["prepare", "run", "cleanup"]

# Options the models or connection_args own; extra_args may not set them a second time,
# nor smuggle in a password or an options file.
_OWNED_OPTIONS = frozenset(
    {
        "--tables", "--table_size", "--table-size", "--threads", "--num-threads", "--time", "--max-time",
        "--report-interval", "--rand-type", "--point_selects", "--simple_ranges", "--sum_ranges",
        "--order_ranges", "--distinct_ranges", "--index_updates", "--non_index_updates", "--delete_inserts",
        "--skip_trx", "--histogram", "--percentile", "--forced-shutdown", "--events", "--max-requests",
        "--db-driver", "--config-file",
    }
)
_OWNED_PREFIXES = ("--pgsql-", "--mysql-")
# select_random_points/ranges assert this in their prepare and cleanup.
_SINGLE_TABLE_SCRIPTS = frozenset({"select_random_points", "select_random_ranges"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_extra_args(args: tuple[str, ...]) -> tuple[str, ...]:
    for arg in args:
        name = arg.split("=", 1)[0]
        if not arg.startswith("--") or name == "--":
            raise ValueError(f"'{arg}' is not a --option: extra_args only adds sysbench options")
        if name in _OWNED_OPTIONS or name.startswith(_OWNED_PREFIXES):
            raise ValueError(f"'{name}' is set by pgarena (a field of this workload or the target's endpoint)")
    return args


class SysbenchPrepare(_Strict):
    """The data set: `sysbench <script> prepare` creates tables sbtest1..N of table_size rows."""

    # Every OLTP script creates the same sbtest tables, so one prepare serves all of them.
    script: SysbenchScript = "oltp_read_write"
    tables: int = Field(1, ge=1)
    table_size: int = Field(10_000, ge=1, description="rows per table (sysbench's default: 10000)")
    threads: int = Field(1, ge=1, description="tables loaded in parallel, one per thread at a time")
    extra_args: tuple[str, ...] = Field((), description="further sysbench options, e.g. --create_secondary=off")

    @field_validator("extra_args")
    @classmethod
    def _extra_args(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_extra_args(value)

    @model_validator(mode="after")
    def _single_table_scripts(self) -> SysbenchPrepare:
        if self.script in _SINGLE_TABLE_SCRIPTS and self.tables != 1:
            raise ValueError(f"{self.script} supports only tables=1")
        return self


class SysbenchRun(_Strict):
    """One `sysbench <script> run`. A None count leaves the script's own default."""

    script: SysbenchScript = "oltp_read_write"
    threads: int = Field(1, ge=1, description="one connection per thread")
    duration_s: int = Field(ge=1)
    report_interval_s: int = Field(5, ge=1, description="seconds between interval lines")
    rand_type: RandType | None = Field(None, description="row id distribution; sysbench's default is special")
    # Statements per transaction (event), per kind. Setting all read kinds to 0 on
    # oltp_read_write gives the write-heavy test of the managed-services study.
    point_selects: int | None = Field(None, ge=0)
    simple_ranges: int | None = Field(None, ge=0)
    sum_ranges: int | None = Field(None, ge=0)
    order_ranges: int | None = Field(None, ge=0)
    distinct_ranges: int | None = Field(None, ge=0)
    index_updates: int | None = Field(None, ge=0)
    non_index_updates: int | None = Field(None, ge=0)
    delete_inserts: int | None = Field(None, ge=0)
    skip_trx: bool = Field(False, description="autocommit every statement instead of BEGIN/COMMIT")
    histogram: bool = False
    percentile: int | None = Field(None, ge=0, le=100, description="latency percentile; 0 turns it off; default 95")
    # sysbench's bare --forced-shutdown means 5% of --time (0 s at --time under 20, which cut a
    # 5 s fixture run off at its limit with exit 2): pgarena always gives the seconds.
    forced_shutdown_s: int | None = Field(
        None, ge=0, description="kill the run this long after duration_s if threads have not stopped"
    )
    extra_args: tuple[str, ...] = Field((), description="further sysbench options, e.g. --rand-seed=1")

    @field_validator("extra_args")
    @classmethod
    def _extra_args(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_extra_args(value)


def sysbench_binary() -> str:
    """SYSBENCH, else sysbench on PATH."""
    configured = os.environ.get("SYSBENCH")
    if configured:
        return configured
    found = shutil.which("sysbench")
    if not found:
        raise FileNotFoundError("sysbench not found: install it (apt-get install sysbench) or set SYSBENCH")
    return found


def connection_args(host: str, port: int, user: str, dbname: str) -> list[str]:
    """Where to connect. No password here: it goes in PGPASSWORD (see sysbench_env)."""
    return [
        "--db-driver=pgsql",
        f"--pgsql-host={host}",
        f"--pgsql-port={port}",
        f"--pgsql-user={user}",
        f"--pgsql-db={dbname}",
    ]


def sysbench_env(password: str | None, sslmode: str | None = None) -> dict[str, str]:
    """The libpq settings sysbench does not pass itself, so libpq reads them from the environment."""
    env = {"PGAPPNAME": "pgarena"}
    if sslmode is not None:
        env["PGSSLMODE"] = sslmode
    if password is not None:
        env["PGPASSWORD"] = password
    return env


def _opt(name: str, value: int | str | None) -> list[str]:
    return [] if value is None else [f"--{name}={value}"]


def prepare_args(prepare: SysbenchPrepare) -> list[str]:
    return [
        prepare.script,
        f"--tables={prepare.tables}",
        f"--table_size={prepare.table_size}",
        f"--threads={prepare.threads}",
        *prepare.extra_args,
        "prepare",
    ]


def run_args(run: SysbenchRun, data: SysbenchPrepare) -> list[str]:
    """The run command; `data` is the prepare it runs on (the script needs the same tables and table_size)."""
    return [
        run.script,
        f"--tables={data.tables}",
        f"--table_size={data.table_size}",
        f"--threads={run.threads}",
        f"--time={run.duration_s}",
        f"--report-interval={run.report_interval_s}",
        *_opt("rand-type", run.rand_type),
        *_opt("point_selects", run.point_selects),
        *_opt("simple_ranges", run.simple_ranges),
        *_opt("sum_ranges", run.sum_ranges),
        *_opt("order_ranges", run.order_ranges),
        *_opt("distinct_ranges", run.distinct_ranges),
        *_opt("index_updates", run.index_updates),
        *_opt("non_index_updates", run.non_index_updates),
        *_opt("delete_inserts", run.delete_inserts),
        *(["--skip_trx=on"] if run.skip_trx else []),
        *(["--histogram=on"] if run.histogram else []),
        *_opt("percentile", run.percentile),
        *_opt("forced-shutdown", run.forced_shutdown_s),
        *run.extra_args,
        "run",
    ]


def cleanup_args(data: SysbenchPrepare) -> list[str]:
    """Drops sbtest1..N. Runs in sysbench's main thread only: one connection."""
    return [data.script, f"--tables={data.tables}", "cleanup"]


def connections_used(command: SysbenchCommand, threads: int, tables: int = 1) -> int:
    """The most connections one sysbench command holds open at once.

    Counted on PostgreSQL 15 from log_connections (autovacuum off) and
    pg_stat_database.sessions, sysbench 1.0.20, OLTP scripts:
    - run: exactly one per thread, opened in thread_init and held to the end;
      no extra setup connection (threads 1, 4, 7, 8 -> 1, 4, 7, 8 sessions).
    - prepare: one per thread, plus one short-lived connection per table,
      opened while the loading thread's own connection is open (the pgsql
      driver's capability probe, which connects to read the server version,
      runs before each table's bulk insert). Totals: threads+tables sessions
      (1 thread/2 tables -> 3, 4/2 -> 6, 8/3 -> 11); at most one extra per
      thread at a time, hence threads + min(threads, tables) at once.
    - cleanup: one, whatever --threads says.
    """
    if command == "run":
        return threads
    if command == "prepare":
        return threads + min(threads, tables)
    return 1
