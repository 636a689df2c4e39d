"""Findings from the server's own counters over each run's window, each with its figure and its fix:
checkpoints requested, a low cache hit ratio, temp files, deadlocks, autovacuum on the benchmark's
tables, a hot row (lock waits when the scale is below the clients); and where two targets differ in
these at the same point, which a ranking between them should say. Pure."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from pgarena.analysis.metrics import nominal_clients
from pgarena.model.metrics import Finding
from pgarena.model.results import TargetResult, WorkloadResult
from pgarena.model.server_counters import ServerCounters

# Below this share of blocks found in shared_buffers, a run reads from the OS cache or the disk.
CACHE_HIT_RATIO_MIN = 0.99
# The lock waits a hot row makes: clients updating the same row wait on its tuple lock or on the
# transaction that holds it.
HOT_ROW_WAITS = ("Lock:tuple", "Lock:transactionid")
MIB = 1 << 20
SHOWN_WAITS = 2

# The kinds of findings two targets can differ in, with how each reads.
DIFFERING = {
    "checkpoints_requested": "requested checkpoints",
    "low_cache_hit_ratio": "cache misses",
    "temp_files": "temp files",
    "deadlocks": "deadlocks",
    "autovacuum": "autovacuum",
}


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / MIB:.1f} MiB"


def _setting(c: ServerCounters, name: str) -> str:
    return c.settings.get(name, "unknown")


def _checkpoints(c: ServerCounters) -> Iterator[tuple[str, str]]:
    requested = c.checkpoints.checkpoints_req if c.checkpoints else None
    if requested:
        wal = f"; WAL written {_mib(c.wal.wal_bytes)}, {c.wal.wal_fpi} full-page images" if c.wal else ""
        yield (
            "checkpoints_requested",
            f"{requested} checkpoint(s) requested during the run{wal}: WAL passed max_wal_size "
            f"({_setting(c, 'max_wal_size')}); raise max_wal_size so checkpoints come from checkpoint_timeout "
            f"({_setting(c, 'checkpoint_timeout')})",
        )


# PostgreSQL's default block size: blks_read counts blocks of it.
BLOCK_BYTES = 8192


def _cache(c: ServerCounters) -> Iterator[tuple[str, str]]:
    ratio = c.cache_hit_ratio
    if ratio is None or ratio >= CACHE_HIT_RATIO_MIN or c.database is None:
        return
    fits = (
        c.shared_buffers_bytes is not None
        and c.database_size_bytes is not None
        and c.shared_buffers_bytes >= c.database_size_bytes
    )
    read_bytes = (c.database.blks_read or 0) * BLOCK_BYTES
    if fits and c.database_size_bytes is not None and read_bytes <= c.database_size_bytes:
        # Data that fits read at most once into a cache cold after the load: not a finding (the counters span
        # the whole run, warm-up included, so no warm-up setting leaves these reads out).
        return
    fix = (
        "the data fits in it, yet the run read more blocks than the database holds: something else shares or "
        "empties the cache (another load, a restart)"
        if fits
        else "the data does not fit: raise shared_buffers, or read the run as one that reads from outside it"
    )
    yield (
        "low_cache_hit_ratio",
        f"cache hit ratio {ratio:.3f} (blks_hit {c.database.blks_hit}, blks_read {c.database.blks_read}) below "
        f"{CACHE_HIT_RATIO_MIN:g}; shared_buffers {_setting(c, 'shared_buffers')}, database {_mib(c.database_size_bytes)}: {fix}",
    )


def _temp_and_deadlocks(c: ServerCounters) -> Iterator[tuple[str, str]]:
    db = c.database
    if db is None:
        return
    if db.temp_files:
        yield (
            "temp_files",
            f"{db.temp_files} temp file(s), {_mib(db.temp_bytes)}, written during the run: sorts and hashes spilled "
            f"past work_mem ({_setting(c, 'work_mem')}); raise work_mem",
        )
    if db.deadlocks:
        yield (
            "deadlocks",
            f"{db.deadlocks} deadlock(s) during the run: transactions updating the same rows in different orders; "
            "make them take their locks in one order",
        )


def _autovacuum(c: ServerCounters) -> Iterator[tuple[str, str]]:
    tables = [t for t in c.tables if t.autovacuum_count or t.autoanalyze_count or t.autovacuumed_in_window]
    if tables:
        named = ", ".join(
            f"{t.table} (autovacuum {t.autovacuum_count or 0}, autoanalyze {t.autoanalyze_count or 0}, "
            f"dead rows {t.n_dead_tup_before} -> {t.n_dead_tup_after})"
            for t in tables
        )
        yield (
            "autovacuum",
            f"autovacuum ran on the benchmark's tables during the run: {named}; VACUUM ANALYZE after the load, "
            "or read the run as one that shared the server with autovacuum",
        )


def counter_findings(c: ServerCounters) -> list[tuple[str, str]]:
    """(kind, message) for every finding one run's counters make."""
    return [*_checkpoints(c), *_cache(c), *_temp_and_deadlocks(c), *_autovacuum(c)]


