"""Planning: a validated campaign becomes the state machine's work list. Pure functions only."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import TypedDict

from pgarena.model.errors import InvalidMatrix
from pgarena.model.matrix import Campaign, Endpoint, Placement, Target
from pgarena.model.plan import (
    INIT_TIMEOUT_BASE_S,
    INIT_TIMEOUT_PER_SCALE_S,
    PHASE_BARRIER_TIMEOUT_S,
    RUN_TIMEOUT_MARGIN_S,
    PhaseBarrier,
    Plan,
    PlannedTarget,
    PlanPhase,
    Step,
)
from pgarena.model.results import RunOrder, RunPass
from pgarena.tools.workloads import Workload


def _init_timeout_s(workload: Workload) -> int:
    return INIT_TIMEOUT_BASE_S + INIT_TIMEOUT_PER_SCALE_S * max(workload.load_size, 1)


def _run_timeout_s(workload: Workload) -> int:
    """A run step's time bound in seconds, its margin included. Runs of a transaction count have no
    duration: they get the init-sized floor. An SLO search runs the tool tool_runs times in sequence,
    each with its own margin."""
    tool_runs = workload.step_spec("run").tool_runs
    return tool_runs * ((workload.run_s or INIT_TIMEOUT_BASE_S) + RUN_TIMEOUT_MARGIN_S)


class _StepCommon(TypedDict):
    """The fields every step of one target shares."""

    campaign_id: str
    target: str
    endpoint: Endpoint
    placement: Placement | None
    monitor_interval_s: float
    heartbeat_timeout_s: int
    phase: int | None


def _steps(
    campaign_id: str,
    target: Target,
    campaign: Campaign,
    phase: int | None = None,
    together: tuple[int, int] | None = None,
    workloads: Sequence[Workload] | None = None,
    repetitions: Sequence[int] | None = None,
) -> list[Step]:
    """`phase`: the consolidation step (ids get a p<phase>/ prefix); `together`: (this target's index, targets
    in the phase) when the phase's runs start at one barrier. `workloads` and `repetitions` (default: all)
    select one pass of an interleaved plan: the load comes with the first repetition, the cleanup with the last."""
    workloads = campaign.workloads if workloads is None else workloads
    repetitions = range(1, campaign.repetitions + 1) if repetitions is None else repetitions
    assert target.endpoint is not None
    policy = target.connections or campaign.connections
    common = _StepCommon(
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
    for workload in workloads:
        prefix = f"{target.name}/{workload.name}" if phase is None else f"p{phase}/{target.name}/{workload.name}"
        if 1 in repetitions:
            steps.append(
                Step(
                    step_id=f"{prefix}/init",
                    workload=workload.name,
                    kind="init",
                    spec=workload.step_spec("init"),
                    timeout_s=_init_timeout_s(workload),
                    **common,
                )
            )
        run_spec, run_s = workload.step_spec("run"), _run_timeout_s(workload)
        for repetition in repetitions:
            for clients in workload.client_counts:
                barrier = (
                    PhaseBarrier(group=f"p{phase}/{workload.name}/c{clients}-r{repetition}", index=together[0], size=together[1])
                    if together
                    else None
                )
                steps.append(
                    Step(
                        step_id=f"{prefix}/c{clients}-r{repetition}",
                        workload=workload.name,
                        kind="run",
                        spec=run_spec,
                        clients=clients,
                        repetition=repetition,
                        replicas=target.replicas,
                        phase_barrier=barrier,
                        timeout_s=run_s + catch_up_s + barrier_s,
                        **common,
                    )
                )
        if workload.cleans_up and campaign.repetitions in repetitions:
            steps.append(
                Step(
                    step_id=f"{prefix}/cleanup",
                    workload=workload.name,
                    kind="cleanup",
                    spec=workload.step_spec("cleanup"),
                    timeout_s=INIT_TIMEOUT_BASE_S,
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
    sweep = campaign.scenario.consolidation if campaign.scenario else None
    run_order = None
    if sweep is None:
        phases, run_order = _interleaved(campaign, campaign_id)
    else:
        # Step k runs the first n targets at once, all of them every step: ideal scaling is the first
        # step's throughput per target x n.
        phases = []
        for phase, n in enumerate(sweep.steps, start=1):
            together = [(i, n) if n > 1 else None for i in range(n)]
            targets = [
                _planned(t, _steps(campaign_id, t, campaign, phase, together[i]), campaign)
                for i, t in enumerate(campaign.targets[:n])
            ]
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
        run_order=run_order,
    )


def order_seed(campaign_id: str) -> int:
    """A seed derived from the campaign id: the same plan whenever the campaign is planned again."""
    return int(hashlib.sha256(campaign_id.encode()).hexdigest()[:8], 16)


def _interleaved(campaign: Campaign, campaign_id: str) -> tuple[list[PlanPhase], RunOrder]:
    """One pass (phase) per workload and repetition: repetition r of every target runs before r + 1 of any,
    each pass's target order shuffled by the seed, so drift over the campaign (a neighbour's load, a
    provider's maintenance, the time of day) spreads over every target instead of favouring one. Each
    target's own steps keep their order: a workload's load, its repetitions, its cleanup, then the next.
    With one repetition there is one pass, its order shuffled alike."""
    seed = campaign.order_seed if campaign.order_seed is not None else order_seed(campaign_id)
    shuffle = random.Random(seed).shuffle
    passes: list[tuple[Workload | None, int | None]] = (
        [(w, r) for w in campaign.workloads for r in range(1, campaign.repetitions + 1)]
        if campaign.repetitions > 1
        else [(None, None)]
    )
    phases, recorded = [], []
    for number, (workload, repetition) in enumerate(passes, start=1):
        order = list(campaign.targets)
        shuffle(order)
        targets = [
            _planned(
                t,
                _steps(
                    campaign_id,
                    t,
                    campaign,
                    workloads=None if workload is None else [workload],
                    repetitions=None if repetition is None else [repetition],
                ),
                campaign,
            )
            for t in order
        ]
        phases.append(PlanPhase(phase=number, concurrency=campaign.target_concurrency, targets=targets))
        recorded.append(
            RunPass(
                phase=number,
                workload=workload.name if workload else None,
                repetition=repetition,
                targets=[t.name for t in order],
            )
        )
    run_order = RunOrder(
        seed=seed,
        seed_from="matrix" if campaign.order_seed is not None else "campaign_id",
        targets=[t.name for t in campaign.targets],
        passes=recorded,
    )
    return phases, run_order


def _planned(target: Target, steps: list[Step], campaign: Campaign) -> PlannedTarget:
    assert target.endpoint is not None  # plan_campaign refuses embedded targets
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
