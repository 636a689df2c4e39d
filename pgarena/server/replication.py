"""Sustainable replication throughput (METHODOLOGY.md section 4).

After a measured run the worker reads the primary's WAL position, then polls each replica until it
has replayed that far (or a timeout passes): the time it took is the replica's catch-up time, and

    sustainable tps = transactions / (run time + catch-up time of the slowest replica)

is what the primary and its replicas sustain together. During the run the lag of each replica is
sampled every monitor interval and kept as raw output (`replication.jsonl`, one JSON line per replica
per sample).

How a replica's progress is read depends on its kind:

- physical: `pg_last_wal_replay_lsn()` on the standby;
- logical: `received_lsn` / `latest_end_lsn` of the subscription in `pg_stat_subscription` on the
  subscriber (the apply worker applies each change before it reads the next, so what it has received
  is, within a message, what it has applied);
- managed: the replay LSN where the service answers it (RDS, Cloud SQL and Azure replicas do), else
  `pg_last_xact_replay_timestamp()`: the primary then commits an empty marker transaction when the
  run ends, and the replica has caught up once it has replayed a commit at least that recent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from pgarena.analysis.catch_up import lsn_to_int, peaks
from pgarena.model.matrix import Endpoint, Replica
from pgarena.model.replication import LagSample, Method, ReplicaCatchUp
from pgarena.server.postgres import connect

if TYPE_CHECKING:
    from pg8000.dbapi import Cursor

# How often a replica is polled while the worker waits for it to catch up: the catch-up time's resolution.
CATCH_UP_POLL_S = 0.1
APPLICATION_NAME = "pgarena-replication"
LAG_SERIES = "replication.jsonl"


PRIMARY_SQL = "select pg_current_wal_lsn()::text, clock_timestamp()"
# txid_current() gives the transaction an id, so its (empty) commit is written to the WAL and replayed:
# the marker a replica that only exposes replay timestamps is waited for.
MARKER_SQL = "select pg_current_wal_lsn()::text, clock_timestamp(), txid_current()"
REPLAY_LSN_SQL = "select pg_last_wal_replay_lsn()::text"
REPLAY_AT_SQL = "select pg_last_xact_replay_timestamp()"
# relid is null: the subscription's apply worker(s), not its table synchronisation workers.
SUBSCRIPTION_SQL = (
    "select received_lsn::text, latest_end_lsn::text from pg_stat_subscription where subname = %s and relid is null"
)


# --- pure ------------------------------------------------------------------------------------


# --- reading a replica's progress --------------------------------------------------------------


@dataclass
class Position:
    lsn: str | None = None
    at: datetime | None = None


@dataclass
class Probe:
    """One replica and the connection its progress is read through."""

    replica: Replica
    cursor: Any = None
    method: Method | None = None
    error: str | None = None

    def read(self) -> Position:
        if self.method == "replay_lsn":
            self.cursor.execute(REPLAY_LSN_SQL)
            return Position(lsn=self.cursor.fetchone()[0])
        if self.method == "subscription_lsn":
            self.cursor.execute(SUBSCRIPTION_SQL, (self.replica.subscription,))
            lsns = [lsn for row in self.cursor.fetchall() for lsn in row if lsn]
            return Position(lsn=max(lsns, key=lsn_to_int) if lsns else None)
        self.cursor.execute(REPLAY_AT_SQL)
        return Position(at=self.cursor.fetchone()[0])


def choose_method(replica: Replica, cursor: Cursor) -> Method:
    """Physical and logical replicas have one way; a managed one the replay LSN if it answers it."""
    if replica.kind == "logical":
        return "subscription_lsn"
    try:
        cursor.execute(REPLAY_LSN_SQL)
        lsn = cursor.fetchone()[0]
    except Exception:  # e.g. Aurora replicas: the function exists but the service refuses it
        if replica.kind == "physical":
            raise
        lsn = None
    if lsn is not None:
        return "replay_lsn"
    if replica.kind == "physical":
        raise RuntimeError(f"{replica.name} is not in recovery: pg_last_wal_replay_lsn() is null on a primary")
    return "replay_timestamp"


@dataclass
class PrimaryPosition:
    """Where the primary's WAL was, and its clock, at a sample or when the run ended."""

    lsn: str
    at: datetime


