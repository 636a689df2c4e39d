"""The ports the use cases work through: what they need of the results store, the campaign's records,
the ledger, the start barrier, the worker launcher and the state machine's executions. pgarena.aws implements them on S3, DynamoDB and
ECS (the local runtime runs the same adapters against moto and its own ECS endpoint); the connection
leases' port carries its rule and lives in pgarena.campaign.leases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from pgarena.analysis.history.schema import ChangeAlert, IndexedRun
    from pgarena.campaign.leases import Leases
    from pgarena.model.history import HistoryEvent
    from pgarena.model.ledger import Booking, CostDecision, LedgerEntry
    from pgarena.model.matrix import Endpoint
    from pgarena.model.monitor import ConnectionReport
    from pgarena.model.outcomes import TargetOutcome
    from pgarena.model.plan import Plan, PreflightResult, Step, Work
    from pgarena.model.replication import ReplicaCatchUp
    from pgarena.model.results import StepSummary
    from pgarena.model.server_counters import CounterSnapshot
    from pgarena.model.tool_figures import ConsistencyCheck, DataChecks
    from pgarena.model.warm import Assignment, WorkerSlot


class Store(Protocol):
    """Raw output and documents by key (the results bucket), step summaries (the results table)."""

    def put_file(self, key: str, path: Path, content_type: str = "text/plain") -> str: ...
    def put_bytes(self, key: str, data: bytes, content_type: str) -> str: ...
    def put_json(self, key: str, data: dict[str, Any]) -> str: ...
    def get_json(self, key: str) -> dict[str, Any]: ...
    def keys(self, prefix: str) -> list[str]: ...
    def url(self, key: str) -> str: ...
    def put_summary(self, summary: StepSummary) -> None: ...
    def summaries(self, campaign_id: str) -> list[StepSummary]: ...
    def campaign_traces(self, campaign_id: str) -> list[str]: ...


class Records(Protocol):
    """What a campaign's states keep so that the execution's state carries only ids and indices: the
    plan and its owner, the cost decision, each preflight's answer, the state machine's outcomes."""

    def plan_owner(self, campaign_id: str) -> str | None: ...
    def claim_id(self, campaign_id: str, execution: str) -> str | None: ...
    def put_plan(self, plan: Plan, execution: str) -> None: ...
    def plan(self, campaign_id: str) -> Plan: ...
    def put_cost(self, decision: CostDecision) -> None: ...
    def put_preflight(self, campaign_id: str, phase: int, target: int, result: PreflightResult) -> None: ...
    def preflight(self, campaign_id: str, phase: int, target: int) -> PreflightResult: ...
    def recorded(self, campaign_id: str) -> tuple[Plan | None, CostDecision | None, dict[tuple[int, int], PreflightResult]]: ...
    def outcomes(self, plan: Plan, preflights: dict[tuple[int, int], PreflightResult]) -> list[TargetOutcome]: ...


class Ledger(Protocol):
    """The month's cost bookings: booked before a campaign starts, settled with what ran."""

    clock: Callable[[], float]

    def record_refusal(
        self, month: str, campaign_id: str, estimated_usd: float, reason: str, schedule: str | None = None
    ) -> LedgerEntry: ...
    def book(
        self,
        month: str,
        campaign_id: str,
        estimated_usd: float,
        monthly_cap_usd: float | None = None,
        schedule: str | None = None,
    ) -> Booking: ...
    def settle(self, month: str, campaign_id: str, actual_usd: float) -> LedgerEntry | None: ...


class Barrier(Protocol):
    """Shards (or a phase's targets) that start their measured run together."""

    def wait(self, campaign_id: str, group_id: str, shard: int, shards: int, timeout_s: float) -> tuple[float, bool]:
        """Block until the agreed start; (start epoch, whether every member arrived in time)."""
        ...


class Launcher(Protocol):
    """Starts one worker for one step (or one target's preflight on its site); it answers the state
    machine's task token itself."""

    def launch(
        self, step: Work, task_token: str, slot: WorkerSlot | None = None, last: bool = True
    ) -> tuple[str | None, list[Any]]:
        """(the started worker's id, or None; the platform's failures). A worker given `slot` registers
        there and, unless the step is its `last`, waits there for the next one."""
        ...


@dataclass(frozen=True)
class SlotState:
    """A warm worker's slot as last written: busy, idle, assigned (a step offered), gone (its worker left)
    or closed (no step will come: pgarena.model.warm's reasons)."""

    state: str
    worker: str  # "" for a slot closed before any worker registered there
    seq: int  # the offers made so far: a claim or a withdrawal names the one it means
    assignment: Assignment | None = None
    closed: str | None = None  # why the slot closed
    left: str | None = None  # why its worker left, and when (epoch seconds)
    left_at: float | None = None
    # The step the slot holds (offered, being launched, served or finished) and the task token it answers:
    # a retried launch of that step finds it here and hands it to no second worker. The task its worker
    # runs in (RunTask's ARN, when the slot's worker was started for it): a stopped task's step is found by it.
    step_id: str = ""
    task_token: str = field(default="", repr=False)
    task: str = ""


