"""The plan's records: the steps, targets and phases the state machine runs, and the small refs passed between states."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pgarena.model import layout
from pgarena.model.managed_metrics import CloudWatchSource
from pgarena.model.matrix import (
    ConnectionPolicy,
    CostPolicy,
    Endpoint,
    Placement,
    Pooler,
    RankingConfig,
    Replica,
    Scenario,
)
from pgarena.model.results import RunOrder, ServerInfo
from pgarena.model.sites import SiteMap
from pgarena.model.tool_spec import StepKind
from pgarena.tools.workloads import ToolStep

# A run gets its duration plus this before Step Functions gives up on it.
RUN_TIMEOUT_MARGIN_S = 300


# A worker process exits this long after its step's timeout, whatever it is doing (pgarena.worker):
# a stuck task stops its Fargate bill even though Step Functions, having timed out, no longer waits.
WORKER_HARD_STOP_GRACE_S = 120


# Loading is slow on big scales: a fixed floor plus time per scale unit (100,000 rows).
INIT_TIMEOUT_BASE_S = 600


INIT_TIMEOUT_PER_SCALE_S = 30


# How long the runs of a consolidation step wait for every target to arrive before starting anyway.
PHASE_BARRIER_TIMEOUT_S = 300


# Every session a campaign opens is named `pgarena/<12 hex of its id>/<role>`: preflight tells this
# campaign's sessions from other campaigns' (counted as held) and from everyone else's.
CAMPAIGN_TAG_RE = r"^pgarena/([0-9a-f]{12})/"


def campaign_tag(campaign_id: str) -> str:
    """The application_name prefix of a campaign's sessions (a hash: names stay within 63 bytes)."""
    return "pgarena/" + hashlib.sha1(campaign_id.encode()).hexdigest()[:12]


