"""The server's counters over a run's window: the deltas of two snapshots, and the findings they make."""

from __future__ import annotations

from pgarena.analysis.findings import counter_findings, differences, hot_row, run_findings, server_findings
from pgarena.model.monitor import ConnectionReport, LockWait
from pgarena.model.results import TargetResult, WorkloadResult
from pgarena.model.server_counters import (
    CheckpointCounters,
    CounterSnapshot,
    CounterSnapshots,
    DatabaseCounters,
    ServerCounters,
    TableStats,
    WalCounters,
    counter_deltas,
)
from pgarena.model.tool_figures import ToolFigures


def _snapshot(epoch: float, **sections: object) -> CounterSnapshot:
    return CounterSnapshot(taken_at="t", epoch=epoch, server_version_num=150020, **sections)


def test_the_deltas_are_after_minus_before_and_a_counter_either_edge_missed_is_none():
    # Given two snapshots 8.5 s apart, the second missing pg_stat_wal (unreadable) and one table new
    before = _snapshot(
        100.0,
        database=DatabaseCounters(xact_commit=10, blks_hit=100, blks_read=5, temp_files=0, deadlocks=1),
        checkpoints=CheckpointCounters(checkpoints_req=3, checkpoints_timed=7, buffers_backend=None),
        wal=WalCounters(wal_records=1, wal_fpi=2, wal_bytes=3),
        tables=[TableStats(table="public.a", n_dead_tup=4, autovacuum_count=1, autoanalyze_count=0, last_autovacuum="x")],
    )
    after = _snapshot(
        108.5,
        database=DatabaseCounters(xact_commit=110, blks_hit=400, blks_read=105, temp_files=2, deadlocks=1),
        checkpoints=CheckpointCounters(checkpoints_req=4, checkpoints_timed=7, buffers_backend=None),
        tables=[
            TableStats(table="public.a", n_dead_tup=40, autovacuum_count=2, autoanalyze_count=0, last_autovacuum="y"),
            TableStats(table="public.b", n_dead_tup=0, autovacuum_count=0, autoanalyze_count=1),
        ],
        unreadable={"wal": "permission denied for view pg_stat_wal"},
        settings={"max_wal_size": "32MB"},
    )
    # When their deltas are taken
    c = counter_deltas(CounterSnapshots(before=before, after=after), "k")
    # Then each counter is after minus before
    assert c.window_s == 8.5 and c.raw == "k" and c.settings == {"max_wal_size": "32MB"}
    assert c.database is not None and (c.database.xact_commit, c.database.temp_files, c.database.deadlocks) == (100, 2, 0)
    assert c.database.xact_rollback is None
    assert c.checkpoints is not None and (c.checkpoints.checkpoints_req, c.checkpoints.checkpoints_timed) == (1, 0)
    assert c.checkpoints.buffers_backend is None
    assert c.cache_hit_ratio == 300 / 400
    # And a section one edge could not read is None, with the reason
    assert c.wal is None and c.unreadable == {"wal": "permission denied for view pg_stat_wal"}
    # And each table has its vacuum counts' deltas and dead rows at both edges; a new table counts from zero
    a, b = c.tables
    assert (a.table, a.autovacuum_count, a.n_dead_tup_before, a.n_dead_tup_after, a.autovacuumed_in_window) == (
        "public.a",
        1,
        4,
        40,
        True,
    )
    assert (b.table, b.autoanalyze_count, b.autovacuumed_in_window) == ("public.b", 1, False)


def _counters(**fields: object) -> ServerCounters:
    return ServerCounters(window_s=5.0, settings={"max_wal_size": "32MB", "shared_buffers": "128kB", "work_mem": "4MB"}, **fields)


