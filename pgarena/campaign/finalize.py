"""The one way a campaign ends, however it ends: aggregate what finished, settle the month's ledger,
write results.json and the reports, give the connection leases back.

Used by the aggregate Lambda (the state machine's last state), by the aborted-execution path (an
execution stopped, failed or timed out: its history is read back) and by the local runtime's cancel.
results.json is written before the reports, so a report that cannot be built never loses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.cancel import stopped_outcomes
from pgarena.campaign.cost_guard import settle_campaign
from pgarena.campaign.decide import decided
from pgarena.campaign.leases import Leases, holder_id, lease_key
from pgarena.campaign.ports import Ledger, Records, Store, WorkerSlots
from pgarena.campaign.slots import close_slots
from pgarena.model import layout
from pgarena.model.errors import PgarenaError
from pgarena.model.execution import ExecutionRequest, execution_request
from pgarena.model.ledger import CostDecision
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.plan import Plan, planned_target
from pgarena.model.results import AdaptiveRepetitions, CampaignResults, now_iso
from pgarena.model.series import SeriesOnDemand, ShardSeries
from pgarena.model.warm import CAMPAIGN_ENDED, WorkerSlot, campaign_slots
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.report import Writer, publish_results

Ending = Literal["completed", "cancelled", "failed"]


def store_writer(store: Store, campaign_id: str) -> Writer:
    return lambda name, data, content_type: store.put_bytes(layout.report_key(campaign_id, name), data, content_type)


def finalize(
    plan: Plan,
    outcomes: Iterable[TargetOutcome],
    store: Store,
    started_at: str,
    *,
    cost: CostDecision | None = None,
    ledger: Ledger | None = None,
    leases: Leases | None = None,
    ending: Ending = "completed",
    finished_at: str | None = None,
    slots: WorkerSlots | None = None,
    closing: Sequence[WorkerSlot] = (),
    lease_keys: Mapping[str, str] | None = None,
    adaptive: AdaptiveRepetitions | None = None,
) -> tuple[CampaignResults, str, list[str]]:
    """Close the workers' slots (`closing`: an idle worker leaves now), aggregate, settle, publish,
    release (`lease_keys`: a target's lease key as its preflight made it, by target name). `adaptive`: the
    decisions of repetitions {min, max} (`plan` without the phases not needed). Returns the results,
    results.json's key and the report names."""
    departures = close_slots(slots, closing, CAMPAIGN_ENDED.format(ending)) if slots is not None else {}
    finished_at = finished_at or now_iso()
    outcomes = list(outcomes)
    summaries = store.summaries(plan.campaign_id)
    # Sharded runs are merged from each shard's per-second histograms, kept beside its raw output.
    series = SeriesOnDemand(
        {s.step_id: s.series for s in summaries if s.series}, lambda key: ShardSeries.model_validate(store.get_json(key))
    )
    raw_keys = store.keys(layout.raw_prefix(plan.campaign_id))  # what lost workers and failed preflights left
    ran = outcomes  # what the state machine saw launched: the cost of a stopped campaign is what ran
    if ending != "completed":  # stopped before Aggregate And Rank: steps that did not finish are listed cancelled
        outcomes, summaries = stopped_outcomes(plan, outcomes, summaries)
    refusal = cost.refusal if cost else None
    results = aggregate(plan, outcomes, summaries, started_at, finished_at, refusal, series, raw_keys)
    if ending != "completed":
        results = results.model_copy(update={"status": ending})
    if adaptive is not None:
        results = results.model_copy(update={"adaptive": adaptive})
    if cost is not None and ledger is not None:
        spent = settle_campaign(cost, plan, ran, summaries, started_at, finished_at, ledger, departures)
        results = results.model_copy(update={"cost": spent})
    reports = publish_results(results, store_writer(store, plan.campaign_id))
    if leases is not None:  # idempotent: a target whose lease was already released is a no-op
        for target in plan.targets:
            key = (lease_keys or {}).get(target.name) or lease_key(target.endpoint)
            leases.release(key, holder_id(plan.campaign_id, target.name))
    return results, layout.results_key(plan.campaign_id), reports


# Fail states reached when Validate And Plan refused the execution: nothing of it was planned, and its
# campaign id may be another campaign's (Campaign Id In Use), whose results must stay as they are.
REFUSED_AT_VALIDATE = ("Matrix Invalid", "Campaign Id In Use")


def _execution_input(history: Sequence[Mapping[str, Any]], execution_name: str) -> ExecutionRequest | None:
    for event in history:
        details = event.get("executionStartedEventDetails")
        if details:
            try:
                return execution_request(json.loads(details.get("input") or "{}"), execution_name)
            except (ValueError, PgarenaError):
                return None
    return None


def _planned_from_input(request: ExecutionRequest, history: Sequence[Mapping[str, Any]]) -> Plan | None:
    """The plan Validate And Plan would have made, from the execution's input: an execution stopped
    before Validate answered has leased and booked nothing, but its targets are still listed. None when
    Validate refused it."""
    if any((event.get("stateEnteredEventDetails") or {}).get("name") in REFUSED_AT_VALIDATE for event in history):
        return None
    try:
        return plan_campaign(parse_campaign(request.matrix), request.campaign_id)
    except (MatrixError, PgarenaError):
        return None


def finalize_stopped(
    history: Sequence[Mapping[str, Any]],
    started_at: str,
    store: Store,
    records: Records,
    *,
    ledger: Ledger | None,
    leases: Leases,
    ending: Ending,
    execution_name: str,
    slots: WorkerSlots | None = None,
) -> CampaignResults | None:
    """An execution that never reached Aggregate And Rank (stopped, failed, timed out): read back what its
    states kept (the Records port) and finalize. None when it had no valid plan of its own
    (nothing was leased or run), or its campaign id is another execution's."""
    request = _execution_input(history, execution_name)
    if request is None:
        return None
    plan, cost, preflights = records.recorded(request.campaign_id)
    adaptive = None
    if plan is not None:
        if records.plan_owner(request.campaign_id) != execution_name:  # refused at Validate: another campaign's id
            return None
        plan, adaptive = decided(plan, store)  # phases its decisions found not needed are not cancelled
        outcomes = records.outcomes(plan, preflights)
    else:
        plan, outcomes = _planned_from_input(request, history), []
        # Validate had not answered: an id that already has files is another campaign's, never overwritten.
        if plan is None or store.campaign_traces(plan.campaign_id):
            return None
    keys = {
        planned_target(plan, phase, index).name: result.lease_key
        for (phase, index), result in preflights.items()
        if result.lease_key
    }
    results, _, _ = finalize(
        plan,
        outcomes,
        store,
        started_at,
        cost=cost,
        ledger=ledger,
        leases=leases,
        ending=ending,
        slots=slots,
        closing=campaign_slots(plan.campaign_id, preflights),  # none before Validate answered
        lease_keys=keys,
        adaptive=adaptive,
    )
    return results


def aggregate_and_rank(  # the campaign, and the ports finalize goes through
    campaign_id: str, started_at: str, store: Store, records: Records, ledger: Ledger, slots: WorkerSlots | None = None
) -> tuple[CampaignResults, str, list[str]]:
    """Aggregate And Rank, the state machine's last state: the plan, the cost decision and the outcomes
    read back from where the states kept them, then finalize."""
    plan, cost, preflights = records.recorded(campaign_id)
    if plan is None:
        raise RuntimeError(f"campaign {campaign_id} has no plan in the results bucket: Validate And Plan keeps it")
    plan, adaptive = decided(plan, store)  # an adaptive campaign's phases not needed: not run, not failed
    outcomes = records.outcomes(plan, preflights)
    closing = campaign_slots(campaign_id, preflights)
    return finalize(plan, outcomes, store, started_at, cost=cost, ledger=ledger, slots=slots, closing=closing, adaptive=adaptive)
