"""Server restarts and name resolution: facts preflight records once and the worker checks again.

A restart is seen as `pg_postmaster_start_time()` changing: a crash (the Azure study's PANIC), a
failover or an operator's restart all start a new postmaster. Resolving the host name once at
preflight, and letting workers connect to that address, is the Azure study's DNS workaround.
"""

from __future__ import annotations

import socket
import time
from datetime import datetime
from typing import TYPE_CHECKING

from pgarena.model.errors import ErrorKind, failure
from pgarena.model.matrix import Endpoint
from pgarena.server.postgres import connect

if TYPE_CHECKING:
    from pg8000.dbapi import Cursor

POSTMASTER_SQL = "select pg_postmaster_start_time()"
# After a failed step, how long the worker waits for the server to answer again before it gives up
# telling a restart from an outage: long enough for crash recovery of a small server, short enough
# not to hold a worker (and its bill) for long.
RESTART_WAIT_S = 20.0
RESTART_POLL_S = 1.0
# Failures a restart causes: only these wait for the server to come back before it is checked.
RESTART_SUSPECTS = frozenset({"server_closed_connection", "connection_refused", "connection_failed", "tool_failed"})
# A TCP probe of each resolved address, when the endpoint asks to use the address.
PROBE_TIMEOUT_S = 3.0


def postmaster_started_at(cursor: Cursor) -> str:
    cursor.execute(POSTMASTER_SQL)
    started: datetime = cursor.fetchone()[0]
    return started.isoformat()


def read_postmaster_start(endpoint: Endpoint, wait_s: float = 0.0, application_name: str = "pgarena-check") -> str | None:
    """The server's postmaster start time, trying for up to `wait_s`; None when it never answered."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with connect(endpoint, application_name=application_name) as conn:
                return postmaster_started_at(conn.cursor())
        except Exception:  # down, restarting, refusing: try again until the deadline
            if time.monotonic() >= deadline:
                return None
            time.sleep(RESTART_POLL_S)


def restart_evidence(before: str | None, after: str | None, preflight: str | None = None) -> str | None:
    """A message saying the server restarted between `before` and `after`, or None when it did not (or
    it cannot be told: the server never answered)."""
    if before is None or after is None or before == after:
        return None
    seen = f"; preflight saw {preflight}" if preflight and preflight != before else ""
    return f"the server restarted during the step: pg_postmaster_start_time() was {before} before it and {after} after it{seen}"


def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, in the resolver's order; a failure is a dns_failure."""
    if host.startswith("/"):  # a Unix socket directory: nothing to resolve
        return []
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise failure(ErrorKind.DNS_FAILURE, f'could not translate host name "{host}" to an address: {error}') from None
    addresses: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0])  # an IP string for the stream sockets asked for
        if address not in addresses:
            addresses.append(address)
    return addresses


def reachable_address(addresses: list[str], port: int, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """The first address that accepts a TCP connection (a name may resolve to ::1 and 127.0.0.1 while the
    server listens on one of them only); the first address when none does; None when there is none."""
    for address in addresses:
        try:
            with socket.create_connection((address, port), timeout=timeout_s):
                return address
        except OSError:
            continue
    return addresses[0] if addresses else None
