"""The pgarena.campaign.ports.Records port: a campaign's state kept in the results bucket and table, so that the execution's state carries only
the campaign id and indices (Step Functions holds 256 KiB per state, and a DataLimitExceeded cannot be
caught: the campaign would be lost).

- the plan (Validate And Plan) and the cost decision (Check Cost Cap): one object each;
- each preflight's answer, per phase and target index: the server it found and the steps to run;
- the outcomes: the state machine writes an item when a target finishes or fails and when a worker
  fails (DynamoDB PutItem tasks); a shard with no failure item of a finished target succeeded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.campaign.outcomes import target_outcomes
from pgarena.model import layout
from pgarena.model.ledger import CostDecision
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.plan import Plan, PreflightResult

if TYPE_CHECKING:
    from pgarena.aws.store import ResultStore

# S3 user metadata on the plan: the execution that planned it (a retried Validate finds its own plan).
EXECUTION_METADATA = "execution"


class CampaignState:
    def __init__(self, store: ResultStore):
        self.store = store

    def plan_owner(self, campaign_id: str) -> str | None:
        """The name of the execution that planned the campaign."""
        head = self.store.s3.head_object(Bucket=self.store.bucket, Key=layout.plan_key(campaign_id))
        return head.get("Metadata", {}).get(EXECUTION_METADATA)

    def claim_id(self, campaign_id: str, execution: str) -> str | None:
        """Take the campaign id for `execution`, at once for all (a conditional put: two executions given
        one id at the same moment cannot both pass). None when it is this execution's (taken now, or
        before: its Validate And Plan retried); else the execution that holds it."""
        try:
            self.store.dynamodb.put_item(
                TableName=self.store.table,
                Item={**access.campaign_claim_key(campaign_id), **marshal({"execution": execution})},
                ConditionExpression="attribute_not_exists(pk) OR execution = :me",
                ExpressionAttributeValues=marshal({":me": execution}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            held = cast("dict[str, Any]", error.response).get("Item") or {}  # the failed check's item (ALL_OLD)
            return str(unmarshal(held).get("execution") or "another execution")
        return None

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
