"""Connection leases: campaigns sharing a server never take more slots together than its budget allows.

One record per server (its resolved address and port: lease_key) lists the holders and their slots;
every change is a conditional write on the record's version, so two campaigns racing for the last
slots cannot both win. This is the port and its rule; the records live in DynamoDB
(pgarena.aws.leases.LeaseStore) or, for local campaigns each with its own in-memory moto, in files
shared by every local runtime (pgarena.local.leases.FileLeases): two `pgarena run --local` processes
see each other's leases as two executions in one AWS account do.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from abc import ABC, abstractmethod

from pgarena.model.errors import PgarenaError
from pgarena.model.lease import Holder
from pgarena.model.matrix import Endpoint
from pgarena.model.process import ProcessIdentity
from pgarena.server.restarts import resolve

log = logging.getLogger(__name__)


def lease_key(endpoint: Endpoint, addresses: list[str] | None = None) -> str:
    """One server, one key however its host is written (localhost, 127.0.0.1, LOCALHOST): its canonical
    resolved address and port. Acquire and release both make it here from the endpoint; `addresses`
    spares preflight a second lookup. A name that does not resolve is keyed by itself, lower-cased."""
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


class Leases(ABC):
    """One interface, two stores: `read` a server's live holders with the record's version, and
    `_write` them back only if the version is still the one read."""

    clock = staticmethod(time.time)

    @abstractmethod
    def _read_all(self, key: str) -> tuple[list[Holder], int]:
        """Every holder recorded (expired ones too) and the record's version (0 when there is none)."""

    @abstractmethod
    def _write(self, key: str, holders: list[Holder], version: int) -> bool:
        """Replace the holders if the record is still at `version`; False if another writer was first."""

    def _identity(self) -> ProcessIdentity | None:
        """The process taking a lease, recorded in it where the store can later tell whether it still runs."""
        return None

    def _gone(self, holder: Holder) -> bool:
        """Whether the holder's process is known to have ended (it cannot give its slots back itself)."""
        return False

    def read(self, key: str) -> tuple[list[Holder], int]:
        """Live holders (expired ones dropped) and the record's version (0 when there is no record). A
        holder whose process is gone (a coordinator SIGKILLed before it released) is released here, once."""
        while True:
            holders, version = self._read_all(key)
            gone = [h for h in holders if self._gone(h)]
            if not gone:
                break
            if self._write(key, [h for h in holders if h not in gone], version):
                for h in gone:
                    assert h.process is not None  # _gone tells only of recorded processes
                    log.warning(
                        "released %d slot(s) on %s held by campaign %s: its coordinator (pid %d on %s) is gone",
                        h.slots, key, campaign_of(h.holder), h.process.pid, h.process.host,
                    )  # fmt: skip
        now = self.clock()
        return [h for h in holders if h.expires_at > now], version

    def holders(self, key: str) -> dict[str, int]:
        """Live holder id -> slots."""
        holders, _ = self.read(key)
        return {h.holder: h.slots for h in holders}

    def held_by_others(self, key: str, holder: str) -> int:
        return sum(slots for name, slots in self.holders(key).items() if name != holder)

    def acquire(self, key: str, holder: str, slots: int, capacity: int, ttl_s: float) -> bool:
        """Take `slots` if, with the other holders, they fit in `capacity`; False if they do not (yet)."""
        while True:
            holders, version = self.read(key)
            others = [h for h in holders if h.holder != holder]
            if sum(h.slots for h in others) + slots > capacity:
                return False
            mine = Holder(holder=holder, slots=slots, expires_at=self.clock() + ttl_s, process=self._identity())
            if self._write(key, [*others, mine], version):
                return True

    def release(self, key: str, holder: str) -> None:
        while True:
            holders, version = self.read(key)
            if version == 0 or not any(h.holder == holder for h in holders):
                return
            if self._write(key, [h for h in holders if h.holder != holder], version):
                return