def hot_row(w: WorkloadResult) -> str | None:
    """The hint for a run whose clients outnumber the rows they all update (pgbench's branches: one per
    scale unit), with the lock waits the monitor saw."""
    scale, clients = w.tool_figures.scale, w.clients
    if scale is None or clients is None or scale >= clients:
        return None
    waits = [lw for lw in (w.connections.lock_waits if w.connections else []) if lw.wait_event in HOT_ROW_WAITS]
    seen = "; the monitor saw " + "; ".join(lw.describe() for lw in waits[:SHOWN_WAITS]) if waits else ""
    return (
        f"scale {scale} is below the {clients} clients: they update {scale} hot row(s) (one branch row per unit of scale) and wait "
        f"on each other's row locks{seen}; raise the scale to at least the clients to measure the server, not the lock"
    )


def run_findings(target: TargetResult) -> list[Finding]:
    """A target's findings from its runs' counters and lock waits, each with the file that shows it."""
    found: list[Finding] = []
    for w in target.workloads:

        def finding(kind: str, message: str, raw: list[str], w: WorkloadResult = w) -> Finding:
            return Finding(
                target=target.name,
                source="server",
                kind=kind,
                message=message,
                workload=w.name,
                clients=nominal_clients(w),
                repetition=w.repetition,
                raw=raw,
            )

        if w.server_counters is not None:
            raw = [w.server_counters.raw] if w.server_counters.raw else []
            found.extend(finding(kind, message, raw) for kind, message in counter_findings(w.server_counters))
        hint = hot_row(w)
        if hint is not None:
            found.append(finding("hot_row", hint, [w.connections.raw] if w.connections and w.connections.raw else w.raw[:1]))
    return found


def _figure(message: str) -> str:
    """A finding's figure: its message up to the first explanation."""
    return message.split(";")[0].split(":")[0]


def differences(findings: list[Finding], measured: dict[str, set[tuple[str, int | None]]]) -> list[Finding]:
    """Where one target had a finding at a point and another target measured at the same point did not:
    a ranking between them compares unlike runs, and says so. `measured`: target -> its points with counters."""
    had: dict[tuple[str, str, int | None], dict[str, str]] = defaultdict(dict)
    for f in findings:
        if f.kind in DIFFERING and f.workload is not None:
            had[(f.kind, f.workload, f.clients)].setdefault(f.target, _figure(f.message))  # its first run's
    found = []
    for (kind, workload, clients), targets in had.items():
        without = sorted(t for t, points in measured.items() if (workload, clients) in points and t not in targets)
        if not without:
            continue
        for target, figure in sorted(targets.items()):
            found.append(
                Finding(
                    target=target,
                    source="server",
                    kind=f"differs:{kind}",
                    message=f"{DIFFERING[kind]} on {target} ({figure}), not on {', '.join(without)}: "
                    "their ranking at this point compares unlike runs",
                    workload=workload,
                    clients=clients,
                )
            )
    return found


def server_findings(targets: list[TargetResult]) -> list[Finding]:
    """Where the targets' counter findings differ (results.json's `findings`)."""
    found = [f for t in targets for f in run_findings(t)]
    measured = {t.name: {(w.name, nominal_clients(w)) for w in t.workloads if w.server_counters is not None} for t in targets}
    return differences(found, measured)
