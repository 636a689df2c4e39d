"""Preflight Target: the target's live facts and connection budget, the slots it will use leased,
before any benchmark connection opens; and the lease given back when the target is done."""

from __future__ import annotations

import time
from typing import NamedTuple

from pgarena.campaign.leases import Leases, holder_id, lease_key
from pgarena.campaign.ports import Records, Store, WorkerSlots
from pgarena.campaign.slots import close_slots
from pgarena.model.budget import COORDINATOR_CONNECTIONS
from pgarena.model.errors import ErrorKind, PgarenaError, error_info, failure
from pgarena.model.layout import evidence_key
from pgarena.model.plan import PlannedTarget, PreflightRef, PreflightResult, Step, TargetRef, campaign_tag, planned_target
from pgarena.model.redact import redact
from pgarena.model.results import PreflightOrigin, ServerInfo
from pgarena.model.warm import TARGET_FAILED, TARGET_FINISHED, slots_of
from pgarena.planning.budget import apply_budget, compute_budget, held_by_other_campaigns
from pgarena.planning.shards import shard
from pgarena.server.facts import disclose, read_facts, read_sessions
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
    store.put_json(key, {"target": target.name, "server": result.server.model_dump(mode="json")})
    # The steps (clamped, sharded) stay in the bucket; the state gets their indices and timers.
    records.put_preflight(campaign_id, ref.phase, ref.target, result)
    return Preflighted(PreflightRef(name=target.name, steps=result.step_refs()), result.server)


def _lease_ttl_s(steps: list[Step]) -> float:
    return float(sum(step.timeout_s for step in steps))


def _lease_budget(target: PlannedTarget, campaign_id: str, leases: Leases) -> PreflightResult:
    """Refuse or clamp the plan to the live budget, then lease the slots it will use. Slots other
    pgarena campaigns hold (leased, or open sessions of theirs) are waited for, up to lease_wait_s."""
    endpoint = target.endpoint
    # Resolved once, here; workers reuse the address when the endpoint asks (use_resolved_address).
    addresses = resolve(endpoint.host, endpoint.port)
    address = reachable_address(addresses, endpoint.port) if endpoint.use_resolved_address else next(iter(addresses), None)
    own = campaign_tag(campaign_id)
    key, holder = lease_key(endpoint, addresses), holder_id(campaign_id, target.name)
    with connect(endpoint, application_name=f"{own}/preflight") as conn:
        try:
            version, version_num, facts = read_facts(conn.cursor(), own)
            started_at = postmaster_started_at(conn.cursor())
            disclosed = disclose(conn.cursor())
            budget = compute_budget(facts, target.connections, target.pooler)
            deadline = time.monotonic() + target.connections.lease_wait_s
            while True:
                others = held_by_other_campaigns(leases.holders(key), holder, facts.sessions.by_campaign)
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
                if leases.acquire(key, holder, slots, budget.capacity + COORDINATOR_CONNECTIONS, _lease_ttl_s(steps)):
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
