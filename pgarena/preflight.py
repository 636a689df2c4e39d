"""Preflight: read the target's live facts before any benchmark connection opens."""

from __future__ import annotations

from pgarena.errors import BudgetRefused
from pgarena.plan import PlannedTarget
from pgarena.postgres import connect
from pgarena.results import ServerInfo

# The coordinator's own connection (this preflight) counts against the server's slots.
COORDINATOR_CONNECTIONS = 1

SERVER_FACTS_SQL = """
select version(),
       current_setting('server_version_num')::int,
       current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int,
       coalesce(current_setting('reserved_connections', true), '0')::int,
       (select count(*) from pg_stat_activity
         where backend_type = 'client backend' and pid <> pg_backend_pid())::int
"""


def budget_of(max_connections: int, superuser_reserved: int, reserved: int, other_sessions: int) -> int:
    """Slots left for the benchmark: what a non-superuser can get, minus sessions already held and our own."""
    return max_connections - superuser_reserved - reserved - other_sessions - COORDINATOR_CONNECTIONS


def preflight(target: PlannedTarget) -> ServerInfo:
    with connect(target.endpoint, application_name="pgarena-preflight") as conn:
        cursor = conn.cursor()
        cursor.execute(SERVER_FACTS_SQL)
        version, version_num, max_conn, su_reserved, reserved, others = cursor.fetchone()
    budget = budget_of(max_conn, su_reserved, reserved, others)
    info = ServerInfo(
        version=version,
        version_num=version_num,
        max_connections=max_conn,
        superuser_reserved_connections=su_reserved,
        reserved_connections=reserved,
        other_sessions=others,
        budget=budget,
        connections_needed=target.connections_needed,
    )
    if target.connections_needed > budget:
        raise BudgetRefused(
            f"target {target.name} needs {target.connections_needed} connections but only {budget} are available "
            f"(max_connections {max_conn} - superuser_reserved_connections {su_reserved} - reserved_connections "
            f"{reserved} - {others} sessions already open - {COORDINATOR_CONNECTIONS} for pgarena): raise "
            f"max_connections to at least {max_conn + target.connections_needed - budget} or lower clients to "
            f"{max(budget - (target.connections_needed - max_clients(target)), 0)}"
        )
    return info


def max_clients(target: PlannedTarget) -> int:
    return max(s.run.clients for s in target.steps if s.run)
