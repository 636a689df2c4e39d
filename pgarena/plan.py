"""Planning: a validated campaign becomes the state machine's work list. Pure functions only."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pgarena.errors import InvalidMatrix
from pgarena.matrix import Campaign, Endpoint, PgbenchInit, Placement, Target

# A run gets its duration plus this before Step Functions gives up on it.
RUN_TIMEOUT_MARGIN_S = 300
# Loading is slow on big scales: a fixed floor plus time per scale unit (100,000 rows).
INIT_TIMEOUT_BASE_S = 600
INIT_TIMEOUT_PER_SCALE_S = 30
# pgbench opens one connection of its own (table checks, vacuum) besides one per client.
PGBENCH_SETUP_CONNECTIONS = 1


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

    @property
    def clients(self) -> int | None:
        return self.run.clients if self.run else None

    @property
    def raw_prefix(self) -> str:
        return f"{self.campaign_id}/raw/{self.step_id}"


class PlannedTarget(Boundary):
    name: str
    provider: str
    endpoint: Endpoint
    placement: Placement | None = None
    hourly_cost_usd: float | None = None
    connections_needed: int
    steps: list[Step]


class Plan(Boundary):
    campaign_id: str
    campaign: str
    repetitions: int
    target_concurrency: int
    targets: list[PlannedTarget]


def connections_needed(clients: int) -> int:
    return clients + PGBENCH_SETUP_CONNECTIONS


def _steps(campaign_id: str, target: Target, campaign: Campaign) -> list[Step]:
    assert target.endpoint is not None
    common = dict(campaign_id=campaign_id, target=target.name, endpoint=target.endpoint, placement=target.placement)
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
        peak = max(connections_needed(s.run.clients) for s in steps if s.run)
        targets.append(
            PlannedTarget(
                name=target.name,
                provider=target.provider,
                endpoint=target.endpoint,
                placement=target.placement,
                hourly_cost_usd=target.hourly_cost_usd,
                connections_needed=peak,
                steps=steps,
            )
        )
    return Plan(
        campaign_id=campaign_id,
        campaign=campaign.campaign,
        repetitions=campaign.repetitions,
        target_concurrency=campaign.target_concurrency,
        targets=targets,
    )
