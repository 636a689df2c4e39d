"""The server's own counters around a run: two snapshots of its statistics views, read at the measured
window's edges (kept as raw evidence), and their deltas (the step summary's and results.json's
`server_counters`).

Each section is one view's counters, named the same on every major (PostgreSQL 17 moved the checkpoint
counters to pg_stat_checkpointer: they are read under the names pg_stat_bgwriter had); a section the
server has not (pg_stat_wal before 14, pg_stat_io before 16) or the role may not read is None, with the
reason in `unreadable`.
"""

from __future__ import annotations

from typing import Self, TypeVar

from pydantic import BaseModel, Field, computed_field


class _Counters(BaseModel):
    """Cumulative counters: a delta is each field's after minus its before (None when either is)."""

    def minus(self, before: Self) -> Self:
        values = {}
        for name in type(self).model_fields:
            after_value, before_value = getattr(self, name), getattr(before, name)
            values[name] = None if after_value is None or before_value is None else after_value - before_value
        return type(self)(**values)


class DatabaseCounters(_Counters):
    """pg_stat_database, the benchmark's database."""

    xact_commit: int | None = None
    xact_rollback: int | None = None
    blks_read: int | None = Field(None, description="blocks read from outside shared_buffers")
    blks_hit: int | None = Field(None, description="blocks found in shared_buffers")
    temp_files: int | None = None
    temp_bytes: int | None = None
    deadlocks: int | None = None
    conflicts: int | None = Field(None, description="queries cancelled by recovery conflicts (standbys)")


class CheckpointCounters(_Counters):
    """pg_stat_bgwriter (<= 16); pg_stat_checkpointer and pg_stat_bgwriter (17+)."""

    checkpoints_timed: int | None = Field(None, description="checkpoints started by checkpoint_timeout (17+: num_timed)")
    checkpoints_req: int | None = Field(
        None, description="checkpoints requested, mostly by WAL past max_wal_size (17+: num_requested)"
    )
    buffers_checkpoint: int | None = Field(None, description="buffers the checkpointer wrote (17+: buffers_written)")
    buffers_clean: int | None = Field(None, description="buffers the background writer wrote")
    buffers_backend: int | None = Field(None, description="buffers backends wrote themselves (<= 16; 17+: pg_stat_io)")
    buffers_alloc: int | None = None


class WalCounters(_Counters):
    """pg_stat_wal (14+)."""

    wal_records: int | None = None
    wal_fpi: int | None = Field(None, description="full-page images: the first change of a page after a checkpoint")
    wal_bytes: int | None = None


class IoCounters(_Counters):
    """pg_stat_io (16+), summed over backend types, objects and contexts."""

    reads: int | None = None
    writes: int | None = None
    extends: int | None = None
    hits: int | None = None
    evictions: int | None = None
    fsyncs: int | None = None


class TableStats(BaseModel):
    """One of the benchmark's tables in pg_stat_user_tables."""

    table: str = Field(description="schema.name")
    n_live_tup: int | None = None
    n_dead_tup: int | None = None
    vacuum_count: int | None = None
    autovacuum_count: int | None = None
    analyze_count: int | None = None
    autoanalyze_count: int | None = None
    last_autovacuum: str | None = None
    last_autoanalyze: str | None = None


class CounterSnapshot(BaseModel):
    """The counters as one edge of the window found them."""

    taken_at: str
    epoch: float = Field(description="Unix time the snapshot was read")
    server_version_num: int | None = None
    database: DatabaseCounters | None = None
    checkpoints: CheckpointCounters | None = None
    wal: WalCounters | None = None
    io: IoCounters | None = None
    tables: list[TableStats] | None = None
    database_size_bytes: int | None = Field(None, description="pg_database_size of the benchmark's database")
    shared_buffers_bytes: int | None = None
    settings: dict[str, str] = Field(
        default_factory=dict,
        description="the settings the findings name (shared_buffers, max_wal_size, work_mem...), as SHOW prints them",
    )
    unreadable: dict[str, str] = Field(default_factory=dict, description="section -> why it was not read")


