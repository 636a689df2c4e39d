"""Preflight Target: the target's server leased (one campaign at a time, in arrival order, unless they share
it), its live facts and connection budget, before any benchmark connection opens; and the lease given back
when the target is done."""

from __future__ import annotations

import time
from typing import NamedTuple

from pgarena.campaign.leases import (
    Leases,
    Request,
    Turn,
    campaign_of,
    holder_id,
    lease_key,
    server_key,
    sharing_conflict,
    turn_of,
)
from pgarena.campaign.ports import Records, Store, WorkerSlots
from pgarena.campaign.slots import close_slots
from pgarena.model.budget import COORDINATOR_CONNECTIONS, Budget, ConnectionFacts
from pgarena.model.errors import BudgetRefused, ErrorKind, PgarenaError, error_info, failure
from pgarena.model.layout import evidence_key
from pgarena.model.lease import ServerIdentity
from pgarena.model.matrix import Endpoint
from pgarena.model.plan import PlannedTarget, PreflightRef, PreflightResult, Step, TargetRef, campaign_tag, planned_target
from pgarena.model.redact import redact
from pgarena.model.results import PreflightOrigin, ServerInfo
from pgarena.model.warm import TARGET_FAILED, TARGET_FINISHED, slots_of
from pgarena.planning.budget import apply_budget, compute_budget, held_by_other_campaigns
from pgarena.planning.shards import shard
from pgarena.server.facts import Disclosure, disclose, read_facts
from pgarena.server.identity import IDENTIFY_SESSION, read_identity
from pgarena.server.postgres import connect, describe
from pgarena.server.restarts import postmaster_started_at, reachable_address, resolve

LEASE_POLL_S = 2.0


class Preflighted(NamedTuple):
    """Preflight's answer (a named tuple: a caller may still unpack it)."""

    ref: PreflightRef  # what the state carries: the target's name and its steps' indices and timers
    server: ServerInfo  # the live facts and budget, kept in the evidence too


def preflight(ref: TargetRef, store: Store, records: Records, leases: Leases, origin: PreflightOrigin) -> Preflighted:
    """One target of one phase: budget and lease, its evidence beside its raw output (a failure's too:
    results.json points at it), its clamped and sharded steps kept for the launches. `origin`: where this
    runs (the home function, or a worker on the target's site), recorded in both."""
    campaign_id = ref.campaign_id
    target = planned_target(records.plan(campaign_id), ref.phase, ref.target)
    key = evidence_key(campaign_id, target.name)
    ran = origin.model_dump(mode="json")
    try:
        result = _lease_budget(target, campaign_id, leases)
    except PgarenaError as error:
        store.put_json(
            key,
            {
                "target": target.name,
                "host": target.endpoint.host,
                "port": target.endpoint.port,
                "preflight": ran,
                "error": redact(error.info().model_dump()),
            },
        )
        raise
    result.server = result.server.model_copy(update={"preflight": origin})
    try:
        store.put_json(key, {"target": target.name, "server": result.server.model_dump(mode="json")})
        # The steps (clamped, sharded) stay in the bucket; the state gets their indices and timers.
        records.put_preflight(campaign_id, ref.phase, ref.target, result)
    except BaseException:  # no answer kept: the release would not find this lease's key, so it goes back now
        assert result.lease_key is not None  # _lease_budget always keys its lease
        leases.release(result.lease_key, holder_id(campaign_id, target.name))
        raise
    return Preflighted(PreflightRef(name=target.name, steps=result.step_refs()), result.server)


def _lease_ttl_s(steps: list[Step]) -> float:
    return float(sum(step.timeout_s for step in steps))


class Live(NamedTuple):
    """What preflight reads from the server once it is this target's turn."""

    version: str
    version_num: int
    facts: ConnectionFacts
    started_at: str
    disclosed: Disclosure


class Taken(NamedTuple):
    """A lease taken: what was read then, the budget, the steps within it, and slots other campaigns hold."""

    live: Live
    budget: Budget
    steps: list[Step]
    others: int


def _read_live(endpoint: Endpoint, own: str) -> Live:
    with connect(endpoint, application_name=f"{own}/preflight") as conn:
        version, version_num, facts = read_facts(conn.cursor(), own)
        return Live(version, version_num, facts, postmaster_started_at(conn.cursor()), disclose(conn.cursor()))


def _identify(endpoint: Endpoint, own: str) -> ServerIdentity:
    """Who the server is, over a connection closed before any wait (its name keeps it out of others' budgets)."""
    with connect(endpoint, application_name=f"{own}/{IDENTIFY_SESSION}") as conn:
        return read_identity(conn.cursor())


def _busy(target: PlannedTarget, key: str, turn: Turn) -> BudgetRefused:
    policy = target.connections
    return BudgetRefused(
        f"target {target.name}: another campaign measures its server ({key}) and it did not come free within "
        f"connections.lease_wait_s {policy.lease_wait_s} s: {turn.describe()}. Campaigns measure a server one at a time, "
        "in arrival order: raise lease_wait_s (at most 600) to wait longer, run this campaign when that one is done, or "
        'set "connections": {"share_server": true} in every campaign that uses it to measure it together'
    )


def _conflict(target: PlannedTarget, key: str, holder: str) -> BudgetRefused:
    return BudgetRefused(
        f"target {target.name}: {holder} measures database {target.endpoint.dbname} on the same server ({key}) at the "
        "same time, and this target would initialize its tables under it: give each target measured together a "
        "database of its own (endpoint.dbname), or leave share_server off (and target_concurrency at 1) to take turns"
    )


