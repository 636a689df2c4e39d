"""The live monitor: samples pg_stat_activity through one dedicated connection while a workload runs.

Counts sessions by state and role, the longest time spent in each state, the benchmark's own
connections (tagged by application_name) and other clients' (background load: anything not of this
campaign, by application_name); a sudden fall of the benchmark's connections mid-run
(the 950 -> 628 collapse of the Azure study) is flagged as an incident. Benchmark sessions waiting
on a lock are named with their blocker, so a step that times out says who held it up, and a step
that waited (a load held up by another session's table lock) carries a `lock_wait` incident with
how long and on what: its time includes the wait. A lost
connection is recorded and opened again: a server frozen for a while is watched again when it answers.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from pgarena.model.matrix import Endpoint
from pgarena.model.monitor import ActivitySample, ConnectionReport, Incident, LockWait
from pgarena.server.identity import IDENTIFY_SESSION
from pgarena.server.postgres import CLIENT_SESSIONS, connect

# A fall of more than this fraction of the benchmark's connections between two samples is an incident.
CONNECTION_DROP_FRACTION = 0.25

ACTIVITY_SQL = (
    """
select coalesce(usename, 'unknown'), coalesce(state, 'unknown'), coalesce(application_name, ''),
       coalesce(extract(epoch from now() - state_change), 0)::float8
  from pg_stat_activity
 where """
    + CLIENT_SESSIONS
)


# The benchmark's sessions waiting on a lock, each with a session blocking it and that one's query.
LOCK_WAITS_SQL = """
select coalesce(a.wait_event_type, '') || ':' || coalesce(a.wait_event, ''), b.pid,
       split_part(coalesce(b.query, ''), E'\\n', 1), count(*)
  from pg_stat_activity a
 cross join lateral unnest(pg_blocking_pids(a.pid)) as blocker(pid)
  join pg_stat_activity b on b.pid = blocker.pid
 where a.application_name = %s and a.wait_event_type = 'Lock'
 group by 1, 2, 3
 order by 4 desc
"""
BLOCKING_QUERY_CHARS = 200
# A step's worker's own untagged sessions (pgarena.server.replication, restarts, pgarena.worker.facts).
WORKER_SESSIONS = frozenset({"pgarena-replication", "pgarena-check", "pgarena-rtt"})
BACKGROUND_NAMES_KEPT = 20
# A connection that failed is opened again after this many sampling intervals.
RECONNECT_INTERVALS = 1


def lock_waits_of(rows: list[tuple[str, int, str, int]]) -> list[LockWait]:
    return [
        LockWait(waiting=int(n), wait_event=event, blocking_pid=int(pid), blocking_query=query.strip()[:BLOCKING_QUERY_CHARS])
        for event, pid, query, n in rows
    ]


def is_background(name: str, application_name: str) -> bool:
    """A session not of the campaign measuring (its tag: the step's application_name without its last part;
    its other shards, its monitor and preflight share it), nor a waiting campaign's one-query identification."""
    ours = name.startswith(application_name.rsplit("/", 1)[0] + "/") or name in WORKER_SESSIONS
    return not ours and not (name.startswith("pgarena/") and name.endswith("/" + IDENTIFY_SESSION))


def sample_of(rows: list[tuple[str, str, str, float]], application_name: str, t_s: float) -> ActivitySample:
    longest: dict[str, float] = {}
    for _, state, _, seconds in rows:
        longest[state] = max(longest.get(state, 0.0), round(float(seconds), 3))
    background = [r for r in rows if is_background(r[2], application_name)]
    names = Counter(r[2] or f"({r[0]})" for r in background)
    return ActivitySample(
        t_s=round(t_s, 3),
        total=len(rows),
        benchmark=sum(1 for r in rows if r[2] == application_name),
        # 'unknown': a role without pg_read_all_stats does not see other roles' state; not counted as working
        background=len(background),
        background_active=sum(1 for r in background if r[1] not in ("idle", "unknown")),
        background_by_name=dict(names.most_common(BACKGROUND_NAMES_KEPT)),
        by_state=dict(Counter(r[1] for r in rows)),
        by_role=dict(Counter(r[0] for r in rows)),
        longest_s_by_state=longest,
    )


def detect_drops(samples: list[ActivitySample]) -> list[Incident]:
    """Sudden falls of the benchmark's connections. The last sample is left out: the tool closes its
    connections when it finishes, which is not a collapse."""
    incidents = []
    for before, after in zip(samples, samples[1:-1]):
        if before.benchmark > 0 and before.benchmark - after.benchmark > CONNECTION_DROP_FRACTION * before.benchmark:
            incidents.append(
                Incident(
                    kind="connection_drop",
                    at_s=after.t_s,
                    message=f"benchmark connections fell from {before.benchmark} to {after.benchmark} "
                    f"between {before.t_s:.1f} s and {after.t_s:.1f} s",
                )
            )
    return incidents


