"""The one way a campaign ends, however it ends: aggregate what finished, settle the month's ledger,
write results.json and the reports, index the run (`pgarena history --stack`) and publish the change points it
found first (pgarena.campaign.alerting), give the connection leases back.

Used by the aggregate Lambda (the state machine's last state) and by the finalize_stopped Lambda (an execution
stopped, failed or timed out: its history is read back through the Executions port), which the local
runtime's cancel reaches as EventBridge's rule does in AWS.
results.json is written before the reports, so a report that cannot be built never loses it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.cancel import stopped_outcomes
from pgarena.analysis.history.index import indexed_run
from pgarena.campaign.alerting import Alerted, alert_new_changes
from pgarena.campaign.cost_guard import settle_campaign
from pgarena.campaign.decide import decided
from pgarena.campaign.leases import holder_id, lease_key
from pgarena.campaign.managed_metrics import read_managed_metrics
from pgarena.campaign.ports import EndPorts, Executions, Records, Store
from pgarena.campaign.slots import close_slots
from pgarena.model import layout
from pgarena.model.errors import PgarenaError
from pgarena.model.execution import ExecutionRequest, execution_request
from pgarena.model.history import HistoryEvent, entered, execution_input
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


@dataclass(frozen=True)
class CampaignEnd:
    """A campaign as it ends: its plan and the targets' outcomes, its cost decision, how it ended, the
    workers' slots to close (an idle worker leaves now) and each target's lease key as its preflight made
    it (by target name; else the endpoint's)."""

    plan: Plan
    outcomes: Sequence[TargetOutcome]
    started_at: str
    cost: CostDecision | None = None
    ending: Ending = "completed"
    finished_at: str | None = None
    closing: Sequence[WorkerSlot] = ()
    lease_keys: Mapping[str, str] = field(default_factory=dict)
    adaptive: AdaptiveRepetitions | None = None  # the decisions of repetitions {min, max} (the plan without phases not needed)


@dataclass(frozen=True)
class Finalized:
    results: CampaignResults
    results_key: str  # results.json's
    reports: list[str]  # the reports written (a report that cannot be built is left out)
    alerted: Alerted = field(default_factory=Alerted)  # the change points it found first, published


@dataclass(frozen=True)
class StoppedExecution:
    """An execution that ended without Aggregate And Rank, as EventBridge's status change tells it."""

    arn: str
    ending: Ending
    started_at: str

    @property
    def name(self) -> str:
        """The execution's name: the campaign id of a bare matrix's execution."""
        return self.arn.rsplit(":", 1)[1]


def store_writer(store: Store, campaign_id: str) -> Writer:
    return lambda name, data, content_type: store.put_bytes(layout.report_key(campaign_id, name), data, content_type)


def finalize(end: CampaignEnd, ports: EndPorts) -> Finalized:
    """Close the workers' slots, aggregate, settle, publish, release."""
    plan, store, ending = end.plan, ports.store, end.ending
    departures = close_slots(ports.slots, end.closing, CAMPAIGN_ENDED.format(ending)) if ports.slots is not None else {}
    finished_at = end.finished_at or now_iso()
    outcomes = list(end.outcomes)
    summaries = store.summaries(plan.campaign_id)
    # Sharded runs are merged from each shard's per-second histograms, kept beside its raw output.
    series = SeriesOnDemand(
        {s.step_id: s.series for s in summaries if s.series}, lambda key: ShardSeries.model_validate(store.get_json(key))
    )
    raw_keys = store.keys(layout.raw_prefix(plan.campaign_id))  # what lost workers and failed preflights left
    ran = outcomes  # what the state machine saw launched: the cost of a stopped campaign is what ran
    if ending != "completed":  # stopped before Aggregate And Rank: steps that did not finish are listed cancelled
        outcomes, summaries = stopped_outcomes(plan, outcomes, summaries)
    cost = end.cost
    refusal = cost.refusal if cost else None
    # The targets' CloudWatch metrics over their runs' windows, read now that the last minutes are published.
    managed = read_managed_metrics(plan, summaries, ports.metrics, store) if ports.metrics is not None else None
    results = aggregate(plan, outcomes, summaries, end.started_at, finished_at, refusal, series, raw_keys, managed)
    if ending != "completed":
        results = results.model_copy(update={"status": ending})
    if end.adaptive is not None:
        results = results.model_copy(update={"adaptive": end.adaptive})
    if cost is not None and ports.ledger is not None:
        spent = settle_campaign(cost, plan, ran, summaries, end.started_at, finished_at, ports.ledger, departures)
        results = results.model_copy(update={"cost": spent})
    reports = publish_results(results, store_writer(store, plan.campaign_id))
    alerted = Alerted()
    if ports.index is not None:  # after results.json: an indexed run's results are there to read
        ports.index.record(indexed_run(results, layout.results_key(plan.campaign_id)))
        if ports.alerts is not None:
            alerted = alert_new_changes(results, reports, ports.index, store, ports.alerts)
    if ports.leases is not None:  # idempotent: a target whose lease was already released is a no-op
        for target in plan.targets:
            key = end.lease_keys.get(target.name) or lease_key(target.endpoint)
            ports.leases.release(key, holder_id(plan.campaign_id, target.name))
    return Finalized(results, layout.results_key(plan.campaign_id), reports, alerted)


# Fail states reached when Validate And Plan refused the execution: nothing of it was planned, and its
# campaign id may be another campaign's (Campaign Id In Use), whose results must stay as they are.
REFUSED_AT_VALIDATE = ("Matrix Invalid", "Campaign Id In Use")


def _execution_request(history: list[HistoryEvent], execution_name: str) -> ExecutionRequest | None:
    given = execution_input(history)
    if given is None:
        return None
    try:
        return execution_request(json.loads(given), execution_name)
    except (ValueError, PgarenaError):
        return None


def _planned_from_input(request: ExecutionRequest, history: list[HistoryEvent]) -> Plan | None:
    """The plan Validate And Plan would have made, from the execution's input: an execution stopped
    before Validate answered has leased and booked nothing, but its targets are still listed. None when
    Validate refused it."""
    if entered(history) & set(REFUSED_AT_VALIDATE):
        return None
    try:
        return plan_campaign(parse_campaign(request.matrix), request.campaign_id)
    except (MatrixError, PgarenaError):
        return None


def finalize_stopped(stopped: StoppedExecution, records: Records, executions: Executions, ports: EndPorts) -> Finalized | None:
    """An execution that never reached Aggregate And Rank (stopped, failed, timed out): its input read
    from its history (the Executions port), what its states kept read back (the Records port), then
    finalize. None when it had no valid plan of its own (nothing was leased or run), or its campaign id
    is another execution's."""
    history = executions.history(stopped.arn)
    request = _execution_request(history, stopped.name)
    if request is None:
        return None
    plan, cost, preflights = records.recorded(request.campaign_id)
    adaptive = None
    if plan is not None:
        if records.plan_owner(request.campaign_id) != stopped.name:  # refused at Validate: another campaign's id
            return None
        plan, adaptive = decided(plan, ports.store)  # phases its decisions found not needed are not cancelled
        outcomes = records.outcomes(plan, preflights)
    else:
        plan, outcomes = _planned_from_input(request, history), []
        # Validate had not answered: an id that already has files is another campaign's, never overwritten.
        if plan is None or ports.store.campaign_traces(plan.campaign_id):
            return None
    keys = {
        planned_target(plan, phase, index).name: result.lease_key
        for (phase, index), result in preflights.items()
        if result.lease_key
    }
    end = CampaignEnd(
        plan,
        outcomes,
        stopped.started_at,
        cost=cost,
        ending=stopped.ending,
        closing=campaign_slots(plan.campaign_id, preflights),  # none before Validate answered
        lease_keys=keys,
        adaptive=adaptive,
    )
    return finalize(end, ports)


def aggregate_and_rank(campaign_id: str, started_at: str, records: Records, ports: EndPorts) -> Finalized:
    """Aggregate And Rank, the state machine's last state: the plan, the cost decision and the outcomes
    read back from where the states kept them, then finalize (the leases went back at each target's
    Release Connection Lease)."""
    plan, cost, preflights = records.recorded(campaign_id)
    if plan is None:
        raise RuntimeError(f"campaign {campaign_id} has no plan in the results bucket: Validate And Plan keeps it")
    plan, adaptive = decided(plan, ports.store)  # an adaptive campaign's phases not needed: not run, not failed
    end = CampaignEnd(
        plan,
        records.outcomes(plan, preflights),
        started_at,
        cost=cost,
        closing=campaign_slots(campaign_id, preflights),
        adaptive=adaptive,
    )
    return finalize(end, ports)
