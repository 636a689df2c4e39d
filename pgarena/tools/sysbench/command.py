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

from pgarena.tools.sysbench.spec import SysbenchPrepare, SysbenchRun

BINARY_ENV = "SYSBENCH"


def sysbench_binary() -> str:
    """SYSBENCH, else sysbench on PATH."""
    configured = os.environ.get(BINARY_ENV)
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