def test_each_finding_names_its_figure_and_its_fix():
    c = _counters(
        database=DatabaseCounters(blks_hit=900, blks_read=100, temp_files=2, temp_bytes=2 << 20, deadlocks=1),
        checkpoints=CheckpointCounters(checkpoints_req=2),
        wal=WalCounters(wal_bytes=48 << 20, wal_fpi=1000),
        database_size_bytes=80 << 20,
        shared_buffers_bytes=128 << 10,
    )
    found = dict(counter_findings(c))
    assert set(found) == {"checkpoints_requested", "low_cache_hit_ratio", "temp_files", "deadlocks"}
    assert (
        "2 checkpoint(s) requested" in found["checkpoints_requested"] and "raise max_wal_size" in found["checkpoints_requested"]
    )
    assert "(32MB)" in found["checkpoints_requested"] and "48.0 MiB" in found["checkpoints_requested"]
    assert "cache hit ratio 0.900" in found["low_cache_hit_ratio"] and "shared_buffers 128kB" in found["low_cache_hit_ratio"]
    assert "database 80.0 MiB: the data does not fit: raise shared_buffers" in found["low_cache_hit_ratio"]
    # Data that fits in shared_buffers, read at most once into a cache cold after the load: no finding
    fits = c.model_copy(update={"shared_buffers_bytes": 128 << 20})
    assert "low_cache_hit_ratio" not in dict(counter_findings(fits))
    # but reading more blocks than the database holds, with the data fitting, is one, and says why it can be
    reread = fits.model_copy(update={"database": DatabaseCounters(blks_hit=90_000, blks_read=20_000)})
    assert "read more blocks than the database holds" in dict(counter_findings(reread))["low_cache_hit_ratio"]
    assert "2 temp file(s)" in found["temp_files"] and "work_mem (4MB)" in found["temp_files"]
    assert "1 deadlock(s)" in found["deadlocks"]
    # A run that stayed in shared_buffers and never checkpointed has none
    quiet = _counters(
        database=DatabaseCounters(blks_hit=1000, blks_read=1, temp_files=0, deadlocks=0),
        checkpoints=CheckpointCounters(checkpoints_req=0),
    )
    assert counter_findings(quiet) == []


def _run(name: str = "tpcb", clients: int = 8, scale: int | None = 1, **fields: object) -> WorkloadResult:
    return WorkloadResult(
        name=name,
        tool="pgbench",
        clients=clients,
        repetition=1,
        status="succeeded",
        tool_figures=ToolFigures(scale=scale),
        **fields,
    )


def test_a_scale_below_the_clients_gives_the_hot_row_hint_with_the_lock_waits_seen():
    waits = ConnectionReport(
        interval_s=1,
        samples=3,
        peak_benchmark=8,
        peak_total=9,
        peak_by_state={},
        longest_s_by_state={},
        lock_waits=[LockWait(waiting=5, wait_event="Lock:tuple", blocking_pid=42, blocking_query="UPDATE pgbench_branches")],
    )
    hint = hot_row(_run(connections=waits))
    assert hint is not None and "scale 1 is below the 8 clients" in hint and "Lock:tuple" in hint
    assert hot_row(_run(scale=8)) is None and hot_row(_run(scale=None)) is None


def test_targets_that_differ_at_one_point_say_so_and_targets_alike_do_not():
    checkpointed = _counters(checkpoints=CheckpointCounters(checkpoints_req=1))
    calm = _counters(checkpoints=CheckpointCounters(checkpoints_req=0))
    a = TargetResult(name="a", provider="embedded", status="succeeded", workloads=[_run(scale=10, server_counters=checkpointed)])
    b = TargetResult(name="b", provider="embedded", status="succeeded", workloads=[_run(scale=10, server_counters=calm)])
    [finding] = run_findings(a)
    assert (finding.kind, finding.source, finding.workload, finding.clients) == ("checkpoints_requested", "server", "tpcb", 8)
    assert run_findings(b) == []
    [differs] = server_findings([a, b])
    assert differs.target == "a" and differs.kind == "differs:checkpoints_requested"
    assert differs.message.startswith("requested checkpoints on a (1 checkpoint(s) requested during the run), not on b:")
    # Both checkpointed, or the other never measured the point: nothing to say
    both = a.model_copy(update={"name": "b"})
    assert server_findings([a, both]) == []
    assert differences(run_findings(a), {"a": {("tpcb", 8)}, "b": {("other", 8)}}) == []
