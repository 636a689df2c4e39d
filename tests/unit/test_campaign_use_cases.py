"""The use cases run on their ports alone: in-memory stores stand in for S3, DynamoDB and ECS here, with
no AWS (mocked or not) in the process. The AWS adapters' own behaviour is tested beside them
(test_campaign_state, test_ledger, test_leases, test_access)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgarena.campaign.claim import claim_and_plan
from pgarena.campaign.launch import launch
from pgarena.campaign.outcomes import target_outcomes
from pgarena.model import layout
from pgarena.model.errors import CampaignExists, ErrorKind, InvalidMatrix, PgarenaError
from pgarena.model.ledger import CostDecision
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.plan import Plan, PreflightResult, ShardRef, Step
from pgarena.model.results import StepSummary
from tests.conftest import FIXTURES
from tests.unit.test_campaign_state import preflight_result


class MemoryStore:
    """campaign.ports.Store on a dict."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.steps: dict[tuple[str, str], StepSummary] = {}
        self.claims: dict[str, str] = {}  # campaign id -> the execution that claimed it (the table's claim# items)

    def put_file(self, key: str, path: Path, content_type: str = "text/plain") -> str:
        self.objects[key] = path.read_bytes()
        return key

    def put_bytes(self, key: str, data: bytes, content_type: str) -> str:
        self.objects[key] = data
        return key

    def put_json(self, key: str, data: dict[str, Any]) -> str:
        return self.put_bytes(key, json.dumps(data).encode(), "application/json")

    def get_json(self, key: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.objects[key])
        return document

    def keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix))

    def url(self, key: str) -> str:
        return f"memory://{key}"

    def put_summary(self, summary: StepSummary) -> None:
        self.steps[(summary.campaign_id, summary.step_id)] = summary

    def summaries(self, campaign_id: str) -> list[StepSummary]:
        return [s for (c, _), s in self.steps.items() if c == campaign_id]

    def campaign_traces(self, campaign_id: str) -> list[str]:
        return [self.url(k) for k in self.keys(layout.campaign_prefix(campaign_id))]


class MemoryRecords:
    """campaign.ports.Records, keeping its documents in a MemoryStore as the S3 adapter does in the bucket."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.owners: dict[str, str] = {}

    def plan_owner(self, campaign_id: str) -> str | None:
        return self.owners.get(campaign_id)

    def claim_id(self, campaign_id: str, execution: str) -> str | None:
        holder = self.store.claims.setdefault(campaign_id, execution)
        return None if holder == execution else holder

    def put_plan(self, plan: Plan, execution: str) -> None:
        self.store.put_bytes(layout.plan_key(plan.campaign_id), plan.model_dump_json().encode(), "application/json")
        self.owners[plan.campaign_id] = execution

    def plan(self, campaign_id: str) -> Plan:
        return Plan.model_validate(self.store.get_json(layout.plan_key(campaign_id)))

    def put_cost(self, decision: CostDecision) -> None:
        self.store.put_json(layout.cost_key(decision.campaign_id), decision.model_dump(mode="json"))

    def put_preflight(self, campaign_id: str, phase: int, target: int, result: PreflightResult) -> None:
        key = layout.preflight_key(campaign_id, phase, target)
        self.store.put_bytes(key, result.model_dump_json().encode(), "application/json")

    def preflight(self, campaign_id: str, phase: int, target: int) -> PreflightResult:
        return PreflightResult.model_validate(self.store.get_json(layout.preflight_key(campaign_id, phase, target)))

    def recorded(self, campaign_id: str) -> tuple[Plan | None, CostDecision | None, dict[tuple[int, int], PreflightResult]]:
        plan = self.plan(campaign_id) if layout.plan_key(campaign_id) in self.store.objects else None
        return plan, None, {}

    def outcomes(self, plan: Plan, preflights: dict[tuple[int, int], PreflightResult]) -> list[TargetOutcome]:
        return target_outcomes(plan, preflights, {})


class MemoryLauncher:
    """campaign.ports.Launcher: starts nothing, answers as ECS would."""

    def __init__(self, failures: list[Any] | None = None) -> None:
        self.failures = failures or []
        self.launched: list[tuple[Step, str]] = []

    def launch(self, step: Step, task_token: str, slot: Any = None, last: bool = True) -> tuple[str | None, list[Any]]:
        if self.failures:
            return None, self.failures
        self.launched.append((step, task_token))
        return f"task-{len(self.launched)}", []


SHARD = ShardRef(campaign_id="e1", phase=1, target=0, step=0, shard=0)


def _matrix() -> dict[str, Any]:
    matrix: dict[str, Any] = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    matrix["targets"] = matrix["targets"][:1]  # the embedded one only the local runtime starts
    return matrix


def test_a_campaign_is_claimed_planned_and_kept_through_the_ports():
    # Given empty ports
    store = MemoryStore()
    records = MemoryRecords(store)

    # When an execution named e1 starts a bare matrix
    plan = claim_and_plan(_matrix(), "e1", store, records)

    # Then its id is the execution's name, the plan is kept by its owner, and a second execution is refused
    assert plan.campaign_id == "e1" and records.plan("e1") == plan and records.plan_owner("e1") == "e1"
    assert claim_and_plan(_matrix(), "e1", store, records) == plan  # Validate And Plan retried
    with pytest.raises(CampaignExists, match="campaign id 'e1' is already used"):
        claim_and_plan({"campaign_id": "e1", "matrix": _matrix()}, "e2", store, records)


def test_a_bad_matrix_is_refused_before_anything_is_kept():
    store = MemoryStore()
    matrix = _matrix()
    matrix["workloads"][0]["run"]["clients"] = 0
    with pytest.raises(InvalidMatrix, match="clients"):
        claim_and_plan(matrix, "e1", store, MemoryRecords(store))
    assert store.objects == {}


def test_a_shard_is_launched_from_preflight_s_answer_and_a_refused_launch_is_launch_failed():
    # Given a planned campaign whose first target's preflight answered
    store = MemoryStore()
    records = MemoryRecords(store)
    plan = claim_and_plan(_matrix(), "e1", store, records)
    first = plan.phases[0].targets[0]
    records.put_preflight("e1", 1, 0, preflight_result(first))

    # When its first step's only shard is launched
    launcher = MemoryLauncher()
    step, worker, started = launch(SHARD, "token-1", records, launcher)

    # Then the launcher got the step preflight kept, with the task token
    assert worker == "task-1" and started and launcher.launched == [(step, "token-1")] and step.target == first.name

    # And a launch the platform refuses fails as LaunchFailed (the state machine retries it)
    with pytest.raises(PgarenaError) as refused:
        launch(SHARD, "token-2", records, MemoryLauncher([{"reason": "RESOURCE:CPU"}]))
    assert refused.value.info().kind == ErrorKind.LAUNCH_FAILED and "RESOURCE:CPU" in refused.value.info().message
