"""Validate And Plan: check the matrix and the campaign id before anything touches a database, then
plan the steps and keep the plan (the execution's state carries the campaign id and indices only)."""

from __future__ import annotations

from typing import Any

from pgarena.campaign.ports import Records, Store
from pgarena.model import layout
from pgarena.model.errors import CampaignExists, InvalidMatrix
from pgarena.model.execution import execution_request
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.plan import Plan
from pgarena.model.sites import SiteMap, site_problems
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign


def claim(store: Store, records: Records, campaign_id: str, execution: str, fix: str) -> None:
    """Refuse a campaign id that already has files or items, unless all it has is the plan this very
    execution wrote (its Validate And Plan retried); then take it with a conditional write, so that of
    two executions given one new id at the same moment (both find no trace), one is refused."""
    traces = store.campaign_traces(campaign_id)
    if traces and not (traces == [store.url(layout.plan_key(campaign_id))] and records.plan_owner(campaign_id) == execution):
        # Every worker's write-once summary would conflict and results.json would be overwritten.
        raise CampaignExists(f"campaign id {campaign_id!r} is already used ({traces[0]}): {fix}")
    holder = records.claim_id(campaign_id, execution)
    if holder is not None:
        raise CampaignExists(f"campaign id {campaign_id!r} is already used (claimed by execution {holder}): {fix}")


def claim_and_plan(
    execution_input: Any, execution_name: str, store: Store, records: Records, sites: SiteMap | None = None
) -> Plan:
    """The execution's input (a bare matrix, or {"campaign_id", "matrix"}) parsed, its placements checked
    against the stack's `sites`, its campaign id claimed, its steps planned and the plan kept."""
    request = execution_request(execution_input, execution_name)
    try:
        campaign = parse_campaign(request.matrix)
    except MatrixError as error:
        raise InvalidMatrix(str(error)) from None
    problems = site_problems(campaign, sites) if sites is not None else []
    if problems:
        raise InvalidMatrix(str(MatrixError(problems)))
    fix = "give another campaign_id" if request.id_from == "input" else "start the execution under another name"
    claim(store, records, request.campaign_id, execution_name, fix)
    plan = plan_campaign(campaign, request.campaign_id)
    records.put_plan(plan, execution_name)
    return plan
