"""Warm workers' slots closed when no step will come to them: a target's phase ended, its steps done or
cut short (Release Connection Lease), or the campaign ended however it ended (finalize). A worker idle
at its slot reads it every SLOT_POLL_S and leaves on finding it closed, instead of waiting out its idle
time-out (docs/dev/warm-workers.md)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from pgarena.campaign.ports import WorkerSlots
from pgarena.model.warm import ASSIGNED, IDLE, WorkerSlot

log = logging.getLogger(__name__)


def close_slots(
    slots: WorkerSlots, which: Iterable[WorkerSlot], why: str, clock: Callable[[], float] = time.time
) -> dict[str, float]:
    """Close each slot, best effort (a slot left open costs its worker's idle time-out, never a result).
    The departures the slots show, worker id -> epoch: when each slot's last worker left, as it recorded
    it, or now for one idle there (it leaves at its next poll); a busy one is still on its step."""
    departures: dict[str, float] = {}
    for slot in which:
        try:
            before = slots.close(slot, why)
            closed_at: float | None = clock()
            if before is None:  # closed already (its target's phase ended first), or never had an item
                before, closed_at = slots.read(slot), None
        except Exception as error:
            log.warning("worker slot %s not closed: %s", slot.name, error)
            continue
        if before is None or not before.worker:
            continue
        if before.left_at is not None:
            departures[before.worker] = before.left_at
        elif before.state in (IDLE, ASSIGNED) and closed_at is not None:
            departures[before.worker] = closed_at
    return departures