def lock_wait_incident(samples: list[ActivitySample], interval_s: float) -> Incident | None:
    """The step's sessions seen waiting on a lock: for about how long (the samples that saw a wait x the
    interval), from when, and on what (the longest-seen blocker)."""
    waited = [s for s in samples if s.lock_waits]
    if not waited:
        return None
    blockers = Counter(w.describe() for s in waited for w in s.lock_waits)
    blocker, _ = blockers.most_common(1)[0]
    return Incident(
        kind="lock_wait",
        at_s=waited[0].t_s,
        message=f"waited on a lock for about {len(waited) * interval_s:.1f} s from {waited[0].t_s:.1f} s: {blocker}; "
        "the step's time includes the wait",
    )


def report_of(samples: list[ActivitySample], interval_s: float, errors: list[Incident], run: bool = True) -> ConnectionReport:
    """`run`: a run's falls of the benchmark's connections are incidents (a load's close as it goes), and a
    load's lock waits (a run's clients wait on each other's row locks as they go: the hot-row finding reads
    those from `lock_waits`, and a moment's wait in one sample is no stall)."""
    peak_by_state: dict[str, int] = {}
    longest: dict[str, float] = {}
    background: dict[str, int] = {}
    for s in samples:
        for name, count in s.background_by_name.items():
            background[name] = max(background.get(name, 0), count)
        for state, count in s.by_state.items():
            peak_by_state[state] = max(peak_by_state.get(state, 0), count)
        for state, seconds in s.longest_s_by_state.items():
            longest[state] = max(longest.get(state, 0.0), seconds)
    return ConnectionReport(
        interval_s=interval_s,
        samples=len(samples),
        peak_benchmark=max((s.benchmark for s in samples), default=0),
        peak_total=max((s.total for s in samples), default=0),
        peak_by_state=peak_by_state,
        longest_s_by_state=longest,
        incidents=[
            *(detect_drops(samples) if run else []),
            *([] if run else [i for i in [lock_wait_incident(samples, interval_s)] if i]),
            *errors,
        ],
        lock_waits=next((s.lock_waits for s in reversed(samples) if s.lock_waits), []),
        peak_background=max((s.background for s in samples), default=0),
        peak_background_active=max((s.background_active for s in samples), default=0),
        background_by_name=dict(sorted(background.items(), key=lambda kv: -kv[1])[:BACKGROUND_NAMES_KEPT]),
        lock_wait_s=round(sum(interval_s for s in samples if s.lock_waits), 3),
    )


class Monitor:
    """Background sampler; use as a context manager around the tool's run."""

    def __init__(self, endpoint: Endpoint, application_name: str, interval_s: float, series_path: Path, run: bool = True):
        self.endpoint = endpoint
        self.run = run
        self.application_name = application_name
        self.interval_s = interval_s
        self.series_path = series_path
        self.samples: list[ActivitySample] = []
        self.errors: list[Incident] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        t0 = time.monotonic()
        # The monitor's own session is tagged with the step's campaign, as the step's are.
        own_name = self.application_name.rsplit("/", 1)[0] + "/monitor"
        # The series file is created by the first sample: absent when none was ever taken.
        while not self._stop.is_set():
            try:
                with connect(self.endpoint, application_name=own_name) as conn:
                    cursor = conn.cursor()
                    while True:
                        cursor.execute(ACTIVITY_SQL)
                        sample = sample_of(cursor.fetchall(), self.application_name, time.monotonic() - t0)
                        cursor.execute(LOCK_WAITS_SQL, (self.application_name,))
                        sample.lock_waits = lock_waits_of(cursor.fetchall())
                        self.samples.append(sample)
                        with self.series_path.open("a") as out:
                            out.write(sample.model_dump_json() + "\n")
                        if self._stop.wait(self.interval_s):
                            return
            except Exception as error:  # a monitor failure is recorded, never fatal to the measurement
                message = str(error)
                if not self.errors or self.errors[-1].message != message:  # one incident per outage
                    self.errors.append(Incident(kind="monitor_failed", at_s=round(time.monotonic() - t0, 3), message=message))
                self._stop.wait(self.interval_s * RECONNECT_INTERVALS)

    def __enter__(self) -> Monitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def report(self) -> ConnectionReport:
        return report_of(self.samples, self.interval_s, self.errors, self.run)
