"""Planning: a validated campaign becomes the state machine's work list. Pure functions only."""

from __future__ import annotations

import hashlib
from typing import Literal

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pgarena.errors import InvalidMatrix
from pgarena.sysbench import connections_used as sysbench_connections
from pgarena.matrix import (
    Campaign,
    ConnectionPolicy,
    CostPolicy,
    Endpoint,
    Placement,
    Pooler,
    RankingConfig,
    Replica,
    Scenario,
    SysbenchWorkload,
    Target,
    Workload,
)

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
    kind: Literal["init", "run", "cleanup"]
    spec: Workload = Field(description="the workload as the matrix gives it")
    endpoint: Endpoint
    placement: Placement | None = None
    clients: int | None = Field(None, description="pgbench clients or sysbench threads this run opens")
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
        return f"{self.campaign_id}/raw/{self.step_id}"

    @property
    def connections(self) -> int:
        """Connections this step opens at its peak (measured server-side, see README "Connection budgets").

        pgbench: -i uses one; a run one per client (its setup connection closes before the clients
        connect). sysbench: a run one per thread; prepare one per thread plus one per table being
        loaded; cleanup one.
        """
        if isinstance(self.spec, SysbenchWorkload):
            command = {"init": "prepare", "run": "run", "cleanup": "cleanup"}[self.kind]
            threads = self.clients if self.kind == "run" else self.spec.prepare.threads
            return sysbench_connections(command, threads, self.spec.prepare.tables)
        if self.kind == "run":
            assert self.clients is not None
            return self.clients
        return 1

    @property
    def application_name(self) -> str:
        """Tags the step's sessions in pg_stat_activity (at most 63 bytes) so the monitor can count them."""
        return "pgarena/" + hashlib.sha1(f"{self.campaign_id}/{self.step_id}".encode()).hexdigest()[:16]


class PlannedTarget(Boundary):
    name: str
    provider: str
    endpoint: Endpoint
    placement: Placement | None = None
    hourly_cost_usd: float | None = None
    pooler: Pooler | None = None
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
    repetitions: int
    target_concurrency: int
    phases: list[PlanPhase] = Field(
        min_length=1, description="one phase with every target, or a consolidation sweep's steps in order"
    )
    ranking: RankingConfig | None = None
    cost: CostPolicy | None = None
    scenario: Scenario | None = None

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
                merged[target.name] = target if seen is None else seen.model_copy(update={
                    "steps": [*seen.steps, *target.steps],
                    "connections_needed": max(seen.connections_needed, target.connections_needed),
                })
        return list(merged.values())

    @property
    def phased(self) -> bool:
        """A consolidation sweep: step ids and raw paths carry the phase (p1/, p2/, ...)."""
        return bool(self.scenario and self.scenario.consolidation)


def _init_timeout_s(workload: Workload) -> int:
    size = workload.init.scale if workload.tool == "pgbench" else workload.prepare.tables * workload.prepare.table_size // 100_000
    return INIT_TIMEOUT_BASE_S + INIT_TIMEOUT_PER_SCALE_S * max(size, 1)


def _run_shape(workload: Workload) -> tuple[list[int], int]:
    """Client counts of the sweep and the run's time bound in seconds."""
    if workload.tool == "pgbench":
        # -t runs have no duration: give them the init-sized floor.
        return workload.run.client_counts, workload.run.duration_s or INIT_TIMEOUT_BASE_S
    return [workload.run.threads], workload.run.duration_s + (workload.run.forced_shutdown_s or 0)


