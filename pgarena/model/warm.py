"""Warm workers: one worker serves a whole phase of its target on one shard index, step after step.

The launch function hands each step either to the live worker of its slot (campaign, phase, target,
shard), through the slot's item in the results table, or, when none answers, to a new worker started
by RunTask, which registers there. Why an item and not a queue or an activity: docs/dev/warm-workers.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field

from pgarena.model.plan import Boundary, PreflightResult, ShardRef, Step, StepGroup

# A worker with no next step this long exits: a phase's steps follow each other within seconds (the
# state machine's own transitions). A phase cut short (its target failed, the campaign stopped) closes
# its slots, so its worker leaves at its next poll: the time-out is the backstop for a close that
# never came (the closing function failed, the execution vanished).
IDLE_TIMEOUT_S = 120.0
# How often an idle worker reads its slot for the next step (a GetItem each): every SLOT_POLL_S for
# SLOT_FAST_S after its step, when the next step comes (the state machine's transitions and the launch
# function take a fraction of a second, and the step waits on this poll), then every SLOT_IDLE_POLL_S
# (a phase cut short). How often the launch function reads whether its offer was taken.
SLOT_POLL_S = 0.05
SLOT_FAST_S = 5.0
SLOT_IDLE_POLL_S = 0.5
HANDOVER_POLL_S = 0.1
# An idle worker renews its beat this often; a beat older than FRESH_S means it is gone (killed, its
# host lost) and the slot is not offered to it.
SLOT_BEAT_S = 5.0
FRESH_S = 30.0
# A live worker takes an offered step within a few polls; one that does not within this is taken for
# dead, the offer is withdrawn and a new worker started (its step then runs there, nothing lost).
HANDOVER_S = 15.0


def slot_poll_s(idle_s: float) -> float:
    """How long an idle worker sleeps between reads of its slot, idle_s after its step."""
    return SLOT_POLL_S if idle_s < SLOT_FAST_S else SLOT_IDLE_POLL_S


class WorkerSlot(Boundary):
    """The worker address a phase's steps share: a worker serves one shard index of one target's phase."""

    campaign_id: str
    phase: int
    target: int
    shard: int

    @classmethod
    def of(cls, ref: ShardRef) -> WorkerSlot:
        return cls(campaign_id=ref.campaign_id, phase=ref.phase, target=ref.target, shard=ref.shard)

    @property
    def name(self) -> str:
        return f"{self.phase}#{self.target}#{self.shard}"


# A slot's states: its worker busy on a step, finishing it (its answer about to go: the next step may be
# offered), idle waiting for the next, a step offered to it (assigned), a worker being started for a step
# (launching: RunTask, no worker holds the slot yet), its worker gone, or the slot closed (no step will come).
BUSY, FINISHING, IDLE, ASSIGNED = "busy", "finishing", "idle", "assigned"
LAUNCHING, GONE, CLOSED = "launching", "gone", "closed"
# How long a launch retried with a new task token waits for the slot's worker to let go of the step's
# abandoned attempt (its next heartbeat is refused: it stops within one beat) before starting the step anew.
ABANDONED_WAIT_S = 20.0
# Why a slot closed (its item's `closed`): no step will be offered there again. Release Connection Lease
# closes a target's slots when its phase's steps ended, or were cut short; finalize every slot of the
# campaign, with how it ended (campaign_completed, campaign_cancelled, campaign_failed).
TARGET_FINISHED, TARGET_FAILED = "target_finished", "target_failed"
CAMPAIGN_ENDED = "campaign_{}"
# Why its worker left (its item's `left`, with `left_at`): after the slot's last step, its idle time-out,
# stopped (StopTask, a step the state machine gave up), or on finding its slot closed.
LEFT_LAST_STEP, LEFT_IDLE_TIMEOUT, LEFT_STOPPED, LEFT_CLOSED = "last_step", "idle_timeout", "stopped", "slot_closed"
# A worker started for its target's preflight on its site, which failed: no step of the phase follows.
LEFT_PREFLIGHT_FAILED = "preflight_failed"


class Assignment(BaseModel):
    """One step given to a worker: the step, the task token it answers, and whether it is its slot's last."""

    step: Step
    task_token: str
    last: bool = Field(True, description="no later step of the phase runs on this slot: the worker exits after it")


def last_on_slot(steps: list[StepGroup], index: int, shard: int) -> bool:
    """Whether step `index` is the last of the phase's steps that has a shard `shard` (a load runs on one
    worker, the runs after it on several: shard 0 serves them all, shard 1 the runs only)."""
    return not any(len(group.shards) > shard for group in steps[index + 1 :])


def slot_count(steps: list[StepGroup]) -> int:
    """Workers a target's phase starts when every one stays warm: one per shard index."""
    return max((len(group.shards) for group in steps), default=0)


def slots_of(campaign_id: str, phase: int, target: int, steps: list[StepGroup]) -> list[WorkerSlot]:
    """Every slot a target's phase may have had a worker on."""
    return [WorkerSlot(campaign_id=campaign_id, phase=phase, target=target, shard=k) for k in range(slot_count(steps))]


def campaign_slots(campaign_id: str, preflights: Mapping[tuple[int, int], PreflightResult]) -> list[WorkerSlot]:
    """Every slot the campaign may have had a worker on: those of each (phase, target) preflight answered."""
    return [slot for (phase, target), answer in preflights.items() for slot in slots_of(campaign_id, phase, target, answer.steps)]
