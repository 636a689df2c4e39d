"""Planning: a validated campaign becomes the state machine's work list. Pure functions only."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from typing import NamedTuple, TypedDict

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
from pgarena.model.tool_spec import StepKind
from pgarena.tools.workloads import Workload


def init_timeout_s(workload: Workload) -> int:
    return INIT_TIMEOUT_BASE_S + INIT_TIMEOUT_PER_SCALE_S * max(workload.load_size, 1)


def run_timeout_s(workload: Workload) -> int:
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


class Pass(NamedTuple):
    """What one target runs in one phase: one workload's one repetition of an interleaved plan, or (None)
    every workload and every repetition. `cleanup`: an adaptive plan's workload cleanup, a phase of its own
    after the workload's repetitions (its last repetition is not known in advance)."""

    workload: int | None = None  # an index into campaign.workloads
    repetition: int | None = None
    cleanup: bool = False


def passes(campaign: Campaign) -> list[Pass]:
    """One per phase of the plan: a consolidation sweep's every step runs everything; an interleaved plan
    has one pass per workload and repetition, or a single pass with one repetition. An adaptive plan
    (repetitions {min, max}) has every pass up to max: the state machine runs those past min only while
    they are needed."""
    sweep = campaign.scenario.consolidation if campaign.scenario else None
    if sweep is not None:
        return [Pass()] * len(sweep.steps)
    repetitions = campaign.max_repetitions
    if campaign.min_repetitions is not None:
        return [
            p
            for w, workload in enumerate(campaign.workloads)
            for p in [*(Pass(w, r) for r in range(1, repetitions + 1)), *([Pass(w, cleanup=True)] if workload.cleans_up else [])]
        ]
    if repetitions > 1:
        return [Pass(w, r) for w in range(len(campaign.workloads)) for r in range(1, repetitions + 1)]
    return [Pass()]


class StepShape(NamedTuple):
    """A step before it has a target: what _steps makes a Step of, and what pgarena.planning.limits counts."""

    workload: Workload
    kind: StepKind
    clients: int | None = None
    repetition: int = 1


def step_shapes(campaign: Campaign, selected: Pass) -> Iterator[StepShape]:
    """The steps one target runs in a pass, in order: each workload's load (with the first repetition, or
    with each when init.each_repetition), its runs, its cleanup (with the last repetition; in a pass of its
    own in an adaptive plan)."""
    workloads = campaign.workloads if selected.workload is None else [campaign.workloads[selected.workload]]
    if selected.cleanup:
        yield from (StepShape(workload, "cleanup") for workload in workloads)
        return
    last = campaign.max_repetitions
    repetitions = range(1, last + 1) if selected.repetition is None else [selected.repetition]
    for workload in workloads:
        for repetition in repetitions:
            if repetition == 1 or workload.reloads_each_repetition:
                yield StepShape(workload, "init", repetition=repetition)
            for clients in workload.client_counts:
                yield StepShape(workload, "run", clients, repetition)
        if workload.cleans_up and last in repetitions and campaign.min_repetitions is None:
            yield StepShape(workload, "cleanup")


def _steps(  # noqa: PLR0913  # optional narrowings of the steps (phase, group, workloads, repetitions)
    campaign_id: str,
    target: Target,
    campaign: Campaign,
    selected: Pass,
    phase: int | None = None,
    together: tuple[int, int] | None = None,
) -> list[Step]:
    """`phase`: the consolidation step (ids get a p<phase>/ prefix); `together`: (this target's index, targets
    in the phase) when the phase's runs start at one barrier."""
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
    for shape in step_shapes(campaign, selected):
        workload = shape.workload
        prefix = f"{target.name}/{workload.name}" if phase is None else f"p{phase}/{target.name}/{workload.name}"
        if shape.kind == "init":
            # A load before a later repetition (init.each_repetition) is a step of its own.
            suffix = "" if shape.repetition == 1 else f"-r{shape.repetition}"
            steps.append(
                Step(
                    step_id=f"{prefix}/init{suffix}",
                    workload=workload.name,
                    kind="init",
                    spec=workload.step_spec("init"),
                    timeout_s=init_timeout_s(workload),
                    **common,
                )
            )
        elif shape.kind == "run":
            clients, repetition = shape.clients, shape.repetition
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
                    spec=workload.step_spec("run"),
                    clients=clients,
                    repetition=repetition,
                    replicas=target.replicas,
                    phase_barrier=barrier,
                    timeout_s=run_timeout_s(workload) + catch_up_s + barrier_s,
                    **common,
                )
            )
        else:
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
        if campaign.only_steps is not None:
            phases, run_order = _only(phases, run_order, frozenset(campaign.only_steps))
    else:
        # Step k runs the first n targets at once, all of them every step: ideal scaling is the first
        # step's throughput per target x n.
        phases = []
        for phase, (n, selected) in enumerate(zip(sweep.steps, passes(campaign)), start=1):
            together = [(i, n) if n > 1 else None for i in range(n)]
            targets = [
                _planned(t, _steps(campaign_id, t, campaign, selected, phase, together[i]), campaign)
                for i, t in enumerate(campaign.targets[:n])
            ]
            phases.append(PlanPhase(phase=phase, concurrency=n, targets=targets))
    return Plan(
        campaign_id=campaign_id,
        campaign=campaign.campaign,
        repetitions=campaign.max_repetitions,
        min_repetitions=campaign.min_repetitions,
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
    phases, recorded = [], []
    for number, selected in enumerate(passes(campaign), start=1):
        order = list(campaign.targets)
        shuffle(order)
        targets = [_planned(t, _steps(campaign_id, t, campaign, selected), campaign) for t in order]
        phases.append(PlanPhase(phase=number, concurrency=campaign.target_concurrency, targets=targets))
        recorded.append(
            RunPass(
                phase=number,
                workload=None if selected.workload is None else campaign.workloads[selected.workload].name,
                repetition=selected.repetition,
                cleanup=selected.cleanup,
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


def _only(phases: list[PlanPhase], run_order: RunOrder, only: frozenset[str]) -> tuple[list[PlanPhase], RunOrder]:
    """The plan narrowed to the steps `only` names (a resumed campaign's re-runs), each target's order and
    each pass's kept: a target left with no step leaves its pass, an empty pass leaves the plan, and the
    passes are numbered again from 1."""
    kept_phases: list[PlanPhase] = []
    kept_passes: list[RunPass] = []
    for phase, recorded in zip(phases, run_order.passes):
        targets = [
            t.model_copy(update={"steps": steps}) for t in phase.targets if (steps := [s for s in t.steps if s.step_id in only])
        ]
        if targets:
            number = len(kept_phases) + 1
            kept_phases.append(phase.model_copy(update={"phase": number, "targets": targets}))
            names = [t.name for t in targets]
            kept_passes.append(recorded.model_copy(update={"phase": number, "targets": names}))
    if not kept_phases:
        raise InvalidMatrix(f"only_steps names no step of the campaign's plan: {sorted(only)[:5]}")
    return kept_phases, run_order.model_copy(update={"passes": kept_passes})


def _planned(target: Target, steps: list[Step], campaign: Campaign) -> PlannedTarget:
    assert target.endpoint is not None  # plan_campaign refuses embedded targets
    return PlannedTarget(
        name=target.name,
        provider=target.provider,
        endpoint=target.endpoint,
        placement=target.placement,
        hourly_cost_usd=target.hourly_cost_usd,
        pooler=target.pooler,
        cloudwatch=target.cloudwatch,
        connections=target.connections or campaign.connections,
        connections_needed=max(s.connections for s in steps),
        steps=steps,
    )
