"""The use cases run on their ports alone: in-memory stores stand in for S3, DynamoDB, ECS and Step Functions here, with
no AWS (mocked or not) in the process. The AWS adapters' own behaviour is tested beside them
(test_campaign_state, test_ledger, test_leases, test_access)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgarena.campaign.claim import claim_and_plan
from pgarena.campaign.finalize import StoppedExecution, finalize_stopped
from pgarena.campaign.launch import launch
from pgarena.campaign.outcomes import target_outcomes
from pgarena.campaign.ports import EndPorts
from pgarena.campaign.scheduled import Firing, Started, start_scheduled
from pgarena.campaign.stopped_worker import StepFailure, fail_step
from pgarena.model import layout
from pgarena.model.errors import CampaignExists, Caught, ErrorInfo, ErrorKind, InvalidMatrix, PgarenaError, error_info
from pgarena.model.history import HISTORY, HistoryEvent
from pgarena.model.ledger import CostDecision
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.plan import Plan, PreflightResult, ShardRef, Step
from pgarena.model.results import CampaignResults, StepSummary
from pgarena.model.stopped import StoppedWorker
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


class MemoryExecutions:
    """campaign.ports.Executions: executions kept by name, histories given, task tokens waited on."""

    def __init__(self, histories: dict[str, list[dict[str, Any]]] | None = None, waiting: tuple[str, ...] = ()) -> None:
        self.inputs: dict[str, dict[str, Any]] = {}
        self.histories = {arn: HISTORY.validate_python(events) for arn, events in (histories or {}).items()}
        self.waiting = set(waiting)
        self.failures: list[tuple[str, str, str]] = []

    def start(self, state_machine_arn: str, name: str, execution_input: dict[str, Any]) -> str:
        self.inputs.setdefault(name, execution_input)  # a name already started is that execution, as in Step Functions
        return f"{state_machine_arn.replace(':stateMachine:', ':execution:')}:{name}"

    def history(self, execution_arn: str) -> list[HistoryEvent]:
        return self.histories[execution_arn]

    def fail_task(self, task_token: str, error: str, cause: str) -> bool:
        if task_token not in self.waiting:
            return False
        self.waiting.remove(task_token)
        self.failures.append((task_token, error, cause))
        return True


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
    launched = launch(SHARD, "token-1", records, launcher)

    # Then the launcher got the step preflight kept, with the task token
    step = launched.step
    assert launched.worker == "task-1" and launched.started and launcher.launched == [(step, "token-1")]
    assert step.target == first.name

    # And a launch the platform refuses fails as LaunchFailed (the state machine retries it)
    with pytest.raises(PgarenaError) as refused:
        launch(SHARD, "token-2", records, MemoryLauncher([{"reason": "RESOURCE:CPU"}]))
    assert refused.value.info().kind == ErrorKind.LAUNCH_FAILED and "RESOURCE:CPU" in refused.value.info().message


MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:campaign"


def test_a_scheduled_firing_starts_its_campaign_from_the_bucket_once():
    # Given a schedule's matrix in the bucket
    store = MemoryStore()
    store.put_json("matrices/weekly.json", _matrix())
    executions = MemoryExecutions()
    firing = Firing(schedule="weekly", matrix_key="matrices/weekly.json", scheduled_time="2026-11-26T02:00:00+01:00")

    # When the firing starts it, then is retried (the same scheduled time)
    started = start_scheduled(firing, store, executions, MACHINE)
    again = start_scheduled(firing, store, executions, MACHINE)

    # Then one execution, named after the campaign (the schedule and the firing's time in UTC), has the
    # matrix with the schedule's name as its input, and the retry answers with that same execution
    campaign_id = "weekly-20261126T010000Z"
    assert started == again == Started(campaign_id, f"arn:aws:states:us-east-1:123456789012:execution:campaign:{campaign_id}")
    assert executions.inputs == {
        campaign_id: {"campaign_id": campaign_id, "matrix": {**_matrix(), "cost": {"schedule": "weekly"}}}
    }


def _unstarted(home_region: str | None) -> StoppedWorker:
    error = ErrorInfo(kind=ErrorKind.WORKER_DID_NOT_START, message="CannotPullContainerError: no such image")
    return StoppedWorker(task_arn="task-1", step_id="e1/t/c4/r1/run", task_token="tok", error=error, home_region=home_region)


@pytest.mark.parametrize("home_region", [None, "us-east-1"])
def test_a_stopped_worker_s_step_is_failed_once_in_its_home_region(home_region):
    # Given a worker whose task never ran, and the state machine of its home region waiting on its token
    home = MemoryExecutions(waiting=("tok",))
    asked = []

    def executions_in(region: str | None) -> MemoryExecutions:
        asked.append(region)
        return home

    # When its step is failed, twice (EventBridge delivers at least once)
    first, second = (fail_step(_unstarted(home_region), executions_in) for _ in range(2))

    # Then the home region's state machine got one failure, which reads back as the worker's error; the
    # second finds the token no longer waited for
    assert asked == [home_region, home_region]
    assert (first, second) == (StepFailure("e1/t/c4/r1/run", failed=True), StepFailure("e1/t/c4/r1/run", failed=False))
    ((token, error, cause),) = home.failures
    assert token == "tok" and error == "WorkerDidNotStart"
    assert error_info(Caught({"Error": error, "Cause": cause})) == _unstarted(None).error


def _stopped_execution(name: str) -> StoppedExecution:
    return StoppedExecution(
        f"arn:aws:states:us-east-1:123456789012:execution:campaign:{name}", "cancelled", "2026-11-26T02:00:00Z"
    )


def test_a_stopped_execution_is_finalized_from_its_history_read_through_the_port():
    # Given an execution started with a bare matrix and stopped before Validate And Plan answered: its
    # history holds its input, nothing of it was recorded
    store = MemoryStore()
    stopped = _stopped_execution("run-7")
    started = {"id": 1, "type": "ExecutionStarted", "executionStartedEventDetails": {"input": json.dumps(_matrix())}}
    executions = MemoryExecutions({stopped.arn: [started]})

    # When finalize_stopped ends it
    finalized = finalize_stopped(stopped, MemoryRecords(store), executions, EndPorts(store))

    # Then its campaign is the execution's name, every target is listed cancelled, and results.json is kept
    assert finalized is not None and finalized.results_key == "run-7/results.json"
    kept = CampaignResults.model_validate(store.get_json(finalized.results_key))
    assert kept.status == "cancelled" and [t.name for t in kept.targets] == [t["name"] for t in _matrix()["targets"]]


def test_an_execution_refused_at_validate_is_not_finalized():
    # Given an execution whose history shows Validate And Plan refused it (another campaign's id)
    store = MemoryStore()
    stopped = _stopped_execution("e2")
    events = [
        {
            "id": 1,
            "type": "ExecutionStarted",
            "executionStartedEventDetails": {"input": json.dumps({"campaign_id": "cid", "matrix": _matrix()})},
        },
        {"id": 2, "type": "FailStateEntered", "stateEnteredEventDetails": {"name": "Campaign Id In Use", "input": "{}"}},
    ]

    # When finalize_stopped sees it / Then nothing is finalized and nothing written
    assert finalize_stopped(stopped, MemoryRecords(store), MemoryExecutions({stopped.arn: events}), EndPorts(store)) is None
    assert store.objects == {}
