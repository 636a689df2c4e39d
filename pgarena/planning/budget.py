"""Connection budgets: how many benchmark connections a target can take, and what to do when a plan needs more.

Pure functions over facts read live at preflight (see pgarena/server/facts.py).

    limit per kind   server:   max_connections
                                - superuser_reserved_connections   (unless the role is a superuser)
                                - reserved_connections (PG 16+)    (unless superuser or pg_use_reserved_connections)
                     role:     pg_roles.rolconnlimit               (when >= 0 and the role is not a superuser)
                     database: pg_database.datconnlimit            (when >= 0 and the role is not a superuser)
                     pooler:   the pooler's client limit from the matrix
    available        = limit - sessions already held against it (other than pgarena's) - COORDINATOR_CONNECTIONS
    capacity         = min(available) - safety_margin
    allowed          = capacity - slots held by other pgarena campaigns on the same server: per campaign,
                       the larger of its leases and its sessions seen (a lease may be gone or elsewhere);
                       a campaign that does not share the server holds it alone (pgarena.campaign.leases)
"""

from __future__ import annotations

from pgarena.model.budget import COORDINATOR_CONNECTIONS, Budget, ConnectionFacts, Limit, Sessions
from pgarena.model.errors import BudgetRefused
from pgarena.model.matrix import ConnectionPolicy, Pooler
from pgarena.model.plan import PlannedTarget, Step, campaign_tag


def _limits(facts: ConnectionFacts, pooler: Pooler | None) -> list[Limit]:
    s = facts.sessions
    su = facts.role_is_superuser
    server = facts.max_connections
    parts = [f"max_connections {facts.max_connections}"]
    if not su:
        server -= facts.superuser_reserved_connections
        parts.append(f"superuser_reserved_connections {facts.superuser_reserved_connections}")
        if not facts.role_can_use_reserved:
            server -= facts.reserved_connections
            if facts.reserved_connections:
                parts.append(f"reserved_connections {facts.reserved_connections}")
    limits = [
        Limit(
            name="server",
            limit=server,
            held=s.total,
            available=server - s.total - COORDINATOR_CONNECTIONS,
            setting="max_connections",
            setting_value=facts.max_connections,
        )
    ]
    if facts.role_conn_limit >= 0 and not su:
        limits.append(
            Limit(
                name="role",
                limit=facts.role_conn_limit,
                held=s.role,
                available=facts.role_conn_limit - s.role - COORDINATOR_CONNECTIONS,
                setting=f"the connection limit of role {facts.role} (ALTER ROLE ... CONNECTION LIMIT)",
                setting_value=facts.role_conn_limit,
            )
        )
    if facts.database_conn_limit >= 0 and not su:
        limits.append(
            Limit(
                name="database",
                limit=facts.database_conn_limit,
                held=s.database,
                available=facts.database_conn_limit - s.database - COORDINATOR_CONNECTIONS,
                setting=f"the connection limit of database {facts.database} (ALTER DATABASE ... CONNECTION LIMIT)",
                setting_value=facts.database_conn_limit,
            )
        )
    if pooler is not None:
        limits.append(
            Limit(
                name="pooler",
                limit=pooler.max_client_connections,
                held=0,
                available=pooler.max_client_connections - COORDINATOR_CONNECTIONS,
                setting=f"the {pooler.kind} client limit",
                setting_value=pooler.max_client_connections,
            )
        )
    return limits


def _held_by(sessions: Sessions) -> str:
    if not sessions.by_role:
        return f"{sessions.total} sessions already open"
    roles = ", ".join(f"{role} {count}" for role, count in sorted(sessions.by_role.items(), key=lambda kv: -kv[1]))
    return f"{sessions.total} sessions already open ({roles})"