class Boundary(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PhaseBarrier(Boundary):
    """The runs of one consolidation step, one per target, start together (pgarena.barrier)."""

    group: str = Field(description="e.g. p2/tpcb/c4-r1: the same on every target of the phase")
    index: int = Field(description="this target's position in the phase")
    size: int = Field(description="targets running together")


class Step(Boundary):
    """One worker task: everything a worker needs, secrets by reference only."""

    step_id: str
    campaign_id: str
    target: str
    workload: str
    kind: StepKind
    spec: ToolStep = Field(description="the step's run record, resolved at planning for its tool and kind")
    endpoint: Endpoint
    placement: Placement | None = None
    clients: int | None = Field(None, description="the clients (or threads) this run opens")
    requested_clients: int | None = Field(None, description="set when the budget clamped the client count")
    repetition: int = 1
    timeout_s: int
    monitor_interval_s: float = 5.0
    shard: int = Field(0, description="this worker's index among the step's shards")
    shards: int = Field(1, description="workers running this step together")
    group_id: str | None = Field(None, description="the logical step a shard belongs to")
    heartbeat_timeout_s: int = Field(60, description="Run Worker Task's HeartbeatSecondsPath: silent this long = lost")
    hostaddr: str | None = Field(None, description="set by preflight when the endpoint uses its resolved address")
    postmaster_started_at: str | None = Field(None, description="pg_postmaster_start_time() preflight read")
    replicas: list[Replica] = Field(default_factory=list, description="runs time the replicas' catch-up")
    phase: int | None = Field(None, description="the consolidation step this step belongs to")
    phase_barrier: PhaseBarrier | None = None

    @property
    def tool(self) -> str:
        return self.spec.tool

    @property
    def raw_prefix(self) -> str:
        return layout.step_raw_prefix(self.campaign_id, self.step_id)

    @property
    def shard_barrier_timeout_s(self) -> int:
        """How long a shard waits at its step's start barrier for the others: the cold start the heartbeat
        timeout allows (a shard not there by then was never launched, or is lost). A sharded step's timeout
        includes it (pgarena.planning.shards), so the survivors still run and the step ends degraded."""
        return self.heartbeat_timeout_s

    @property
    def tool_runs(self) -> int:
        """Tool runs the step makes in sequence: an SLO search's ceiling run and probes, else one."""
        return self.spec.tool_runs

    @property
    def tool_timeout_s(self) -> int:
        """Each tool run's own kill timeout: the step's, or for an SLO search one run's share (its
        duration plus the margin), so that one stuck probe cannot use up the others' time."""
        if self.tool_runs == 1:
            return self.timeout_s
        assert self.spec.duration_s is not None  # an slo needs duration_s
        return self.spec.duration_s + RUN_TIMEOUT_MARGIN_S

    @property
    def connections(self) -> int:
        """Connections this step opens at its peak, as its tool counts them."""
        return self.spec.connections(self.kind, self.clients)

    @property
    def application_name(self) -> str:
        """Tags the step's sessions in pg_stat_activity (at most 63 bytes): the monitor counts them, other
        campaigns' preflights tell them apart (campaign_tag)."""
        return f"{campaign_tag(self.campaign_id)}/{hashlib.sha1(self.step_id.encode()).hexdigest()[:12]}"


class PlannedTarget(Boundary):
    name: str
    provider: str
    endpoint: Endpoint
    placement: Placement | None = None
    hourly_cost_usd: float | None = None
    pooler: Pooler | None = None
    cloudwatch: CloudWatchSource | None = Field(None, description="the DB instance whose CloudWatch metrics finalize reads")
    connections: ConnectionPolicy
    connections_needed: int
    steps: list[Step]


class PlanPhase(Boundary):
    """Targets benchmarked in one pass of the state machine's phase Map; phases run one after the other."""

    phase: int
    concurrency: int = Field(description="targets of the phase benchmarked at once (Benchmark Targets' MaxConcurrency)")
    targets: list[PlannedTarget]


class Plan(Boundary):
    campaign_id: str
    campaign: str
    repetitions: int = Field(description="repetitions planned: all of them, or an adaptive campaign's most")
    min_repetitions: int | None = Field(
        None, description="an adaptive campaign's repetitions always run; the phases past them run only while needed"
    )
    max_repetitions: int | None = Field(
        None,
        description="an adaptive campaign's maximum, kept when `repetitions` is cut to what ran (phases not needed left out)",
    )
    target_concurrency: int
    phases: list[PlanPhase] = Field(
        min_length=1, description="one phase with every target, or a consolidation sweep's steps in order"
    )
    ranking: RankingConfig | None = None
    cost: CostPolicy | None = None
    scenario: Scenario | None = None
    run_order: RunOrder | None = Field(None, description="the seed and the interleaved order of the phases' targets")

    @model_validator(mode="before")
    @classmethod
    def _targets_are_one_phase(cls, data: Any) -> Any:
        """A plan given `targets` benchmarks them all in one phase."""
        if isinstance(data, dict) and "targets" in data:
            data = dict(data)
            targets = data.pop("targets")
            data.setdefault("phases", [{"phase": 1, "concurrency": data.get("target_concurrency", 1), "targets": targets}])
        return data

    @property
    def targets(self) -> list[PlannedTarget]:
        """Each target once, with its steps from every phase in order (phases never repeat a step id)."""
        merged: dict[str, PlannedTarget] = {}
        for phase in self.phases:
            for target in phase.targets:
                seen = merged.get(target.name)
                merged[target.name] = (
                    target
                    if seen is None
                    else seen.model_copy(
                        update={
                            "steps": [*seen.steps, *target.steps],
                            "connections_needed": max(seen.connections_needed, target.connections_needed),
                        }
                    )
                )
        if self.run_order is not None:  # the matrix's order, not the shuffled order they ran in
            order = {name: i for i, name in enumerate(self.run_order.targets)}
            return sorted(merged.values(), key=lambda t: order.get(t.name, len(order)))
        return list(merged.values())

    @property
    def adaptive(self) -> bool:
        return self.min_repetitions is not None

    @property
    def design(self) -> tuple[int, int] | None:
        """(min, max) runs per point of adaptive repetitions, the sequential design's looks; None when fixed."""
        if self.min_repetitions is None:
            return None
        return self.min_repetitions, self.max_repetitions or self.repetitions

    def repetition_of(self, phase: int) -> int | None:
        """The repetition a phase runs (None: every one, or a cleanup)."""
        passes = self.run_order.passes if self.run_order else []
        return next((p.repetition for p in passes if p.phase == phase and not p.cleanup), None)

    def conditional(self, phase: int) -> bool:
        """A phase an adaptive campaign runs only when its decision asks for it: a repetition past min."""
        repetition = self.repetition_of(phase)
        return self.min_repetitions is not None and repetition is not None and repetition > self.min_repetitions

    def batch_from(self, first: int) -> list[int]:
        """The phases run together from `first`: it, then every following phase that needs no decision
        (all of them in a fixed plan; in an adaptive one up to the next repetition past min)."""
        batch: list[int] = []
        for number in (p.phase for p in self.phases if p.phase >= first):
            if batch and (self.conditional(number) or self.conditional(batch[0])):
                break  # a repetition past min is followed by its decision
            batch.append(number)
        return batch

    def batches(self) -> list[list[int]]:
        """Run Phases In Order's batches when every phase runs (an adaptive plan at its maximum); one in a fixed plan."""
        out: list[list[int]] = []
        first = min((p.phase for p in self.phases), default=1)
        while batch := self.batch_from(first):
            out.append(batch)
            first = batch[-1] + 1
        return out

    @property
    def phased(self) -> bool:
        """A consolidation sweep: step ids and raw paths carry the phase (p1/, p2/, ...)."""
        return bool(self.scenario and self.scenario.consolidation)


# What the execution's state carries instead of the plan (which lives in the bucket, layout.plan_key):
# a campaign id and indices, each Map iterating over small items. Its size grows with the phases
# (workloads x repetitions, or a sweep's steps) and a target's steps in one phase, never with
# targets x steps x shards: pgarena.planning.limits refuses a campaign whose refs would not fit.


class PhaseRef(Boundary):
    """An item of Run Phases In Order: List Phase Targets makes the target indices 0..last_target."""

    phase: int
    concurrency: int
    last_target: int
    on_site: list[int] = Field(
        default_factory=list, description="the indices of the phase's targets whose preflight runs on their site"
    )


class PlanRef(Boundary):
    """Validate And Plan's answer, and each decision's of an adaptive campaign (Decide More Phases): the
    phases Run Phases In Order runs next. `through`: the last of them; `adaptive`: a decision follows."""

    campaign_id: str
    phases: list[PhaseRef]
    through: int = 0
    adaptive: bool = False

    @classmethod
    def of(cls, plan: Plan, sites: SiteMap | None = None, first: int = 1) -> PlanRef:
        """`sites`: the stack's, which tell the targets preflighted on their site from those preflighted at home.
        `first`: the phase to run next; an adaptive plan runs from there to its next decision, a fixed one
        all of its phases."""
        numbers = set(plan.batch_from(first))
        phases = [
            PhaseRef(
                phase=p.phase,
                concurrency=p.concurrency,
                last_target=len(p.targets) - 1,
                on_site=[i for i, t in enumerate(p.targets) if sites is not None and sites.preflight_site(t.placement)],
            )
            for p in plan.phases
            if p.phase in numbers
        ]
        return cls(campaign_id=plan.campaign_id, phases=phases, through=max(numbers, default=0), adaptive=plan.adaptive)


class StepRef(Boundary):
    """An item of Run Steps In Order: List Shards makes the shard indices 0..last_shard; Run Worker Task
    reads its timers (HeartbeatSecondsPath, TimeoutSecondsPath) from here."""

    index: int
    last_shard: int
    timeout_s: int
    heartbeat_timeout_s: int


# Preflight On Site's timers (statemachines/campaign.asl.json; tests/unit/test_preflight_on_site.py keeps them
# equal): a worker's cold start on its site is allowed the heartbeat timeout steps get by default, and the
# whole task that plus the longest lease wait (lease_wait_s, at most 600 s) and the server's answers.
PREFLIGHT_HEARTBEAT_TIMEOUT_S = 300
PREFLIGHT_TIMEOUT_S = 1200
PREFLIGHT = "preflight"


class PreflightTask(Boundary):
    """A target's preflight as a worker task on its site: what RunTask's overrides carry in place of a Step
    (the same variable, so that what reads a task's campaign, target or id reads it from either)."""

    kind: Literal["preflight"] = "preflight"
    step_id: str = Field(description="the task's id: ECS's idempotency token and the logs name it")
    campaign_id: str
    phase: int
    index: int = Field(description="the target's index in the phase (TargetRef.target)")
    target: str = Field(description="the target's name")
    site: str = Field(description="the site it runs on: a worker site's region, or an external site's name")
    placement: Placement | None = None
    timeout_s: int = PREFLIGHT_TIMEOUT_S
    heartbeat_timeout_s: int = PREFLIGHT_HEARTBEAT_TIMEOUT_S

    @classmethod
    def of(cls, ref: TargetRef, target: PlannedTarget, site: str) -> PreflightTask:
        return cls(
            step_id=f"{PREFLIGHT}-p{ref.phase}-t{ref.target}",
            campaign_id=ref.campaign_id,
            phase=ref.phase,
            index=ref.target,
            target=target.name,
            site=site,
            placement=target.placement,
        )

    @property
    def ref(self) -> TargetRef:
        return TargetRef(campaign_id=self.campaign_id, phase=self.phase, target=self.index)


# What one worker task is given: a step, or a target's preflight on its site.
Work = Step | PreflightTask


def is_preflight(work: str) -> bool:
    """Whether a worker's task (RunTask's STEP_VAR, as JSON) is a preflight rather than a step."""
    try:
        return isinstance(decoded := json.loads(work), dict) and decoded.get("kind") == PREFLIGHT
    except ValueError:
        return False


class PreflightRef(Boundary):
    """Preflight Target's answer: the target's name (progress) and its steps."""

    name: str
    steps: list[StepRef]


class StepGroup(BaseModel):
    """One logical step as the state machine runs it: its shards run at the same time."""

    step_id: str
    kind: str
    shards: list[Step] = Field(min_length=1)


class PreflightResult(BaseModel):
    """What preflight found and what the target runs: kept in the bucket (layout.preflight_key), never in
    the execution's state, which carries its `ref` only."""

    server: ServerInfo
    steps: list[StepGroup] = Field(description="the steps to run, in order, each split into its shards")
    lease_key: str | None = Field(
        None, description="the lease's key as preflight made it, from its site's resolver: the release gives it back there"
    )

    def step_refs(self) -> list[StepRef]:
        """The items of Run Steps In Order: indices and the two timers its Task state reads from the state."""
        return [
            StepRef(
                index=i,
                last_shard=len(group.shards) - 1,
                timeout_s=group.shards[0].timeout_s,
                heartbeat_timeout_s=group.shards[0].heartbeat_timeout_s,
            )
            for i, group in enumerate(self.steps)
        ]


def planned_target(plan: Plan, phase: int, target: int) -> PlannedTarget:
    """The target a Map item names by phase number and index in the phase."""
    return plan.phases[phase - 1].targets[target]


class TargetRef(Boundary):
    """A target by the indices a Map item carries: the campaign, the phase's number, its index there."""

    campaign_id: str
    phase: int
    target: int


class ShardRef(TargetRef):
    """One shard of one of the target's steps (preflight's answer holds the step itself)."""

    step: int  # the step's index in the target's steps
    shard: int
