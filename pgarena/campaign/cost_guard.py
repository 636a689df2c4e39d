"""Check Cost Cap: caps checked against the estimate before any worker starts, and what ran settled
in the month's ledger when the campaign ends."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from pgarena.campaign.ports import Ledger, Records
from pgarena.model.ledger import CostDecision, WorkerPricing
from pgarena.model.matrix import CostPolicy
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.plan import Plan
from pgarena.model.results import CampaignCost, StepSummary
from pgarena.planning import cost


def month_of(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m")


def check_cost(plan: Plan, ledger: Ledger, pricing: WorkerPricing) -> CostDecision:
    """Estimate the campaign and decide: over its own cap it is refused; otherwise it is booked in the
    month's ledger, or refused when that would pass the monthly cap. Priced on-demand (an upper
    bound when workers run on Spot)."""
    policy = plan.cost or CostPolicy()
    vcpu, memory_gb = cost.worker_size(pricing.cpu_units, pricing.memory_mib)
    estimate = cost.estimate(plan, vcpu, memory_gb, policy.region or pricing.default_region)
    month = month_of(ledger.clock())
    decision = CostDecision(
        campaign_id=plan.campaign_id,
        allowed=False,
        month=month,
        estimate=estimate,
        cap_usd=policy.cap_usd,
        monthly_cap_usd=policy.monthly_cap_usd,
    )
    if policy.cap_usd is not None and estimate.total_usd > policy.cap_usd:
        reason = (
            f"estimated ${estimate.total_usd:.2f} exceeds the campaign cap ${policy.cap_usd:.2f} "
            f"({estimate.breakdown()}): raise cost.cap_usd or run fewer steps, shorter runs or cheaper targets"
        )
        ledger.record_refusal(month, plan.campaign_id, estimate.total_usd, reason, policy.schedule)
        return decision.model_copy(update={"reason": reason})
    booking = ledger.book(month, plan.campaign_id, estimate.total_usd, policy.monthly_cap_usd, policy.schedule)
    return decision.model_copy(
        update={
            "allowed": booking.booked,
            "booked": booking.booked,
            "month_committed_usd": booking.committed_before_usd,
            "reason": booking.entry.reason,
        }
    )


def guard_cost(campaign_id: str, records: Records, ledger: Ledger, pricing: WorkerPricing) -> CostDecision:
    """Check Cost Cap: the plan's decision, kept for Aggregate And Rank (the estimate's lines stay out of
    the execution's state)."""
    decision = check_cost(records.plan(campaign_id), ledger, pricing)
    records.put_cost(decision)
    return decision


def _seconds_between(started_at: str, finished_at: str) -> float | None:
    try:
        return (datetime.fromisoformat(finished_at) - datetime.fromisoformat(started_at)).total_seconds()
    except ValueError:
        return None


def settle_campaign(
    decision: CostDecision,
    plan: Plan,
    outcomes: list[TargetOutcome],
    summaries: list[StepSummary],
    started_at: str,
    finished_at: str,
    ledger: Ledger,
    departures: Mapping[str, float] | None = None,
) -> CampaignCost:
    """Price what ran, record it in the ledger in place of the estimate, and say both for results.json.
    `departures`: when each worker left, where its slot recorded it (pgarena.campaign.slots)."""
    estimate = decision.estimate
    report = CampaignCost(
        region=estimate.region,
        estimated_usd=estimate.total_usd,
        bound_usd=estimate.bound_usd,
        cap_usd=decision.cap_usd,
        monthly_cap_usd=decision.monthly_cap_usd,
        month=decision.month,
        refused=None if decision.allowed else decision.reason,
    )
    if not decision.booked:
        return report
    launched_without_summary = {o.step_id for target in outcomes for o in target.steps} - {s.step_id for s in summaries}
    wall_s = _seconds_between(started_at, finished_at) or estimate.wall_s
    spent = cost.actual(
        plan,
        summaries,
        launched_without_summary,
        departures or {},
        wall_s,
        estimate.worker_vcpu,
        estimate.worker_memory_gb,
        estimate.region,
        estimate.spot,
    )
    ledger.settle(decision.month, decision.campaign_id, spent.total_usd)
    return report.model_copy(update={"actual_usd": spent.total_usd, "actual_workers": spent.tasks})
