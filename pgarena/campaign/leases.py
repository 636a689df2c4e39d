"""Server leases: one campaign measures a server at a time, from its target's load to its release.

One record per server (its identity: server_key) lists its holders and the targets waiting for it, in
arrival order; only the queue's head may take the lease, and it takes the server alone unless every
holder opted in to sharing (`connections.share_server`: then slots are counted, as their budget allows).
Every change is a conditional write on the record's version, so two campaigns racing for one server
cannot both win. This is the port and its rule; the records live in DynamoDB
(pgarena.aws.leases.LeaseStore) or, for local campaigns each with its own in-memory moto, in files
shared by every local runtime (pgarena.local.leases.FileLeases): two `pgarena run --local` processes
see each other's leases as two executions in one AWS account do.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import NamedTuple

from pgarena.model.errors import PgarenaError
from pgarena.model.lease import Holder, LeaseRecord, ServerIdentity, Waiter
from pgarena.model.matrix import Endpoint
from pgarena.model.process import ProcessIdentity
from pgarena.server.restarts import resolve

log = logging.getLogger(__name__)

# A waiter renews its place while it waits; one that stops (its process died) leaves the queue this long after.
WAITER_TTL_S = 60.0


def server_key(identity: ServerIdentity, endpoint: Endpoint, addresses: list[str] | None = None) -> str:
    """One server, one key through any of its names and addresses: its system identifier; where the role may
    not read it, its postmaster's start (one per running server, readable by every role); else its address."""
    if identity.system_identifier:
        return f"pg-{identity.system_identifier}"
    if identity.started_us is not None:
        return f"pg-started-{identity.started_us}"
    return lease_key(endpoint, addresses)


def lease_key(endpoint: Endpoint, addresses: list[str] | None = None) -> str:
    """A server that could not tell who it is (or a release without preflight's key), keyed however its host
    is written (localhost, 127.0.0.1, LOCALHOST): its canonical resolved address and port; `addresses` spares
    preflight a second lookup. A name that does not resolve is keyed by itself, lower-cased."""
    if addresses is None:
        try:
            addresses = resolve(endpoint.host, endpoint.port)
        except PgarenaError:  # a dns_failure: still one key per name, and nothing to fail a release over
            addresses = []
    if not addresses:  # a Unix socket directory (a path, case kept) or a name that did not resolve
        host = endpoint.host if endpoint.host.startswith("/") else endpoint.host.lower()
        return f"{host}:{endpoint.port}"
    # IPv4 first, then the lowest: stable whichever order the resolver answers in
    address = str(min((ipaddress.ip_address(a) for a in addresses), key=lambda ip: (ip.version, ip)))
    return f"[{address}]:{endpoint.port}" if ":" in address else f"{address}:{endpoint.port}"


def holder_id(campaign_id: str, target: str) -> str:
    return f"{campaign_id}/{target}"


def campaign_of(holder: str) -> str:
    """The campaign id a holder id starts with (campaign ids hold no '/')."""
    return holder.split("/", 1)[0]


class Request(NamedTuple):
    """What a target asks of a server's lease."""

    holder: str
    shared: bool = False  # connections.share_server
    database: str | None = None
    instance: str | None = None  # the running server (ServerIdentity.started_us)


class Turn(NamedTuple):
    """Who a request must let go first: the waiters queued before it, and the holders it cannot be beside."""

    ahead: list[Waiter]
    holding: list[Holder]

    @property
    def clear(self) -> bool:
        return not self.ahead and not self.holding

    def describe(self) -> str:
        parts = [f"{h.holder} holds it{' (shared)' if h.shared else ''}" for h in self.holding]
        if self.ahead:
            parts.append(f"{len(self.ahead)} waiting before it ({', '.join(w.holder for w in self.ahead)})")
        return "; ".join(parts)


def _beside(holder: Holder, request: Request) -> bool:
    """Whether a holder may measure the server with the request: one of its own campaign's targets (its
    campaign chose to run them together: target_concurrency, a consolidation step), or both sharing."""
    return campaign_of(holder.holder) == campaign_of(request.holder) or (request.shared and holder.shared)


def turn_of(record: LeaseRecord, request: Request) -> Turn:
    """First come, first served: a request goes when no waiter arrived before it and every other holder may be
    beside it. A campaign already holding the server lets its other targets in ahead of the queue (its
    consolidation step's targets wait for each other at their start barrier)."""
    others = [h for h in record.holders if h.holder != request.holder]
    ahead: list[Waiter] = []
    if not any(campaign_of(h.holder) == campaign_of(request.holder) for h in others):
        for waiter in record.queue:
            if waiter.holder == request.holder:
                break
            ahead.append(waiter)
    return Turn(ahead=ahead, holding=[h for h in others if not _beside(h, request)])


def sharing_conflict(record: LeaseRecord, request: Request) -> Holder | None:
    """A holder beside which the request would measure the same database of the same running server: its tables
    are the ones this request would initialize (drop and create) under it."""
    for h in record.holders:
        if (
            h.holder != request.holder
            and _beside(h, request)
            and (h.database, h.instance) == (request.database, request.instance)
        ):
            return h
    return None


