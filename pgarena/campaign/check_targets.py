"""Check Targets: before any target's load starts, every target preflighted at home is reached and logged
into, so that a wrong or unset password on the last target fails the campaign at once, naming the target
and the variable (or secret) to fix, instead of after the first targets' loads and runs.

Only what never heals by itself fails the campaign here: a refused login (`authentication`). A port
that refuses, a host that does not resolve, a server too busy for the plan may be a server restarting
or other sessions that leave: those stay one target's failure, found by its phase's preflight (which
retries, waits for leases and clamps), and the other targets are measured. It leases nothing and keeps
nothing. A target preflighted on its site (a region or an external site) is not reachable from home
and is checked there, by its preflight.
"""

from __future__ import annotations

from pydantic import BaseModel

from pgarena.campaign.ports import Records
from pgarena.model.errors import ErrorInfo, ErrorKind, PgarenaError, failure
from pgarena.model.plan import PhaseRef, Plan, PlannedTarget, campaign_tag
from pgarena.server.identity import IDENTIFY_SESSION
from pgarena.server.postgres import connect

# What fails the campaign before anything loads: a credential the user must fix.
FAILS_THE_CAMPAIGN = frozenset({ErrorKind.AUTHENTICATION})


class CheckTargetsEvent(BaseModel):
    """Check Targets' payload: the campaign and its phases as Validate And Plan listed them."""

    campaign_id: str
    phases: list[PhaseRef]


class TargetsChecked(BaseModel):
    """Check Targets' answer: the targets logged into, and those left to their preflight with why."""

    checked: list[str]
    left_to_preflight: dict[str, ErrorInfo]


def home_targets(plan: Plan, phases: list[PhaseRef]) -> list[PlannedTarget]:
    """Each target once (its steps of every phase), but those preflighted on their site in any phase."""
    on_site = {
        plan_phase.targets[i].name
        for ref, plan_phase in zip(phases, plan.phases)
        for i in ref.on_site
        if i < len(plan_phase.targets)
    }
    return [t for t in plan.targets if t.name not in on_site]


def check_target(target: PlannedTarget, campaign_id: str) -> ErrorInfo | None:
    """One connection as the benchmark's role. A refused login raises, naming the target; any other
    failure is answered (its preflight finds it again and fails that target alone)."""
    try:
        # Named as preflight's identifying session: one login before this campaign's turn, counted by no
        # other campaign's budget or background load (pgarena.server.identity)
        with connect(target.endpoint, application_name=f"{campaign_tag(campaign_id)}/{IDENTIFY_SESSION}"):
            return None
    except PgarenaError as error:
        if error.kind in FAILS_THE_CAMPAIGN:
            raise failure(error.kind, f"target {target.name}: {error}; nothing was loaded", error.raw) from None
        return error.info()


def check_targets(event: CheckTargetsEvent, records: Records) -> TargetsChecked:
    """Every target preflighted at home checked, in the matrix's order. The first whose login is refused
    fails the campaign before anything loads."""
    targets = home_targets(records.plan(event.campaign_id), event.phases)
    checked, left = [], {}
    for target in targets:
        problem = check_target(target, event.campaign_id)
        if problem is None:
            checked.append(target.name)
        else:
            left[target.name] = problem
    return TargetsChecked(checked=checked, left_to_preflight=left)