def _steps(campaign_id: str, target: Target, campaign: Campaign, phase: int | None = None,
           together: tuple[int, int] | None = None) -> list[Step]:
    """`phase`: the consolidation step (ids get a p<phase>/ prefix); `together`: (this target's index, targets
    in the phase) when the phase's runs start at one barrier."""
    assert target.endpoint is not None
    policy = target.connections or campaign.connections
    common = dict(
        campaign_id=campaign_id,
        target=target.name,
        endpoint=target.endpoint,
        placement=target.placement,
        monitor_interval_s=policy.monitor_interval_s,
        heartbeat_timeout_s=campaign.heartbeat_timeout_s,
        phase=phase,
    )
    # A run waits for its replicas to catch up (the slowest timeout) and, in a phase, for the other targets.
    catch_up_s = max((r.catch_up_timeout_s for r in target.replicas), default=0)
    barrier_s = PHASE_BARRIER_TIMEOUT_S if together else 0
    steps: list[Step] = []
    for workload in campaign.workloads:
        prefix = f"{target.name}/{workload.name}" if phase is None else f"p{phase}/{target.name}/{workload.name}"
        steps.append(Step(step_id=f"{prefix}/init", workload=workload.name, kind="init", spec=workload,
                          timeout_s=_init_timeout_s(workload), **common))
        counts, run_s = _run_shape(workload)
        for repetition in range(1, campaign.repetitions + 1):
            for clients in counts:
                barrier = PhaseBarrier(group=f"p{phase}/{workload.name}/c{clients}-r{repetition}", index=together[0],
                                       size=together[1]) if together else None
                steps.append(Step(step_id=f"{prefix}/c{clients}-r{repetition}", workload=workload.name, kind="run",
                                  spec=workload, clients=clients, repetition=repetition, replicas=target.replicas,
                                  phase_barrier=barrier, timeout_s=run_s + RUN_TIMEOUT_MARGIN_S + catch_up_s + barrier_s,
                                  **common))
        if workload.tool == "sysbench" and workload.cleanup:
            steps.append(Step(step_id=f"{prefix}/cleanup", workload=workload.name, kind="cleanup", spec=workload,
                              timeout_s=INIT_TIMEOUT_BASE_S, **common))
    return steps


def plan_campaign(campaign: Campaign, campaign_id: str) -> Plan:
    """Expand targets x workloads x client counts x repetitions into ordered worker steps."""
    embedded = [t.name for t in campaign.targets if t.endpoint is None]
    if embedded:
        raise InvalidMatrix(
            f"targets {', '.join(embedded)} ask for an embedded server, which only the local runtime starts: "
            "run `pgarena run --local`, or give them an 'endpoint'"
        )
    sweep = campaign.scenario.consolidation if campaign.scenario else None
    if sweep is None:
        phases = [PlanPhase(phase=1, concurrency=campaign.target_concurrency,
                            targets=[_planned(t, _steps(campaign_id, t, campaign), campaign) for t in campaign.targets])]
    else:
        # Step k runs the first n targets at once, all of them every step: ideal scaling is the first
        # step's throughput per target x n.
        phases = []
        for phase, n in enumerate(sweep.steps, start=1):
            together = [(i, n) if n > 1 else None for i in range(n)]
            targets = [_planned(t, _steps(campaign_id, t, campaign, phase, together[i]), campaign)
                       for i, t in enumerate(campaign.targets[:n])]
            phases.append(PlanPhase(phase=phase, concurrency=n, targets=targets))
    return Plan(
        campaign_id=campaign_id,
        campaign=campaign.campaign,
        repetitions=campaign.repetitions,
        target_concurrency=campaign.target_concurrency,
        ranking=campaign.ranking,
        cost=campaign.cost,
        scenario=campaign.scenario,
        phases=phases,
    )


def _planned(target: Target, steps: list[Step], campaign: Campaign) -> PlannedTarget:
    return PlannedTarget(
        name=target.name,
        provider=target.provider,
        endpoint=target.endpoint,
        placement=target.placement,
        hourly_cost_usd=target.hourly_cost_usd,
        pooler=target.pooler,
        connections=target.connections or campaign.connections,
        connections_needed=max(s.connections for s in steps),
        steps=steps,
    )
