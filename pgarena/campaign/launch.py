"""Run Worker Task: hand one shard of a step to its slot's warm worker, or start a worker for it; the
worker answers the state machine's task token itself."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from pgarena.campaign.ports import Launcher, Records, SlotState, WorkerSlots
from pgarena.model.errors import ErrorKind, failure
from pgarena.model.plan import PreflightTask, ShardRef, Step, TargetRef, planned_target
from pgarena.model.sites import SiteMap
from pgarena.model.warm import (
    ABANDONED_WAIT_S,
    ASSIGNED,
    BUSY,
    CLOSED,
    HANDOVER_POLL_S,
    HANDOVER_S,
    LAUNCHING,
    Assignment,
    WorkerSlot,
    last_on_slot,
)

log = logging.getLogger(__name__)
# Reads of the slot before giving up on a hand-over whose conditional writes keep losing to another
# attempt of the same launch (a retry running beside the attempt it replaces): RunTask's clientToken
# then still starts one worker only.
HANDOVER_ROUNDS = 4


@dataclass(frozen=True)
class Launched:
    step: Step
    worker: str  # the worker's id (its task's ARN)
    started: bool  # a new worker was started (else the slot's warm worker took the step)


@dataclass(frozen=True)
class LaunchedOnSite:
    task: PreflightTask
    worker: str


def launch(  # noqa: PLR0913  # the shard, its token, and the three ports it goes through
    shard: ShardRef,
    task_token: str,
    records: Records,
    launcher: Launcher,
    slots: WorkerSlots | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Launched:
    """The shard's step from preflight's answer (the state never carries it), handed to the live worker
    of its slot or started in a new one."""
    steps = records.preflight(shard.campaign_id, shard.phase, shard.target).steps
    planned = steps[shard.step].shards[shard.shard]
    last = last_on_slot(steps, shard.step, shard.shard)
    slot = WorkerSlot.of(shard)
    if slots is not None:
        worker = hand_over(slots, slot, Assignment(step=planned, task_token=task_token, last=last), clock, sleep)
        if worker is not None:
            return Launched(planned, worker, started=False)
    # Started anew for a retried launch too: RunTask's clientToken (the step and its token) gives back the
    # task an earlier attempt started rather than a second one.
    started, failures = launcher.launch(planned, task_token, slot if slots is not None else None, last)
    if started is None or failures:
        # A launch failure is transient more often than not: the state machine retries LaunchFailed.
        raise failure(ErrorKind.LAUNCH_FAILED, f"ECS could not start the worker: {failures}")
    if slots is not None:
        try:
            slots.started(slot, task_token, started)
        except Exception as error:  # only a stopped task's fast failure needs it: its heartbeat still tells
            log.warning("worker slot %s: task not recorded: %s", slot.name, error)
    return Launched(planned, started, started=True)


def launch_preflight(ref: TargetRef, task_token: str, records: Records, launcher: Launcher, sites: SiteMap) -> LaunchedOnSite:
    """Preflight On Site: the target's preflight started as a worker task on its site, as a step is, given
    the slot of the phase's shard 0: the worker then serves the phase's steps there, so that preflighting
    on the site costs no cold start of its own."""
    target = planned_target(records.plan(ref.campaign_id), ref.phase, ref.target)
    site = sites.preflight_site(target.placement)
    if site is None:  # the plan's refs said otherwise: a stack redeployed without the site since Validate And Plan
        raise failure(
            ErrorKind.INVALID_MATRIX, f"{target.name}: the stack has no site for its placement (sites: {sites.describe()})"
        )
    task = PreflightTask.of(ref, target, site)
    slot = WorkerSlot(campaign_id=ref.campaign_id, phase=ref.phase, target=ref.target, shard=0)
    started, failures = launcher.launch(task, task_token, slot, last=False)
    if started is None or failures:
        raise failure(ErrorKind.LAUNCH_FAILED, f"ECS could not start the worker for {target.name}'s preflight: {failures}")
    return LaunchedOnSite(task, started)


def hand_over(
    slots: WorkerSlots,
    slot: WorkerSlot,
    assignment: Assignment,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """The worker that holds the step (it took the offer, or an earlier attempt of this launch gave it the
    step), or None when a worker must be started for it: none idle there, or one that did not take the
    offer within HANDOVER_S (killed between steps), whose offer is withdrawn. The slot then says the step
    is being launched. A step the slot holds is never offered again, nor to a worker busy on another."""
    for _ in range(HANDOVER_ROUNDS):
        now = slots.read(slot)
        if now is not None and now.state == CLOSED:
            return None  # the phase ended: the worker started does not register, as before
        if now is not None and now.task_token == assignment.task_token:  # a retried launch: the step is the slot's
            if now.state == ASSIGNED:
                return _taken(slots, slot, now, clock, sleep)
            return None if now.state == LAUNCHING else now.worker  # RunTask again (its clientToken), or held
        if now is not None and now.state == BUSY and now.step_id == assignment.step.step_id:
            _let_go(slots, slot, now, clock, sleep)  # an abandoned attempt of this step: not beside it
        offered = slots.offer(slot, assignment)
        if offered is not None:
            return _taken(slots, slot, offered, clock, sleep)
        if slots.launching(slot, assignment):
            return None
    log.warning("worker slot %s: its hand-over kept losing to another attempt; starting a worker", slot.name)
    return None


def _taken(
    slots: WorkerSlots, slot: WorkerSlot, offered: SlotState, clock: Callable[[], float], sleep: Callable[[float], None]
) -> str | None:
    """The worker the step was offered to once it took it, or None when it did not within HANDOVER_S."""
    deadline = clock() + HANDOVER_S
    while clock() < deadline:
        now = slots.read(slot)
        if now is None or now.seq != offered.seq or now.state != ASSIGNED:
            return offered.worker  # taken (or the slot moved on: either way no longer ours to give)
        sleep(HANDOVER_POLL_S)
    return None if slots.withdraw(slot, offered.seq) else offered.worker


def _let_go(
    slots: WorkerSlots, slot: WorkerSlot, busy: SlotState, clock: Callable[[], float], sleep: Callable[[float], None]
) -> None:
    """Wait (ABANDONED_WAIT_S at most) until the slot's worker is no longer busy on the step's attempt the
    state machine gave up: a retry with a new task token (AWS gives each attempt its own) refuses the old
    token's next heartbeat, and the worker stops. The step is then started anew, never beside it."""
    deadline = clock() + ABANDONED_WAIT_S
    while clock() < deadline:
        now = slots.read(slot)
        if now is None or now.state != BUSY or now.task_token != busy.task_token:
            return
        sleep(HANDOVER_POLL_S)
    log.warning("worker slot %s: its worker still runs an abandoned attempt of %s", slot.name, busy.step_id)
