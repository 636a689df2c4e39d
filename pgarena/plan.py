"""Planning: a validated campaign becomes the state machine's work list. Pure functions only."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pgarena.errors import InvalidMatrix
from pgarena.matrix import Campaign, ConnectionPolicy, Endpoint, PgbenchInit, Placement, Pooler, RankingConfig, Target

# A run gets its duration plus this before Step Functions gives up on it.
RUN_TIMEOUT_MARGIN_S = 300
# Loading is slow on big scales: a fixed floor plus time per scale unit (100,000 rows).
INIT_TIMEOUT_BASE_S = 600
INIT_TIMEOUT_PER_SCALE_S = 30


class Boundary(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PgbenchRunSpec(Boundary):
    clients: int = Field(ge=1)
    jobs: int = Field(ge=1)
    duration_s: int = Field(ge=1)
    protocol: Literal["simple", "extended", "prepared"]
    progress_s: int = Field(ge=1)
    builtin: Literal["tpcb-like", "simple-update", "select-only"]


class Step(Boundary):
    """One worker task: everything a worker needs, secrets by reference only."""

    step_id: str
    campaign_id: str
    target: str
    workload: str
    kind: Literal["init", "run"]
    tool: Literal["pgbench"] = "pgbench"
    endpoint: Endpoint
    placement: Placement | None = None
    init: PgbenchInit | None = None
    run: PgbenchRunSpec | None = None
    repetition: int = 1
    timeout_s: int
    requested_clients: int | None = Field(None, description="set when the budget clamped the client count")
    monitor_interval_s: float = 5.0

    @property
    def clients(self) -> int | None:
        return self.run.clients if self.run else None

    @property
    def raw_prefix(self) -> str:
        return f"{self.campaign_id}/raw/{self.step_id}"

    @property
    def connections(self) -> int:
        """Connections this step opens at its peak.

        pgbench -i uses one. A pgbench run opens one per client; its own setup connection (table
        checks, vacuum) is closed before the clients connect, so the peak is the client count
        (observed server-side by the monitor in tests/integration/test_connection_budget.py).
        """
        return self.run.clients if self.run else 1

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
        steps.append(
            Step(
                step_id=f"{target.name}/{workload.name}/init",
                workload=workload.name,
                kind="init",
                init=workload.init,
                timeout_s=INIT_TIMEOUT_BASE_S + INIT_TIMEOUT_PER_SCALE_S * workload.init.scale,
                **common,
            )
        )
        for repetition in range(1, campaign.repetitions + 1):
            for clients in workload.run.client_counts:
                spec = PgbenchRunSpec(
                    clients=clients,
                    jobs=min(workload.run.jobs, clients),  # pgbench refuses more threads than clients
                    duration_s=workload.run.duration_s,
                    protocol=workload.run.protocol,
                    progress_s=workload.run.progress_s,
                    builtin=workload.run.builtin,
                )
                steps.append(
                    Step(
                        step_id=f"{target.name}/{workload.name}/c{clients}-r{repetition}",
                        workload=workload.name,
                        kind="run",
                        run=spec,
                        repetition=repetition,
                        timeout_s=workload.run.duration_s + RUN_TIMEOUT_MARGIN_S,
                        **common,
                    )
                )
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
        targets=targets,
    )