class CounterSnapshots(BaseModel):
    """The raw evidence kept beside the tool's output (server-counters.json)."""

    before: CounterSnapshot
    after: CounterSnapshot


class TableActivity(BaseModel):
    """Vacuum and analyze on one table during the window, and its dead rows at each edge."""

    table: str
    n_dead_tup_before: int | None = None
    n_dead_tup_after: int | None = None
    vacuum_count: int | None = None
    autovacuum_count: int | None = None
    analyze_count: int | None = None
    autoanalyze_count: int | None = None
    autovacuumed_in_window: bool = Field(False, description="last_autovacuum moved during the window")


class ServerCounters(BaseModel):
    """The counters' deltas over the window; `raw` holds the two snapshots they are computed from."""

    window_s: float = Field(description="seconds between the two snapshots")
    server_version_num: int | None = None
    database: DatabaseCounters | None = None
    checkpoints: CheckpointCounters | None = None
    wal: WalCounters | None = None
    io: IoCounters | None = None
    tables: list[TableActivity] = Field(default_factory=list)
    database_size_bytes: int | None = Field(None, description="the benchmark's database at the window's end")
    shared_buffers_bytes: int | None = None
    settings: dict[str, str] = Field(default_factory=dict, description="the settings the findings name, at the window's end")
    unreadable: dict[str, str] = Field(default_factory=dict, description="counters not read, and why")
    raw: str | None = Field(None, description="the two snapshots (server-counters.json)")

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented use, which mypy does not know
    @property
    def cache_hit_ratio(self) -> float | None:
        """blks_hit / (blks_hit + blks_read) over the window; None without reads."""
        db = self.database
        if db is None or db.blks_hit is None or db.blks_read is None or db.blks_hit + db.blks_read == 0:
            return None
        return db.blks_hit / (db.blks_hit + db.blks_read)


def _tables(before: list[TableStats] | None, after: list[TableStats] | None) -> list[TableActivity]:
    """Each table at both edges, its counters' deltas (a table created in the window counts from zero)."""
    if after is None:
        return []
    found = {t.table: t for t in before or []}
    activity = []
    for table in after:
        was = found.get(
            table.table, TableStats(table=table.table, vacuum_count=0, autovacuum_count=0, analyze_count=0, autoanalyze_count=0)
        )

        def delta(name: str, now: TableStats = table, then: TableStats = was) -> int | None:
            a, b = getattr(now, name), getattr(then, name)
            return None if a is None or b is None else a - b

        activity.append(
            TableActivity(
                table=table.table,
                n_dead_tup_before=was.n_dead_tup,
                n_dead_tup_after=table.n_dead_tup,
                vacuum_count=delta("vacuum_count"),
                autovacuum_count=delta("autovacuum_count"),
                analyze_count=delta("analyze_count"),
                autoanalyze_count=delta("autoanalyze_count"),
                autovacuumed_in_window=table.last_autovacuum is not None and table.last_autovacuum != was.last_autovacuum,
            )
        )
    return activity


C = TypeVar("C", bound=_Counters)


def _minus(after: C | None, before: C | None) -> C | None:
    return None if after is None or before is None else after.minus(before)


def counter_deltas(snapshots: CounterSnapshots, raw: str | None = None) -> ServerCounters:
    """The window's deltas of every counter both snapshots read; a section either missed is unreadable."""
    before, after = snapshots.before, snapshots.after
    return ServerCounters(
        window_s=round(after.epoch - before.epoch, 3),
        server_version_num=after.server_version_num or before.server_version_num,
        database=_minus(after.database, before.database),
        checkpoints=_minus(after.checkpoints, before.checkpoints),
        wal=_minus(after.wal, before.wal),
        io=_minus(after.io, before.io),
        tables=_tables(before.tables, after.tables),
        database_size_bytes=after.database_size_bytes,
        shared_buffers_bytes=after.shared_buffers_bytes,
        settings=after.settings,
        unreadable={**before.unreadable, **after.unreadable},
        raw=raw,
    )
