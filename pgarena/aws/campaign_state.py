"""A campaign's state kept in the results bucket and table, so that the execution's state carries only
the campaign id and indices (Step Functions holds 256 KiB per state, and a DataLimitExceeded cannot be
caught: the campaign would be lost).

- the plan (Validate And Plan) and the cost decision (Check Cost Cap): one object each;
- each preflight's answer, per phase and target index: the server it found and the steps to run;
- the outcomes: the state machine writes an item when a target finishes or fails and when a worker
  fails (DynamoDB PutItem tasks); a shard with no failure item of a finished target succeeded.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.aws.ledger import CostDecision
from pgarena.model import layout
from pgarena.model.errors import CampaignExists
from pgarena.model.outcomes import StepOutcome, TargetOutcome
from pgarena.model.plan import Plan, PreflightResult, planned_target

if TYPE_CHECKING:
    from pgarena.aws.store import ResultStore

# S3 user metadata on the plan: the execution that planned it (a retried Validate finds its own plan).
EXECUTION_METADATA = "execution"


class CampaignState:
    def __init__(self, store: ResultStore):
        self.store = store

    def claim(self, campaign_id: str, execution: str, fix: str) -> None:
        """Refuse a campaign id that already has files or items, unless all it has is the plan this very
        execution wrote (its Validate And Plan retried)."""
        traces = self.store.campaign_traces(campaign_id)
        if not traces:
            return
        if traces == [self.store.url(layout.plan_key(campaign_id))] and self.plan_owner(campaign_id) == execution:
            return
        # Every worker's write-once summary would conflict and results.json would be overwritten.
        raise CampaignExists(f"campaign id {campaign_id!r} is already used ({traces[0]}): {fix}")

    def plan_owner(self, campaign_id: str) -> str | None:
        """The name of the execution that planned the campaign."""
        head = self.store.s3.head_object(Bucket=self.store.bucket, Key=layout.plan_key(campaign_id))
        return head.get("Metadata", {}).get(EXECUTION_METADATA)

    def put_plan(self, plan: Plan, execution: str) -> None:
        self.store.s3.put_object(
            Bucket=self.store.bucket,
            Key=layout.plan_key(plan.campaign_id),
            Body=plan.model_dump_json().encode(),
            ContentType="application/json",
            Metadata={EXECUTION_METADATA: execution},
        )

    def plan(self, campaign_id: str) -> Plan:
        return Plan.model_validate(self.store.get_json(layout.plan_key(campaign_id)))

    def put_cost(self, decision: CostDecision) -> None:
        self.store.put_json(layout.cost_key(decision.campaign_id), decision.model_dump(mode="json"))

    def put_preflight(self, campaign_id: str, phase: int, target: int, result: PreflightResult) -> None:
        self.store.put_bytes(
            layout.preflight_key(campaign_id, phase, target), result.model_dump_json().encode(), "application/json"
        )

    def preflight(self, campaign_id: str, phase: int, target: int) -> PreflightResult:
        return PreflightResult.model_validate(self.store.get_json(layout.preflight_key(campaign_id, phase, target)))

    def recorded(self, campaign_id: str) -> tuple[Plan | None, CostDecision | None, dict[tuple[int, int], PreflightResult]]:
        """What the campaign's states kept: the plan, the cost decision, each preflight's answer. Listed
        first: a missing object reads as AccessDenied to a role that may not list."""
        keys = set(self.store.keys(layout.state_prefix(campaign_id)))
        plan_key = layout.plan_key(campaign_id)
        plan = self.plan(campaign_id) if plan_key in keys else None
        cost_key = layout.cost_key(campaign_id)
        cost = CostDecision.model_validate(self.store.get_json(cost_key)) if cost_key in keys else None
        preflights: dict[tuple[int, int], PreflightResult] = {}
        for phase in plan.phases if plan else []:
            for index in range(len(phase.targets)):
                key = layout.preflight_key(campaign_id, phase.phase, index)
                if key in keys:
                    preflights[(phase.phase, index)] = self.preflight(campaign_id, phase.phase, index)
        return plan, cost, preflights

    def outcome_items(self, campaign_id: str) -> dict[str, dict[str, Any]]:
        """The state machine's outcome items, by sort key."""
        pages = self.store.dynamodb.get_paginator("query").paginate(
            TableName=self.store.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=marshal({":pk": access.OUTCOMES.pk(campaign_id)}),
            ConsistentRead=True,
        )
        return {item[access.SORT_KEY]: item for page in pages for item in map(unmarshal, page["Items"])}

    def outcomes(self, plan: Plan, preflights: dict[tuple[int, int], PreflightResult]) -> list[TargetOutcome]:
        """One outcome per target and phase the campaign reached (see target_outcomes)."""
        return target_outcomes(plan, preflights, self.outcome_items(plan.campaign_id))


