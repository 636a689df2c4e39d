"""Preflight: read the target's live facts and take a connection budget before any benchmark connection opens."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from pgarena.aws.leases import Leases, holder_id, lease_key
from pgarena.model.budget import COORDINATOR_CONNECTIONS, ConnectionFacts, Sessions
from pgarena.model.errors import ErrorKind, PgarenaError, error_info, failure
from pgarena.model.plan import CAMPAIGN_TAG_RE, PlannedTarget, PreflightResult, Step, campaign_tag
from pgarena.model.redact import redact
from pgarena.model.results import ServerInfo, ServerSetting
from pgarena.planning.budget import apply_budget, compute_budget, held_by_other_campaigns
from pgarena.planning.shards import shard
from pgarena.server.postgres import CLIENT_SESSIONS, connect, describe
from pgarena.server.restarts import postmaster_started_at, reachable_address, resolve

if TYPE_CHECKING:
    from pg8000.dbapi import Cursor

LEASE_POLL_S = 2.0

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
    """Count open sessions. This campaign's own (tagged `own_tag`) are left out; other pgarena
    campaigns' are counted apart, by campaign (preflight weighs them against their leases)."""
    campaigns: Counter[str] = Counter()
    others = []
    for row in rows:
        tagged = re.match(CAMPAIGN_TAG_RE, row[3])
        if tagged is None:
            others.append(row)
        elif not (own_tag and row[3].startswith(own_tag + "/")):
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


def _lease_ttl_s(steps: list[Step]) -> float:
    return float(sum(step.timeout_s for step in steps))


def preflight(target: PlannedTarget, campaign_id: str, leases: Leases | None = None) -> PreflightResult:
    """Refuse or clamp the plan to the live budget, then lease the slots it will use. Slots other
    pgarena campaigns hold (leased, or open sessions of theirs) are waited for, up to lease_wait_s."""
    endpoint = target.endpoint
    # Resolved once, here; workers reuse the address when the endpoint asks (use_resolved_address).
    addresses = resolve(endpoint.host, endpoint.port)
    address = reachable_address(addresses, endpoint.port) if endpoint.use_resolved_address else next(iter(addresses), None)
    own = campaign_tag(campaign_id)
    key, holder = lease_key(target.endpoint), holder_id(campaign_id, target.name)
    with connect(endpoint, application_name=f"{own}/preflight") as conn:
        try:
            version, version_num, facts = read_facts(conn.cursor(), own)
            started_at = postmaster_started_at(conn.cursor())
            disclosed = disclose(conn.cursor())
            budget = compute_budget(facts, target.connections, target.pooler)
            deadline = time.monotonic() + target.connections.lease_wait_s
            while True:
                held = leases.holders(key) if leases else {}
                others = held_by_other_campaigns(held, holder, facts.sessions.by_campaign)
                short = target.connections_needed > budget.capacity - others
                if others and short and time.monotonic() < deadline:
                    time.sleep(LEASE_POLL_S)  # another campaign holds slots we need: wait for it to finish
                    sessions = read_sessions(conn.cursor(), facts.role, facts.database, own)
                    facts = facts.model_copy(
                        update={
                            "sessions": facts.sessions.model_copy(
                                update={"pgarena": sessions.pgarena, "by_campaign": sessions.by_campaign}
                            )
                        }
                    )
                    continue
                steps = apply_budget(target, budget, others)
                slots = max(step.connections for step in steps) + COORDINATOR_CONNECTIONS
                if leases is None or leases.acquire(
                    key, holder, slots, budget.capacity + COORDINATOR_CONNECTIONS, _lease_ttl_s(steps)
                ):
                    break
        except PgarenaError:
            raise
        except Exception as error:  # a statement timeout, a permission, a server going down under us
            message = describe(error)
            info = error_info(message, ErrorKind.PREFLIGHT_FAILED, f"reading {target.name}'s settings failed: {message}")
            raise failure(info.kind, info.message) from None
    server = ServerInfo(
        version=version,
        version_num=version_num,
        max_connections=facts.max_connections,
        facts=facts,
        budget=budget,
        leased_by_others=others,
        allowed=budget.capacity - others,
        connections_needed=target.connections_needed,
        clamped=any(step.requested_clients for step in steps),
        postmaster_started_at=started_at,
        address=address,
        **disclosed.model_dump(),
    )
    facts_for_workers = {"postmaster_started_at": started_at}
    if endpoint.use_resolved_address and address:
        facts_for_workers["hostaddr"] = address
    steps = [step.model_copy(update=facts_for_workers) for step in steps]
    return PreflightResult(server=server, steps=[shard(step) for step in steps])


def release(target: PlannedTarget, campaign_id: str, leases: Leases) -> None:
    leases.release(lease_key(target.endpoint), holder_id(campaign_id, target.name))