def caught_up(target: PrimaryPosition, position: Position) -> bool:
    if position.lsn is not None:
        return lsn_to_int(position.lsn) >= lsn_to_int(target.lsn)
    return position.at is not None and position.at >= target.at


def lag_of(primary: PrimaryPosition, position: Position) -> dict[str, Any]:
    if position.lsn is not None:
        return {"replica_lsn": position.lsn, "lag_bytes": max(0, lsn_to_int(primary.lsn) - lsn_to_int(position.lsn))}
    if position.at is not None:
        return {"replay_at": position.at.isoformat(), "lag_s": round(max(0.0, (primary.at - position.at).total_seconds()), 3)}
    return {}


@dataclass
class CatchUpClock:
    """Injected time, so the waiting logic is tested without sleeping."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def wait_for_catch_up(
    probes: list[Probe],
    target: PrimaryPosition,
    record: Callable[[Probe, Position | None, str | None], None],
    clock: CatchUpClock | None = None,
    poll_s: float = CATCH_UP_POLL_S,
) -> dict[str, tuple[bool, float | None, float]]:
    """Poll every replica until each has reached `target` or its timeout passed.

    Returns name -> (caught up, catch-up seconds, seconds waited); `record` sees every reading.
    """
    clock = clock or CatchUpClock()
    start = clock.now()
    pending = {p.replica.name: p for p in probes if p.method is not None}
    done: dict[str, tuple[bool, float | None, float]] = {p.replica.name: (False, None, 0.0) for p in probes if p.method is None}
    while pending:
        for name, probe in list(pending.items()):
            try:
                position, error = probe.read(), None
            except Exception as failure:  # a replica that stops answering is waited for until its timeout
                position, error = None, str(failure)
            record(probe, position, error)
            elapsed = clock.now() - start
            if position is not None and caught_up(target, position):
                done[name] = (True, round(elapsed, 3), round(elapsed, 3))
                del pending[name]
            elif elapsed >= probe.replica.catch_up_timeout_s:
                done[name] = (False, None, round(elapsed, 3))
                del pending[name]
        if pending:
            clock.sleep(poll_s)
    return done


# --- the sampler ------------------------------------------------------------------------------


class ReplicationMonitor:
    """Samples each replica's lag while the run goes on, then times its catch-up.

    Use as a context manager around the tool's run; call `catch_up()` as soon as the tool has exited.
    One connection to the primary (the budget's monitor slot) and one to each replica.
    """

    def __init__(
        self, primary: Endpoint, replicas: list[Replica], interval_s: float, series_path: Path, clock: CatchUpClock | None = None
    ):
        self.primary = primary
        self.replicas = replicas
        self.interval_s = interval_s
        self.series_path = series_path
        self.clock = clock or CatchUpClock()
        self.samples: list[LagSample] = []
        self.probes: list[Probe] = []
        self._stack = ExitStack()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._out: IO[str] | None = None
        self._primary: Cursor | None = None
        self.error: str | None = None
        self._t0 = 0.0
        self._lock = threading.Lock()

    def __enter__(self) -> ReplicationMonitor:
        self._t0 = self.clock.now()
        self._out = self._stack.enter_context(self.series_path.open("w"))
        try:
            self._primary = self._stack.enter_context(connect(self.primary, application_name=APPLICATION_NAME)).cursor()
        except Exception as error:  # the run finds out for itself; the replicas cannot be timed
            self.error = f"connecting to the primary failed: {error}"
            return self
        for replica in self.replicas:
            probe = Probe(replica)
            try:
                probe.cursor = self._stack.enter_context(connect(replica.endpoint, application_name=APPLICATION_NAME)).cursor()
                probe.method = choose_method(replica, probe.cursor)
            except Exception as error:  # recorded on the replica; the run itself goes on
                probe.error = str(error)
            self.probes.append(probe)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self._stack.close()

    def _where_primary_is(self, sql: str = PRIMARY_SQL) -> PrimaryPosition:
        assert self._primary is not None  # only sampled once connected
        self._primary.execute(sql)
        lsn, at, *_ = self._primary.fetchone()
        return PrimaryPosition(lsn=lsn, at=at)

    def _record(
        self,
        stage: Literal["run", "catch_up"],
        primary: PrimaryPosition | None,
        probe: Probe,
        position: Position | None,
        error: str | None,
    ) -> None:
        sample = LagSample(
            t_s=round(self.clock.now() - self._t0, 3),
            stage=stage,
            replica=probe.replica.name,
            primary_lsn=primary.lsn if primary else None,
            **(lag_of(primary, position) if primary and position else {}),
            error=error,
        )
        self._write(sample)

    def _write(self, sample: LagSample) -> None:
        assert self._out is not None  # opened on __enter__
        with self._lock:
            self.samples.append(sample)
            self._out.write(sample.model_dump_json() + "\n")
            self._out.flush()

    def _sample(self) -> None:
        primary = self._where_primary_is()
        for probe in self.probes:
            if probe.method is None:
                continue
            try:
                self._record("run", primary, probe, probe.read(), None)
            except Exception as error:
                self._record("run", primary, probe, None, str(error))

    def _run(self) -> None:
        while True:
            try:
                self._sample()
            except Exception as error:  # the primary went away: the lag cannot be read, the run goes on
                self._write(
                    LagSample(
                        t_s=round(self.clock.now() - self._t0, 3),
                        stage="run",
                        replica="*",
                        error=f"reading the primary's WAL position failed: {error}",
                    )
                )
            if self._stop.wait(self.interval_s):
                return

    def catch_up(self) -> list[ReplicaCatchUp]:
        """Stop sampling, read where the primary's WAL ends, and wait for each replica to replay that far."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        if self._primary is None:
            return [self._result(Probe(r), None, (False, None, 0.0), self.error) for r in self.replicas]
        needs_marker = any(p.method == "replay_timestamp" for p in self.probes)
        try:
            target = self._where_primary_is(MARKER_SQL if needs_marker else PRIMARY_SQL)
        except Exception as error:
            return [
                self._result(p, None, (False, None, 0.0), f"reading the primary's WAL position failed: {error}")
                for p in self.probes
            ]
        every = max(1, round(self.interval_s / CATCH_UP_POLL_S))
        polls: dict[str, int] = {}

        def record(probe: Probe, position: Position | None, error: str | None) -> None:
            name = probe.replica.name
            polls[name] = polls.get(name, 0) + 1
            reached = position is not None and caught_up(target, position)
            # Keep one reading per sampling interval, and the one that shows the replica caught up.
            if reached or error or polls[name] % every == 1 or every == 1:
                self._record("catch_up", target, probe, position, error)

        waited = wait_for_catch_up(self.probes, target, record, self.clock)
        return [self._result(p, target, waited[p.replica.name], p.error) for p in self.probes]

    def _result(
        self, probe: Probe, target: PrimaryPosition | None, waited: tuple[bool, float | None, float], error: str | None
    ) -> ReplicaCatchUp:
        reached, catch_up_s, waited_s = waited
        peak_bytes, peak_s = peaks(self.samples, probe.replica.name)
        return ReplicaCatchUp(
            name=probe.replica.name,
            kind=probe.replica.kind,
            method=probe.method,
            target_lsn=target.lsn if target else None,
            target_at=target.at.isoformat() if target and probe.method == "replay_timestamp" else None,
            caught_up=reached,
            catch_up_s=catch_up_s,
            waited_s=waited_s,
            timeout_s=probe.replica.catch_up_timeout_s,
            peak_lag_bytes=peak_bytes,
            peak_lag_s=peak_s,
            samples=sum(1 for s in self.samples if s.replica == probe.replica.name),
            error=error,
        )