class Subjects:
    """Names what a state works on, for progress (pgarena.aws.follow): the step id or the target's name its
    input's indices stand for, looked up in the plan and preflight's answers (each written once, so kept)."""

    def __init__(self, state: CampaignState):
        self.state = state
        self._plans: dict[str, Plan] = {}
        self._preflights: dict[tuple[str, int, int], PreflightResult] = {}

    def __call__(self, data: Any) -> str:
        if not isinstance(data, dict) or not isinstance(data.get("phase"), int) or not isinstance(data.get("target"), int):
            return ""
        campaign_id, phase, target = str(data.get("campaign_id")), data["phase"], data["target"]
        try:
            if "shard" in data:
                key = (campaign_id, phase, target)
                if key not in self._preflights:
                    self._preflights[key] = self.state.preflight(campaign_id, phase, target)
                return self._preflights[key].steps[int(data["step"]["index"])].shards[int(data["shard"])].step_id
            if campaign_id not in self._plans:
                self._plans[campaign_id] = self.state.plan(campaign_id)
            return planned_target(self._plans[campaign_id], phase, target).name
        except (ClientError, KeyError, IndexError, TypeError):  # not written yet, or not readable: unnamed
            return ""


def _failure(item: dict[str, Any] | None) -> dict[str, Any] | None:
    text = (item or {}).get(access.OUTCOME_FAILURE_ATTRIBUTE)
    if not text:
        return None
    try:
        failure: dict[str, Any] = json.loads(text)
    except ValueError:
        return {"Error": "States.Runtime", "Cause": str(text)}
    return failure


def target_outcomes(
    plan: Plan, preflights: dict[tuple[int, int], PreflightResult], items: dict[str, dict[str, Any]]
) -> list[TargetOutcome]:
    """The outcomes the state machine's Maps used to return, rebuilt from what it recorded. Pure.

    A target has an outcome once preflight answered or a target item was written. Its steps are
    preflight's shards: failed where a shard item records the Catch's failure; succeeded when the
    target finished (every shard either succeeded or was recorded failed); otherwise unknown (the
    execution stopped meanwhile: the workers' summaries tell)."""
    outcomes = []
    for phase in plan.phases:
        for index, planned in enumerate(phase.targets):
            pre = preflights.get((phase.phase, index))
            item = items.get(access.outcome_target_sk(phase.phase, index))
            if pre is None and item is None:
                continue
            finished = item is not None and _failure(item) is None
            steps = []
            for s, group in enumerate(pre.steps if pre else []):
                for k, shard in enumerate(group.shards):
                    failed = _failure(items.get(access.outcome_shard_sk(phase.phase, index, s, k)))
                    if failed is not None:
                        steps.append(StepOutcome(step_id=shard.step_id, status="failed", failure=failed))
                    elif finished:
                        steps.append(StepOutcome(step_id=shard.step_id, status="succeeded"))
            outcomes.append(
                TargetOutcome(
                    name=planned.name,
                    server=pre.server if pre else None,
                    steps=steps,
                    failure=_failure(item),
                    phase=phase.phase,
                )
            )
    return outcomes
