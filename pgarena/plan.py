"""Planning: a validated campaign becomes the state machine's work list. Pure functions only."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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


class Boundary(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class Plan(Boundary):
    campaign_id: str
    campaign: str
    repetitions: int
    target_concurrency: int
    targets: list[PlannedTarget]
    ranking: RankingConfig | None = None
    cost: CostPolicy | None = None


def _init_timeout_s(workload: Workload) -> int:
    size = workload.init.scale if workload.tool == "pgbench" else workload.prepare.tables * workload.prepare.table_size // 100_000
    return INIT_TIMEOUT_BASE_S + INIT_TIMEOUT_PER_SCALE_S * max(size, 1)


def _run_shape(workload: Workload) -> tuple[list[int], int]:
    """Client counts of the sweep and the run's time bound in seconds."""
    if workload.tool == "pgbench":
        # -t runs have no duration: give them the init-sized floor.
        return workload.run.client_counts, workload.run.duration_s or INIT_TIMEOUT_BASE_S
    return [workload.run.threads], workload.run.duration_s + (workload.run.forced_shutdown_s or 0)


def _steps(campaign_id: str, target: Target, campaign: Campaign) -> list[Step]:
    assert target.endpoint is not None
    policy = target.connections or campaign.connections
    common = dict(
        campaign_id=campaign_id,
        target=target.name,
        endpoint=target.endpoint,
        placement=target.placement,
        monitor_interval_s=policy.monitor_interval_s,
    )
    steps: list[Step] = []
    for workload in campaign.workloads:
        prefix = f"{target.name}/{workload.name}"
        steps.append(Step(step_id=f"{prefix}/init", workload=workload.name, kind="init", spec=workload,
                          timeout_s=_init_timeout_s(workload), **common))
        counts, run_s = _run_shape(workload)
        for repetition in range(1, campaign.repetitions + 1):
            for clients in counts:
                steps.append(Step(step_id=f"{prefix}/c{clients}-r{repetition}", workload=workload.name, kind="run",
                                  spec=workload, clients=clients, repetition=repetition,
                                  timeout_s=run_s + RUN_TIMEOUT_MARGIN_S, **common))
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
    targets = []
    for target in campaign.targets:
        steps = _steps(campaign_id, target, campaign)
        peak = max(s.connections for s in steps)
        targets.append(
            PlannedTarget(
                name=target.name,
                provider=target.provider,
                endpoint=target.endpoint,
                placement=target.placement,
                hourly_cost_usd=target.hourly_cost_usd,
                pooler=target.pooler,
                connections=target.connections or campaign.connections,
                connections_needed=peak,
                steps=steps,
            )
        )
    return Plan(
        campaign_id=campaign_id,
        campaign=campaign.campaign,
        repetitions=campaign.repetitions,
        target_concurrency=campaign.target_concurrency,
        ranking=campaign.ranking,
        cost=campaign.cost,
        targets=targets,
    )