class Leases(ABC):
    """One interface, two stores: `read` a server's live record, and `_write` it back only if its version is
    still the one read."""

    clock = staticmethod(time.time)

    @abstractmethod
    def _read_all(self, key: str) -> LeaseRecord:
        """The record as stored (expired holders and waiters too); version 0 when there is none."""

    @abstractmethod
    def _write(self, key: str, record: LeaseRecord) -> bool:
        """Store `record` (as version + 1) if the stored one is still at `record.version`; False if another writer was first."""

    def _identity(self) -> ProcessIdentity | None:
        """The process taking a lease, recorded in it where the store can later tell whether it still runs."""
        return None

    def _gone(self, process: ProcessIdentity | None) -> bool:
        """Whether a recorded process is known to have ended (it cannot give its lease back itself)."""
        return False

    def read(self, key: str) -> LeaseRecord:
        """The live record: expired holders and waiters dropped. Those whose process is gone (a coordinator
        SIGKILLed before it released) are removed from the store here, once."""
        while True:
            record = self._read_all(key)
            gone = [h for h in record.holders if self._gone(h.process)]
            left = [w for w in record.queue if self._gone(w.process)]
            if not gone and not left:
                break
            kept = record.model_copy(
                update={
                    "holders": [h for h in record.holders if h not in gone],
                    "queue": [w for w in record.queue if w not in left],
                }
            )
            if self._write(key, kept):
                for h in gone:
                    assert h.process is not None  # _gone tells only of recorded processes
                    log.warning(
                        "released %d slot(s) on %s held by campaign %s: its coordinator (pid %d on %s) is gone",
                        h.slots, key, campaign_of(h.holder), h.process.pid, h.process.host,
                    )  # fmt: skip
        now = self.clock()
        return record.model_copy(
            update={
                "holders": [h for h in record.holders if h.expires_at > now],
                "queue": [w for w in record.queue if w.expires_at > now],
            }
        )

    def _change(self, key: str, change: Callable[[LeaseRecord], LeaseRecord | None]) -> tuple[LeaseRecord, bool]:
        """Apply `change` to the live record until the write wins: the record after, and whether it was written
        (not when `change` says None: the record as read)."""
        while True:
            record = self.read(key)
            changed = change(record)
            if changed is None:
                return record, False
            if self._write(key, changed):
                return changed, True

    def holders(self, key: str) -> dict[str, int]:
        """Live holder id -> slots."""
        return {h.holder: h.slots for h in self.read(key).holders}

    def held_by_others(self, key: str, holder: str) -> int:
        return sum(slots for name, slots in self.holders(key).items() if name != holder)

    def join(self, key: str, request: Request) -> LeaseRecord:
        """Queue for the server (kept in place, renewed, when already queued); the record after."""

        def joined(record: LeaseRecord) -> LeaseRecord | None:
            now = self.clock()
            mine = next((w for w in record.queue if w.holder == request.holder), None)
            if mine is not None and mine.expires_at - now > WAITER_TTL_S / 2:
                return None  # renewed recently enough: no write
            renewed = Waiter(
                holder=request.holder,
                shared=request.shared,
                since=mine.since if mine else now,
                expires_at=now + WAITER_TTL_S,
                process=self._identity(),
            )
            queue = [renewed if w.holder == request.holder else w for w in record.queue] if mine else [*record.queue, renewed]
            return record.model_copy(update={"queue": queue})

        return self._change(key, joined)[0]

    def leave(self, key: str, holder: str) -> None:
        """Out of the queue (a target that gave up waiting, or failed before it took the lease)."""
        self._change(
            key,
            lambda r: (
                r.model_copy(update={"queue": [w for w in r.queue if w.holder != holder]})
                if any(w.holder == holder for w in r.queue)
                else None
            ),
        )

    def acquire(self, key: str, request: Request, slots: int, capacity: int, ttl_s: float) -> bool:
        """Take the lease, leaving the queue, if it is the request's turn, no holder beside it uses its database,
        and its `slots` fit beside theirs in `capacity`; False if not (yet)."""

        def taken(record: LeaseRecord) -> LeaseRecord | None:
            others = [h for h in record.holders if h.holder != request.holder]
            if not turn_of(record, request).clear or sharing_conflict(record, request):
                return None
            if sum(h.slots for h in others) + slots > capacity:  # those beside it (sharing, or its campaign's)
                return None
            mine = Holder(
                holder=request.holder,
                slots=slots,
                expires_at=self.clock() + ttl_s,
                process=self._identity(),
                shared=request.shared,
                database=request.database,
                instance=request.instance,
            )
            return LeaseRecord(
                holders=[*others, mine], queue=[w for w in record.queue if w.holder != request.holder], version=record.version
            )

        return self._change(key, taken)[1]

    def release(self, key: str, holder: str) -> None:
        """Give the lease back, and any place in the queue."""

        def released(record: LeaseRecord) -> LeaseRecord | None:
            if not any(h.holder == holder for h in record.holders) and not any(w.holder == holder for w in record.queue):
                return None
            return LeaseRecord(
                holders=[h for h in record.holders if h.holder != holder],
                queue=[w for w in record.queue if w.holder != holder],
                version=record.version,
            )

        self._change(key, released)