def compute_budget(facts: ConnectionFacts, policy: ConnectionPolicy, pooler: Pooler | None = None) -> Budget:
    limits = _limits(facts, pooler)
    binding = min(limits, key=lambda limit: limit.available)
    capacity = binding.available - policy.safety_margin
    if binding.name == "server":
        reserved = binding.limit
        head = f"max_connections {facts.max_connections}"
        if reserved != facts.max_connections:
            head += f" less {facts.max_connections - reserved} reserved slots = {reserved}"
    else:
        head = f"{binding.name} limit {binding.limit}"
    explanation = (
        f"{head} - {_held_by(facts.sessions) if binding.name != 'pooler' else '0 known sessions'}"
        f" - {COORDINATOR_CONNECTIONS} for pgarena (preflight, monitor) - safety margin {policy.safety_margin}"
        f" = {capacity} (bound by the {binding.name} limit)"
    )
    return Budget(
        limits=limits, binding=binding.name, safety_margin=policy.safety_margin, capacity=capacity, explanation=explanation
    )


def held_by_other_campaigns(leased: dict[str, int], holder: str, seen: dict[str, int]) -> int:
    """Slots other pgarena campaigns hold on a server. `leased`: live lease holder id
    (`<campaign_id>/<target>`) -> slots; `seen`: their open sessions by campaign tag. Per campaign the
    larger of the two counts, never their sum: a running campaign's sessions are what its lease covers;
    sessions without a lease (another lease store, an expired lease) still take slots."""
    by_campaign: dict[str, int] = {}
    for name, slots in leased.items():
        if name != holder:  # this campaign's other targets on the same server are others too
            tag = campaign_tag(name.split("/", 1)[0])
            by_campaign[tag] = by_campaign.get(tag, 0) + slots
    return sum(max(by_campaign.get(tag, 0), seen.get(tag, 0)) for tag in by_campaign.keys() | seen.keys())


def _clamped(step: Step, allowed: int) -> Step:
    if step.kind != "run" or step.connections <= allowed:
        return step
    return step.model_copy(update={"clients": allowed, "requested_clients": step.clients})


def _fixes(target: PlannedTarget, budget: Budget, allowed: int, leased_by_others: int) -> list[str]:
    """Only fixes that would let the target run: never "lower clients to 0", never the policy it already has."""
    need = target.connections_needed
    binding = next(limit for limit in budget.limits if limit.name == budget.binding)
    fixes = [f"raise {binding.setting} to at least {(binding.setting_value or binding.limit) + need - allowed}"]
    if leased_by_others:
        fixes.append("let the other campaigns finish first (a longer connections.lease_wait_s)")
    if budget.safety_margin and allowed + budget.safety_margin >= need:
        fixes.append(f"lower connections.safety_margin to {allowed + budget.safety_margin - need}")
    if allowed >= 1:
        fixes.append(f"lower clients to {allowed}")
        if target.connections.policy != "clamp":
            fixes.append(f'set "connections": {{"policy": "clamp"}} to run with {allowed} clients')
    return fixes


def apply_budget(target: PlannedTarget, budget: Budget, leased_by_others: int = 0) -> list[Step]:
    """The steps to run within `allowed` connections: unchanged, clamped (policy clamp) or refused (policy
    fail, or no connection left at all)."""
    allowed = budget.capacity - leased_by_others
    need = target.connections_needed
    if need <= allowed:
        return target.steps
    if target.connections.policy == "fail" or allowed < 1:
        leases = (
            f"; {leased_by_others} slots are held by other pgarena campaigns on this server (leases or open sessions)"
            if leased_by_others
            else ""
        )
        available = f"only {allowed} are available" if allowed >= 1 else "none are available"
        fixes = _fixes(target, budget, allowed, leased_by_others)
        raise BudgetRefused(
            f"target {target.name} needs {need} connections but {available}: {budget.explanation}{leases}. "
            f"{fixes[0][0].upper()}{fixes[0][1:]}{''.join(', or ' + fix for fix in fixes[1:])}"
        )
    return [_clamped(step, allowed) for step in target.steps]