class WorkerSlots(Protocol):
    """Where the launch function finds a phase's warm worker and hands it the next step
    (pgarena.aws.worker_slots: conditional updates of one item per slot)."""

    def read(self, slot: WorkerSlot) -> SlotState | None: ...
    def offer(self, slot: WorkerSlot, assignment: Assignment) -> SlotState | None: ...
    def withdraw(self, slot: WorkerSlot, seq: int) -> bool: ...
    def launching(self, slot: WorkerSlot, assignment: Assignment) -> bool: ...
    def started(self, slot: WorkerSlot, task_token: str, task: str) -> None: ...
    def close(self, slot: WorkerSlot, why: str) -> SlotState | None: ...
    def register(self, slot: WorkerSlot, worker: str, task_token: str | None = None) -> bool: ...
    def finishing(self, slot: WorkerSlot, worker: str) -> None: ...
    def idle(self, slot: WorkerSlot, worker: str) -> bool: ...
    def beat(self, slot: WorkerSlot, worker: str) -> None: ...
    def claim(self, slot: WorkerSlot, worker: str, seq: int) -> bool: ...
    def leave(self, slot: WorkerSlot, worker: str, why: str) -> bool: ...


class TaskToken(Protocol):
    """The state machine's task a worker answers (a Step Functions task token): beaten while the step
    runs, then answered once."""

    def beat(self) -> bool:
        """Tell the state machine the worker is alive. False when it no longer waits for this task (timed
        out, the execution stopped: the token is gone); raises on a failure another beat may get past."""
        ...

    def succeed(self, output: str) -> None: ...
    def fail(self, error: str, cause: str) -> None: ...


class ToolProcess(Protocol):
    """A started tool, its stdout and stderr merged; closing it (leaving its `with`) reaps it."""

    def lines(self) -> Iterator[str]: ...
    def wait(self) -> int: ...
    def kill(self) -> None: ...


class ToolProcesses(Protocol):
    """Starts a step's tool (pgarena.worker.processes: a child process that dies with its worker)."""

    def start(self, argv: list[str], env: dict[str, str]) -> AbstractContextManager[ToolProcess]: ...
    def version(self, binary: str) -> str | None: ...


class ActivityMonitor(Protocol):
    """The target's sessions sampled while a run's tool runs, to its series file."""

    series_path: Path

    def report(self) -> ConnectionReport: ...


class LagMonitor(Protocol):
    """The replicas' lag sampled while a run's tool runs; their catch-up timed once it exits."""

    series_path: Path

    def catch_up(self) -> list[ReplicaCatchUp]: ...


class ServerReads(Protocol):
    """What a step reads of its target's server itself, besides the tool (pgarena.server, on pg8000)."""

    def postmaster_start(self, endpoint: Endpoint, wait_s: float = 0.0) -> str | None:
        """pg_postmaster_start_time(), waiting up to wait_s for the server to answer; None if it does not."""
        ...

    def counters(self, step: Step, closing: bool = False) -> CounterSnapshot | None:
        """The server's counters now (an edge of the step's window); None when it did not answer. `closing`:
        the closing edge, read once the step's sessions have exited (they flush their statistics then)."""
        ...

    def monitor(self, step: Step, series_path: Path) -> AbstractContextManager[ActivityMonitor]: ...
    def replication(self, step: Step, series_path: Path) -> AbstractContextManager[LagMonitor]: ...

    def check(self, step: Step, checks: DataChecks) -> list[ConsistencyCheck]:
        """`checks` run over one snapshot of the step's target after its run; a check that could not run is
        one that failed, saying why."""
        ...


class Documents(Protocol):
    """JSON documents by key in the results bucket: the Store's reading half, all start_campaign (which has
    no table) reads."""

    def get_json(self, key: str) -> dict[str, Any]: ...


class Executions(Protocol):
    """The state machine's executions (pgarena.aws.executions: Step Functions): start one, read one's
    history, fail a step that waits on a task token."""

    def start(self, state_machine_arn: str, name: str, execution_input: dict[str, Any]) -> str:
        """Start the execution `name`; its ARN, also when it was already started (a retried start)."""
        ...

    def history(self, execution_arn: str) -> list[HistoryEvent]:
        """Every event of the execution, oldest first."""
        ...

    def fail_task(self, task_token: str, error: str, cause: str) -> bool:
        """Fail the state waiting on `task_token`; False when the token is no longer waited for."""
        ...


class CampaignIndex(Protocol):
    """Every finished campaign run, by campaign name (pgarena.aws.history_index on the results table)."""

    def record(self, run: IndexedRun) -> None: ...
    def runs(self, campaign: str) -> list[IndexedRun]: ...
    def campaigns(self) -> list[str]: ...


class Alerts(Protocol):
    """Where the change points a campaign's run found first are told (pgarena.aws.alerts: an EventBridge
    event each, and an SNS message when the stack has a topic)."""

    def publish(self, alerts: list[ChangeAlert]) -> list[str]:
        """Publish each alert; what could not be published, one line each (nothing: all were)."""
        ...


class MetricReads(Protocol):
    """A managed server's metrics (CloudWatch's GetMetricData: pgarena.aws.cloudwatch)."""

    def metric_data(self, region: str | None, queries: list[dict[str, Any]], start: datetime, end: datetime) -> dict[str, Any]:
        """GetMetricData's answer in `region` (None: the home region), its pages' MetricDataResults and Messages
        joined, as JSON (timestamps ISO strings). Raises MetricsReadFailed when it is refused or fails."""
        ...


@dataclass(frozen=True)
class EndPorts:
    """What finalize goes through: the results store, and whatever the campaign holds there (the month's
    ledger to settle, the connection leases to give back, the workers' slots to close, the index of finished
    runs to add it to: `pgarena history --stack`, where to tell a change point the run found first). None: not held."""

    store: Store
    ledger: Ledger | None = None
    leases: Leases | None = None
    slots: WorkerSlots | None = None
    index: CampaignIndex | None = None
    metrics: MetricReads | None = None  # the targets' CloudWatch metrics, read for those that name their instance
    alerts: Alerts | None = None
