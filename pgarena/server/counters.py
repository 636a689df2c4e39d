"""Reading the server's counters at one edge of a run's window: one connection, one query per view, each
view read as the benchmark's role can (pg_monitor or none). A view that cannot be read is listed with
the reason and never fails the step; a server that cannot be reached gives no snapshot at all."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from pgarena.model.matrix import Endpoint
from pgarena.model.results import now_iso
from pgarena.model.server_counters import (
    CheckpointCounters,
    CounterSnapshot,
    DatabaseCounters,
    IoCounters,
    TableStats,
    WalCounters,
)
from pgarena.server.postgres import connect, describe

if TYPE_CHECKING:
    from pg8000.dbapi import Cursor

logger = Logger(service="pgarena-worker")

DATABASE_SQL = """
select xact_commit, xact_rollback, blks_read, blks_hit, temp_files, temp_bytes, deadlocks, conflicts
  from pg_stat_database where datname = current_database()
"""
# PostgreSQL 17 moved the checkpoint counters to pg_stat_checkpointer; buffers_backend went to pg_stat_io.
BGWRITER_SQL = """
select checkpoints_timed, checkpoints_req, buffers_checkpoint, buffers_clean, buffers_backend, buffers_alloc
  from pg_stat_bgwriter
"""
CHECKPOINTER_SQL = """
select c.num_timed, c.num_requested, c.buffers_written, b.buffers_clean, null::bigint, b.buffers_alloc
  from pg_stat_checkpointer c, pg_stat_bgwriter b
"""
WAL_SQL = "select wal_records, wal_fpi, wal_bytes::bigint from pg_stat_wal"
IO_SQL = """
select coalesce(sum(reads), 0)::bigint, coalesce(sum(writes), 0)::bigint, coalesce(sum(extends), 0)::bigint,
       coalesce(sum(hits), 0)::bigint, coalesce(sum(evictions), 0)::bigint, coalesce(sum(fsyncs), 0)::bigint
  from pg_stat_io
"""
TABLES_SQL = """
select schemaname || '.' || relname, n_live_tup, n_dead_tup, vacuum_count, autovacuum_count, analyze_count,
       autoanalyze_count, last_autovacuum, last_autoanalyze
  from pg_stat_user_tables order by 1 limit %s
"""
MAX_TABLES = 100
# The two snapshots' file beside the tool's output.
COUNTERS_FILE = "server-counters.json"
# The benchmark's sessions flush their statistics when they exit: the closing snapshot waits for them
# to be gone (pgbench's backends may still be exiting when pgbench has), up to this long.
SESSIONS_GONE_WAIT_S = 5.0
SESSIONS_SQL = "select count(*) from pg_stat_activity where application_name = %s"
POLL_S = 0.1

# The settings the findings name in their fixes.
SETTINGS = ("shared_buffers", "max_wal_size", "checkpoint_timeout", "work_mem")
SETTINGS_SQL = "select name, current_setting(name) from pg_settings where name = any(%s)"

WAL_MAJOR, IO_MAJOR, CHECKPOINTER_MAJOR = 14, 16, 17


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def _row(cursor: Cursor) -> list[Any]:
    """The executed statement's one row, as integers."""
    row = cursor.fetchone()
    return [None if v is None else int(v) for v in row] if row is not None else []


def _database(cursor: Cursor, version_num: int) -> DatabaseCounters:
    cursor.execute(DATABASE_SQL)
    return DatabaseCounters(**dict(zip(DatabaseCounters.model_fields, _row(cursor), strict=False)))


def _checkpoints(cursor: Cursor, version_num: int) -> CheckpointCounters:
    if version_num >= CHECKPOINTER_MAJOR * 10000:
        cursor.execute(CHECKPOINTER_SQL)
    else:
        cursor.execute(BGWRITER_SQL)
    return CheckpointCounters(**dict(zip(CheckpointCounters.model_fields, _row(cursor), strict=False)))


def _wal(cursor: Cursor, version_num: int) -> WalCounters | None:
    if version_num < WAL_MAJOR * 10000:
        raise LookupError(f"pg_stat_wal is new in PostgreSQL {WAL_MAJOR}")
    cursor.execute(WAL_SQL)
    return WalCounters(**dict(zip(WalCounters.model_fields, _row(cursor), strict=False)))


def _io(cursor: Cursor, version_num: int) -> IoCounters | None:
    if version_num < IO_MAJOR * 10000:
        raise LookupError(f"pg_stat_io is new in PostgreSQL {IO_MAJOR}")
    cursor.execute(IO_SQL)
    return IoCounters(**dict(zip(IoCounters.model_fields, _row(cursor), strict=False)))


def _tables(cursor: Cursor, version_num: int) -> list[TableStats]:
    cursor.execute(TABLES_SQL, (MAX_TABLES,))
    return [
        TableStats(
            table=str(row[0]),
            **dict(
                zip(
                    ["n_live_tup", "n_dead_tup", "vacuum_count", "autovacuum_count", "analyze_count", "autoanalyze_count"],
                    row[1:7],
                    strict=True,
                )
            ),
            last_autovacuum=_iso(row[7]),
            last_autoanalyze=_iso(row[8]),
        )
        for row in cursor.fetchall()
    ]


def _size(cursor: Cursor, version_num: int) -> int:
    cursor.execute("select pg_database_size(current_database())")
    return int(cursor.fetchone()[0])


def _shared_buffers(cursor: Cursor, version_num: int) -> int:
    cursor.execute("select pg_size_bytes(current_setting('shared_buffers'))")
    return int(cursor.fetchone()[0])


def _settings(cursor: Cursor, version_num: int) -> dict[str, str]:
    cursor.execute(SETTINGS_SQL, (list(SETTINGS),))
    return {str(name): str(value) for name, value in cursor.fetchall()}


SECTIONS: dict[str, Callable[[Cursor, int], Any]] = {
    "database": _database,
    "checkpoints": _checkpoints,
    "wal": _wal,
    "io": _io,
    "tables": _tables,
    "database_size_bytes": _size,
    "shared_buffers_bytes": _shared_buffers,
    "settings": _settings,
}


def _wait_gone(cursor: Cursor, application_name: str, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        cursor.execute(SESSIONS_SQL, (application_name,))
        if cursor.fetchone()[0] == 0 or time.monotonic() >= deadline:
            return
        time.sleep(POLL_S)


def read_counters(endpoint: Endpoint, application_name: str, own_name: str, wait_gone_s: float = 0.0) -> CounterSnapshot | None:
    """The counters now, each section the role could read; None when the server did not answer.
    `wait_gone_s`: how long to wait first for the sessions named application_name to exit."""
    try:
        with connect(endpoint, application_name=own_name) as conn:
            cursor = conn.cursor()
            if wait_gone_s > 0:
                _wait_gone(cursor, application_name, wait_gone_s)
            cursor.execute("select current_setting('server_version_num')::int")
            version_num = int(cursor.fetchone()[0])
            values: dict[str, Any] = {}
            unreadable: dict[str, str] = {}
            for name, read in SECTIONS.items():
                try:
                    values[name] = read(cursor, version_num)
                except Exception as error:  # permission denied, a view this major lacks: listed, never fatal
                    unreadable[name] = describe(error)
            return CounterSnapshot(
                taken_at=now_iso(), epoch=time.time(), server_version_num=version_num, unreadable=unreadable, **values
            )
    except Exception:  # the server down or full: the step goes on without its counters
        logger.exception("could not read the server's counters")
        return None
