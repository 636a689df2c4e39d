"""A target's live facts, read at preflight before any benchmark connection opens: connection limits and
sessions, the settings that differ from the defaults, extensions, the database's size."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from pgarena.model.budget import ConnectionFacts, Sessions
from pgarena.model.plan import CAMPAIGN_TAG_RE
from pgarena.model.redact import redact
from pgarena.model.results import ServerSetting
from pgarena.server.identity import IDENTIFY_SESSION
from pgarena.server.postgres import CLIENT_SESSIONS, describe

if TYPE_CHECKING:
    from pg8000.dbapi import Cursor

SETTINGS_SQL = """
select version(),
       current_setting('server_version_num')::int,
       current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int,
       coalesce(current_setting('reserved_connections', true), '0')::int,
       r.rolname, r.rolsuper, r.rolconnlimit, d.datname, d.datconnlimit
  from pg_roles r, pg_database d
 where r.rolname = current_user and d.datname = current_database()
"""
# pg_use_reserved_connections exists from PostgreSQL 16 on.
RESERVED_ROLE_SQL = "select pg_has_role(current_user, 'pg_use_reserved_connections', 'MEMBER')"
SESSIONS_SQL = (
    """
select usename, datname, coalesce(state, 'unknown'), coalesce(application_name, '')
  from pg_stat_activity
 where """
    + CLIENT_SESSIONS
)

# Full disclosure: what the server was told to do differently from PostgreSQL's defaults. 'override'
# (set by initdb or the server for this platform) and 'client'/'session' (set by pgarena's own
# connection, e.g. application_name) say nothing about how the target was configured.
NON_DEFAULT_SETTINGS_SQL = """
select name, setting, unit, source
  from pg_settings
 where source not in ('default', 'override', 'client', 'session')
 order by name
"""
EXTENSIONS_SQL = "select extname, extversion from pg_extension order by extname"
DATABASE_SIZE_SQL = "select pg_database_size(current_database())"


def sessions_of(rows: list[tuple[str | None, str | None, str, str]], role: str, database: str, own_tag: str = "") -> Sessions:
    """Count open sessions. This campaign's own (tagged `own_tag`) are left out, and other campaigns' brief
    identifying sessions (they close before waiting); other pgarena campaigns' are counted apart, by
    campaign (preflight weighs them against their leases)."""
    campaigns: Counter[str] = Counter()
    others = []
    for row in rows:
        tagged = re.match(CAMPAIGN_TAG_RE, row[3])
        if tagged is None:
            others.append(row)
        elif not (own_tag and row[3].startswith(own_tag + "/")) and not row[3].endswith("/" + IDENTIFY_SESSION):
            campaigns["pgarena/" + tagged.group(1)] += 1
    return Sessions(
        total=len(others),
        role=sum(1 for r in others if r[0] == role),
        database=sum(1 for r in others if r[1] == database),
        pgarena=sum(campaigns.values()),
        by_campaign=dict(campaigns),
        by_role=dict(Counter(r[0] or "unknown" for r in others)),
        by_state=dict(Counter(r[2] for r in others)),
    )


def read_sessions(cursor: Cursor, role: str, database: str, own_tag: str) -> Sessions:
    cursor.execute(SESSIONS_SQL)
    return sessions_of(cursor.fetchall(), role, database, own_tag)


def read_facts(cursor: Cursor, own_tag: str = "") -> tuple[str, int, ConnectionFacts]:
    cursor.execute(SETTINGS_SQL)
    version, version_num, max_conn, su_reserved, reserved, role, is_super, role_limit, database, db_limit = cursor.fetchone()
    can_use_reserved = False
    if version_num >= 160000:
        cursor.execute(RESERVED_ROLE_SQL)
        can_use_reserved = bool(cursor.fetchone()[0])
    facts = ConnectionFacts(
        max_connections=max_conn,
        superuser_reserved_connections=su_reserved,
        reserved_connections=reserved,
        role=role,
        role_is_superuser=is_super,
        role_can_use_reserved=can_use_reserved,
        role_conn_limit=role_limit,
        database=database,
        database_conn_limit=db_limit,
        sessions=read_sessions(cursor, role, database, own_tag),
    )
    return version, version_num, facts


class Disclosure(BaseModel):
    settings: list[ServerSetting] = Field(default_factory=list)
    extensions: dict[str, str] = Field(default_factory=dict)
    database_size_bytes: int | None = None
    unreadable: list[str] = Field(default_factory=list)


@contextmanager
def _noted(what: str, unreadable: list[str]) -> Iterator[None]:
    try:
        yield
    except Exception as error:  # a role without the right (managed services restrict some): say so, carry on
        unreadable.append(f"{what}: {describe(error)}")


def disclose(cursor: Cursor) -> Disclosure:
    """The target's non-default settings (secrets masked), extensions and database size, each where readable:
    a fact the role may not read is recorded as unreadable, never a reason to refuse the target."""
    unreadable: list[str] = []
    settings, extensions, size = [], [], None
    with _noted("pg_settings", unreadable):
        cursor.execute(NON_DEFAULT_SETTINGS_SQL)
        settings = cursor.fetchall()
    with _noted("pg_extension", unreadable):
        cursor.execute(EXTENSIONS_SQL)
        extensions = cursor.fetchall()
    with _noted("pg_database_size", unreadable):
        cursor.execute(DATABASE_SIZE_SQL)
        size = cursor.fetchone()[0]
    return Disclosure(
        # A conninfo setting (primary_conninfo) may hold a password.
        settings=[ServerSetting(name=n, setting=redact(str(v)), unit=u, source=src) for n, v, u, src in settings],
        extensions={name: version for name, version in extensions},
        database_size_bytes=size,
        unreadable=unreadable,
    )
