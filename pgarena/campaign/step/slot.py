"""A warm worker's slot: each assignment served, then the phase's next step waited for at the slot,
until the slot's last step, its closing, a replacement worker, or an idle time-out."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from pgarena.campaign.ports import WorkerSlots
from pgarena.campaign.step.stops import hard_stop
from pgarena.model.errors import ErrorInfo, ErrorKind, WorkerStopped
from pgarena.model.plan import WORKER_HARD_STOP_GRACE_S
from pgarena.model.warm import (
    ASSIGNED,
    CLOSED,
    IDLE_TIMEOUT_S,
    LEFT_CLOSED,
    LEFT_IDLE_TIMEOUT,
    LEFT_LAST_STEP,
    LEFT_PREFLIGHT_FAILED,
    LEFT_STOPPED,
    SLOT_BEAT_S,
    Assignment,
    WorkerSlot,
    slot_poll_s,
)

logger = Logger(service="pgarena-worker")

# Serves one assignment: given it, how many steps the worker has served with it, and the slot's renewal.
Serve = Callable[[Assignment, int, Callable[[], object]], ErrorInfo | None]
# The target's preflight on its site, given the slot's renewal.
Preflight = Callable[[Callable[[], object]], ErrorInfo | None]


@dataclass(frozen=True)
class Seat:
    """A warm worker at its slot: the slot, where slots are kept, the worker's id, and how it ends itself
    when a wait overruns its hard stop."""

    slot: WorkerSlot
    slots: WorkerSlots
    worker: str
    exit_now: Callable[[], None]

    def renew(self) -> None:
        self.slots.finishing(self.slot, self.worker)

    def leave(self, why: str) -> None:
        best_effort(lambda: self.slots.leave(self.slot, self.worker, why))


def best_effort(call: Callable[[], object]) -> object:
    try:
        return call()
    except Exception as error:  # the slot is an optimisation: the step's answer matters more
        logger.warning("worker slot not updated", error=str(error))
        return None


def serve_slot(first: Assignment | Preflight, seat: Seat, serve: Serve) -> int:
    """The warm worker's loop: each assignment served, then the next one waited for at the slot; the
    exit code of the last step (0: it succeeded). `first` may be the target's preflight on its site
    (a callable given the slot's renewal): the phase's steps then follow here, unless it failed."""
    assignment: Assignment | None
    served, error, left = 0, None, ""
    if callable(first):
        error = first(seat.renew)
        if error is not None:  # no step follows a failed preflight
            seat.leave(LEFT_PREFLIGHT_FAILED)
            return 1
        assignment, left = _next(seat)
    else:
        assignment = first
    while assignment is not None:
        served += 1
        error = serve(assignment, served, seat.renew)
        stopped = error is not None and error.kind == ErrorKind.WORKER_STOPPED
        if assignment.last or stopped:
            left = LEFT_STOPPED if stopped else LEFT_LAST_STEP
            break
        assignment, left = _next(seat)
    if left:  # the slot says why its worker left (the wait recorded its own); a next step starts a new one at once
        seat.leave(left)
    return 0 if error is None else 1


def _next(seat: Seat) -> tuple[Assignment | None, str]:
    """Shown idle at the slot, the phase's next step when one comes; else None and why the worker leaves
    ("" when the wait recorded its own: the idle time-out, the slot closed or taken)."""
    try:
        with hard_stop(IDLE_TIMEOUT_S + WORKER_HARD_STOP_GRACE_S, seat.exit_now):
            # Not idle there (replaced, the slot closed): the first read of the wait says which.
            if best_effort(lambda: seat.slots.idle(seat.slot, seat.worker)) is not None:
                return next_assignment(seat), ""
    except WorkerStopped:  # stopped between steps (a cancelled campaign): no step of its to record
        logger.info("stopped while waiting for the next step", worker=seat.worker)
        return None, LEFT_STOPPED
    return None, ""


def next_assignment(
    seat: Seat,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
) -> Assignment | None:
    """Wait at the slot (marked idle already) for the phase's next step; None when another worker holds
    the slot, when the slot was closed (the target's phase or the campaign ended: no step will come), or
    after idle_timeout_s with none (the slot is then marked gone, so that a step dispatched at that
    moment starts a new worker instead of waiting on this one)."""
    slots, slot, worker = seat.slots, seat.slot, seat.worker
    deadline = last_beat = since = clock()
    deadline += idle_timeout_s
    while True:
        state = slots.read(slot)
        if state is None or state.worker != worker:
            return None
        if state.state == CLOSED:
            seat.leave(LEFT_CLOSED)
            return None
        if state.state == ASSIGNED and state.assignment is not None:
            if slots.claim(slot, worker, state.seq):
                return state.assignment
            continue  # withdrawn meanwhile: read again
        if clock() > deadline and slots.leave(slot, worker, LEFT_IDLE_TIMEOUT):
            return None
        if clock() - last_beat > SLOT_BEAT_S:
            slots.beat(slot, worker)
            last_beat = clock()
        sleep(slot_poll_s(clock() - since))
