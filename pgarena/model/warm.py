"""Warm workers: one worker serves a whole phase of its target on one shard index, step after step.

The launch function hands each step either to the live worker of its slot (campaign, phase, target,
shard), through the slot's item in the results table, or, when none answers, to a new worker started
by RunTask, which registers there. Why an item and not a queue or an activity: docs/dev/warm-workers.md.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pgarena.model.plan import Boundary, ShardRef, Step, StepGroup

# A worker with no next step this long exits: a phase's steps follow each other within seconds (the
# state machine's own transitions), so only a phase cut short (a failed target) leaves a worker waiting.
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