def _take_turn(target: PlannedTarget, campaign_id: str, key: str, request: Request, leases: Leases) -> Taken:
    """Wait for this target's turn on the server (queued, no session open), then for the slots of other
    campaigns' sessions to close (sharing: for their slots to fit), up to lease_wait_s; then refuse or clamp
    the plan to the live budget and take the lease."""
    own = campaign_tag(campaign_id)
    deadline = time.monotonic() + target.connections.lease_wait_s
    while True:
        turn = turn_of(leases.join(key, request), request)
        if not turn.clear:
            # Past the deadline a server someone holds is busy; waiters before this one are only preflighting
            # (they take it or leave within their own lease_wait_s): not a reason to refuse an idle server.
            if turn.holding and time.monotonic() >= deadline:
                raise _busy(target, key, turn)
            time.sleep(LEASE_POLL_S)
            continue
        if conflict := sharing_conflict(leases.read(key), request):
            raise _conflict(target, key, conflict.holder)
        live = _read_live(target.endpoint, own)
        budget = compute_budget(live.facts, target.connections, target.pooler)
        leased = leases.holders(key)
        others = held_by_other_campaigns(leased, request.holder, live.facts.sessions.by_campaign)
        foreign = held_by_other_campaigns(
            {h: n for h, n in leased.items() if campaign_of(h) != campaign_id}, request.holder, live.facts.sessions.by_campaign
        )
        short = target.connections_needed > budget.capacity - others
        # Alone: wait out another campaign's sessions (one leasing elsewhere, or closing); else wait for room.
        if ((short and others) or (foreign and not request.shared)) and time.monotonic() < deadline:
            time.sleep(LEASE_POLL_S)
            continue
        steps = apply_budget(target, budget, others)
        slots = max(step.connections for step in steps) + COORDINATOR_CONNECTIONS
        if leases.acquire(key, request, slots, budget.capacity + COORDINATOR_CONNECTIONS, _lease_ttl_s(steps)):
            return Taken(live, budget, steps, others)


def _lease_budget(target: PlannedTarget, campaign_id: str, leases: Leases) -> PreflightResult:
    """Lease the server and fit the plan to its live budget. Other campaigns measuring it are waited for,
    in arrival order, up to lease_wait_s; the lease is left (and the queue) when this fails."""
    endpoint = target.endpoint
    # Resolved once, here; workers reuse the address when the endpoint asks (use_resolved_address).
    addresses = resolve(endpoint.host, endpoint.port)
    address = reachable_address(addresses, endpoint.port) if endpoint.use_resolved_address else next(iter(addresses), None)
    waiting_since = time.monotonic()
    try:
        identity = _identify(endpoint, campaign_tag(campaign_id))
        key = server_key(identity, endpoint, addresses)
        request = Request(
            holder=holder_id(campaign_id, target.name),
            shared=target.connections.share_server,
            database=endpoint.dbname,
            instance=str(identity.started_us) if identity.started_us is not None else None,
        )
        try:
            live, budget, steps, others = _take_turn(target, campaign_id, key, request, leases)
        except BaseException:
            leases.leave(key, request.holder)
            raise
    except PgarenaError:
        raise
    except Exception as error:  # a statement timeout, a permission, a server going down under us
        message = describe(error)
        info = error_info(message, ErrorKind.PREFLIGHT_FAILED, f"reading {target.name}'s settings failed: {message}")
        raise failure(info.kind, info.message) from None
    server = ServerInfo(
        version=live.version,
        version_num=live.version_num,
        max_connections=live.facts.max_connections,
        facts=live.facts,
        budget=budget,
        leased_by_others=others,
        allowed=budget.capacity - others,
        connections_needed=target.connections_needed,
        clamped=any(step.requested_clients for step in steps),
        postmaster_started_at=live.started_at,
        address=address,
        system_identifier=identity.system_identifier,
        share_server=request.shared,
        lease_waited_s=round(time.monotonic() - waiting_since, 3),
        **live.disclosed.model_dump(),
    )
    facts_for_workers = {"postmaster_started_at": live.started_at}
    if endpoint.use_resolved_address and address:
        facts_for_workers["hostaddr"] = address
    steps = [step.model_copy(update=facts_for_workers) for step in steps]
    return PreflightResult(server=server, steps=[shard(step) for step in steps], lease_key=key)


def release_target(
    ref: TargetRef, records: Records, leases: Leases, slots: WorkerSlots | None = None, failed: bool = False
) -> PlannedTarget:
    """Release Connection Lease: after the target's steps, or after its failure. The lease is given back
    under the key its preflight made (on the target's site a name may resolve as it does nowhere else);
    a preflight that kept no answer leased nothing, or is released under the key made here. No step of
    its phase will come to its workers' slots either: closed, so that a worker idle there leaves now
    (slots from the plan: its preflight, which may have failed, may have split the steps into fewer shards)."""
    target = planned_target(records.plan(ref.campaign_id), ref.phase, ref.target)
    try:
        key = records.preflight(ref.campaign_id, ref.phase, ref.target).lease_key
    except Exception:  # no answer kept: preflight failed (most often before it leased)
        key = None
    leases.release(key or lease_key(target.endpoint), holder_id(ref.campaign_id, target.name))
    if slots is not None:
        which = slots_of(ref.campaign_id, ref.phase, ref.target, [shard(step) for step in target.steps])
        close_slots(slots, which, TARGET_FAILED if failed else TARGET_FINISHED)
    return target
