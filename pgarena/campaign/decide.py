"""Decide More Phases: after an adaptive campaign's phase past its minimum repetitions, whether another
repetition is needed (a ranked pair still undecided), and which phases run next.

The plan holds every phase up to repetitions.max (priced and counted at the maximum, so the cost guard's
booking and the history-limit check already allow all of them); a phase past min runs only when the
decision after the one before asks for it. The decisions are kept beside the plan
(layout.decisions_key): Aggregate And Rank leaves the phases not needed out, and records them.
"""

from __future__ import annotations

from typing import Any

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.sequential import looks_of, needs_more
from pgarena.campaign.ports import Records, Store
from pgarena.model import layout
from pgarena.model.matrix import RankingConfig
from pgarena.model.plan import Plan, PlanRef
from pgarena.model.results import AdaptiveRepetitions, CampaignResults, Look, now_iso
from pgarena.model.series import SeriesOnDemand, ShardSeries
from pgarena.model.sites import SiteMap


def ran_through(plan: Plan, phase: int) -> Plan:
    """The plan cut to the phases up to `phase`: what has run so far."""
    return plan.model_copy(update={"phases": [p for p in plan.phases if p.phase <= phase]})


def without(plan: Plan, not_needed: list[int]) -> Plan:
    """The plan without the phases not needed, in its phases, its recorded run order and its repetitions (the
    most any workload ran: the results' runs per point)."""
    if not not_needed:
        return plan
    order = plan.run_order
    if order is not None:
        order = order.model_copy(update={"passes": [p for p in order.passes if p.phase not in not_needed]})
    phases = [p for p in plan.phases if p.phase not in not_needed]
    repetitions = max((plan.repetition_of(p.phase) or 0 for p in phases), default=plan.repetitions)
    return plan.model_copy(
        update={
            "phases": phases,
            "run_order": order,
            "repetitions": repetitions or plan.repetitions,
            "max_repetitions": plan.max_repetitions or plan.repetitions,
        }
    )


def results_so_far(plan: Plan, through: int, store: Store, records: Records, started_at: str) -> CampaignResults:
    """The results of the phases up to `through`, built as Aggregate And Rank builds them (nothing written)."""
    _, _, preflights = records.recorded(plan.campaign_id)
    done = ran_through(plan, through)
    summaries = store.summaries(plan.campaign_id)
    series = SeriesOnDemand(
        {s.step_id: s.series for s in summaries if s.series}, lambda key: ShardSeries.model_validate(store.get_json(key))
    )
    outcomes = records.outcomes(done, preflights)
    return aggregate(
        done, outcomes, summaries, started_at, now_iso(), None, series, store.keys(layout.raw_prefix(plan.campaign_id))
    )


def decided(plan: Plan, store: Store) -> tuple[Plan, AdaptiveRepetitions | None]:
    """The plan as the campaign ran it (without the phases not needed) and its decisions; a fixed plan as it is."""
    if not plan.adaptive:
        return plan, None
    kept = decisions(plan, store)
    return without(plan, kept.not_needed), kept


def decisions(plan: Plan, store: Store) -> AdaptiveRepetitions:
    """The decisions kept so far (none before the first)."""
    assert plan.min_repetitions is not None
    key = layout.decisions_key(plan.campaign_id)
    if key in store.keys(layout.state_prefix(plan.campaign_id)):
        return AdaptiveRepetitions.model_validate(store.get_json(key))
    return AdaptiveRepetitions(min=plan.min_repetitions, max=plan.repetitions)


def _workload_of(plan: Plan, phase: int) -> str | None:
    passes = plan.run_order.passes if plan.run_order else []
    return next((p.workload for p in passes if p.phase == phase), None)


def _look(plan: Plan, through: int, store: Store, records: Records, started_at: str) -> Look:
    """Whether the workload of phase `through` needs another repetition."""
    repetitions = plan.repetition_of(through) or 0
    workload = _workload_of(plan, through)
    if repetitions >= plan.repetitions:
        return Look(phase=through, workload=workload, repetitions=repetitions, more=False, reason="maximum reached")
    results = results_so_far(plan, through, store, records, started_at)
    assert plan.design is not None  # an adaptive plan's
    look, max_looks = looks_of(repetitions, *plan.design)
    more = needs_more(results, look, max_looks, (plan.ranking or RankingConfig()).equivalence_margin_pct)
    reason = "a ranked pair is undecided" if more else "decided"
    return Look(phase=through, workload=workload, repetitions=repetitions, more=more, reason=reason)


def decide(  # noqa: PLR0913  # the campaign, where it stands, and the ports it reads and writes
    campaign_id: str, through: int, started_at: str, store: Store, records: Records, sites: SiteMap | None = None
) -> dict[str, Any]:
    """After the phases up to `through`: the next phases to run (Run Phases In Order's items, as Validate And
    Plan's answer) and `more`, whether there are any. A repetition past min runs only while needed: when
    the look after the one before says decided (or max is reached), the workload's remaining repetitions
    are not needed, and the campaign goes on with what follows them (a cleanup, the next workload)."""
    plan = records.plan(campaign_id)
    kept = decisions(plan, store)
    following = [p.phase for p in plan.phases if p.phase > through]
    if following and plan.conditional(following[0]) and through not in {look.phase for look in kept.looks}:
        look = _look(plan, through, store, records, started_at)
        skipped = [] if look.more else _remaining_repetitions(plan, following)
        kept = kept.model_copy(update={"looks": [*kept.looks, look], "not_needed": sorted({*kept.not_needed, *skipped})})
        store.put_json(layout.decisions_key(campaign_id), kept.model_dump(mode="json"))
    next_phase = next((n for n in following if n not in kept.not_needed), None)
    ref = PlanRef.of(plan, sites, first=next_phase) if next_phase is not None else PlanRef(campaign_id=campaign_id, phases=[])
    return {**ref.model_dump(mode="json"), "adaptive": True, "more": bool(ref.phases)}


def _remaining_repetitions(plan: Plan, following: list[int]) -> list[int]:
    """The phases from following[0] on that repeat the workload (up to its cleanup or the next workload)."""
    remaining = []
    for number in following:
        if not plan.conditional(number):
            break
        remaining.append(number)
    return remaining
