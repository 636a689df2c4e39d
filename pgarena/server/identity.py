"""Which server a target is: read at preflight so that every campaign measuring one server, through any
of its names or addresses (127.0.0.1, 127.0.0.2, ::1, a DNS alias, a pooler), takes one lease."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pgarena.model.lease import ServerIdentity
from pgarena.server.postgres import describe

if TYPE_CHECKING:
    from pg8000.dbapi import Cursor

# The application_name suffix of the short session that reads who the server is, before a target queues
# for it: other campaigns' preflights leave it out of their budgets (it closes at once; it is no load).
IDENTIFY_SESSION = "identify"
# Every role may call both on PostgreSQL 15 (a managed service may revoke the first: then the second keys).
SYSTEM_IDENTIFIER_SQL = "select system_identifier::text from pg_control_system()"
# In microseconds since the epoch: the same number whatever the session's TimeZone.
STARTED_SQL = "select (extract(epoch from pg_postmaster_start_time()) * 1000000)::bigint"


def read_identity(cursor: Cursor) -> ServerIdentity:
    """The server's system identifier and its postmaster's start, each where the role may read it."""
    unreadable: list[str] = []
    system_identifier = _first_value(cursor, "pg_control_system", unreadable, SYSTEM_IDENTIFIER_SQL)
    started_us = _first_value(cursor, "pg_postmaster_start_time", unreadable, STARTED_SQL)
    return ServerIdentity(
        system_identifier=str(system_identifier) if system_identifier is not None else None,
        started_us=int(str(started_us)) if started_us is not None else None,
        unreadable=unreadable,
    )


def _first_value(cursor: Cursor, what: str, unreadable: list[str], sql: str = SYSTEM_IDENTIFIER_SQL) -> object:
    """The statement's first value, or None (and why, in `unreadable`) where the role may not read it."""
    try:
        cursor.execute(sql)
        value: object = cursor.fetchone()[0]
    except Exception as error:  # a permission a managed service revoked: the next fact, or the addresses, key it
        unreadable.append(f"{what}: {describe(error)}")
        return None
    return value
