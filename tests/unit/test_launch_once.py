"""A step runs once: Run Worker Task retried by the state machine (a Lambda error after the step was handed
over: Lambda.ServiceException and the like are retried up to 6 times) never hands the step to a second
worker, and an offer never goes to a worker busy on a step (issue 34, finding 3).

Slots are the real adapter (pgarena.aws.worker_slots) on a moto table, and the launch function's use case
is the real one (pgarena.campaign.launch.launch); RunTask and the workers are simulated as
tests/unit/test_warm_workers.py does (Fleet).
"""

from __future__ import annotations

import itertools

import pytest

from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.campaign.launch import launch
from pgarena.model.plan import ShardRef
from pgarena.model.warm import ABANDONED_WAIT_S, Assignment, WorkerSlot
from tests.unit.test_campaign_state import preflight_result
from tests.unit.test_warm_workers import TABLE, Fleet, aws, sweep

__all__ = ["aws"]  # the moto fixture, shared


@pytest.fixture
def phase(aws):
    """One target's phase, its preflight answered: (records, slots, fleet, the ref of its step 1)."""
    plan = sweep(targets=1, repetitions=1, workers=1)
    records = CampaignState(aws)
    records.put_preflight("c1", 1, 0, preflight_result(plan.phases[0].targets[0]))
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    return records, slots, Fleet(slots), ShardRef(campaign_id="c1", phase=1, target=0, step=1, shard=0)


def _no_wait(seconds: float) -> None:
    pytest.fail("a retried launch waited for a hand-over it had made already")


def test_a_launch_retried_after_its_step_was_handed_over_starts_no_second_worker(phase):
    # Given a worker idle at its slot after the phase's first step
    records, slots, fleet, ref = phase
    slot = WorkerSlot.of(ref)
    slots.register(slot, "w1")
    slots.finishing(slot, "w1")
    assert slots.idle(slot, "w1")
    fleet.waiting["w1"] = slot
    # When Run Worker Task hands it step 1 (the worker claims it at its next poll) and is retried, the
    # same task token in its input, as the Lambda's answer was lost
    first = launch(ref, "token-1", records, fleet, slots, sleep=fleet.poll)
    seq = slots.read(slot).seq
    retried = launch(ref, "token-1", records, fleet, slots, sleep=_no_wait)
    # Then both attempts name the one worker, and no RunTask ran
    assert (first.worker, first.started) == (retried.worker, retried.started) == ("w1", False)
    assert fleet.run_tasks == []
    # And the retry made no second offer: the worker stays busy on its step, which it answers once
    state = slots.read(slot)
    assert (state.state, state.worker, state.seq, state.task_token) == ("busy", "w1", seq, "token-1")


def test_a_launch_retried_after_it_started_a_worker_starts_no_second_one(phase):
    # Given a phase's first launch, which started a worker with RunTask (it registered at its slot)
    records, slots, fleet, ref = phase
    ref = ref.model_copy(update={"step": 0})
    launched = launch(ref, "token-0", records, fleet, slots)
    step, worker, started = launched.step, launched.worker, launched.started
    assert started and fleet.run_tasks == [worker]
    # When the state machine retries the launch (its Lambda answer lost)
    again = launch(ref, "token-0", records, fleet, slots, sleep=_no_wait)
    # Then the retry names that worker, busy on the step, and starts none
    assert (again.step, again.worker, again.started) == (step, worker, False) and fleet.run_tasks == [worker]
    state = slots.read(WorkerSlot.of(ref))
    assert (state.state, state.step_id, state.task) == ("busy", step.step_id, worker)


def test_a_launch_retried_before_its_worker_registered_asks_runtask_for_the_same_task(phase):
    # Given a launch that called RunTask, whose worker has not started yet
    records, slots, fleet, ref = phase
    asked: list[tuple[str, str]] = []

    def run_task(step, task_token, slot=None, last=True):
        asked.append((step.step_id, task_token))  # ECS's clientToken is made of these two
        return "task-1", []

    fleet.launch = run_task
    launch(ref, "token-1", records, fleet, slots)
    # When it is retried
    launched = launch(ref, "token-1", records, fleet, slots, sleep=_no_wait)
    step, worker, started = launched.step, launched.worker, launched.started
    # Then RunTask is asked again with the same step and token, so that ECS answers the task it started
    assert asked == [(step.step_id, "token-1")] * 2 and (worker, started) == ("task-1", True)
    assert slots.read(WorkerSlot.of(ref)).state == "launching"


def test_a_retry_while_the_offer_is_pending_makes_no_second_offer(phase):
    # Given a step offered to an idle worker that has not claimed it yet
    records, slots, fleet, ref = phase
    slot = WorkerSlot.of(ref)
    slots.register(slot, "w1")
    slots.finishing(slot, "w1")
    assert slots.idle(slot, "w1")
    step = preflight_result(sweep(targets=1, repetitions=1, workers=1).phases[0].targets[0]).steps[1].shards[0]
    offered = slots.offer(slot, Assignment(step=step, task_token="token-1", last=False))
    assert offered is not None
    # When the retried launch waits, and the worker claims the step meanwhile
    polls = []

    def worker_polls(seconds: float) -> None:  # the worker's next read of its slot: it takes the offer
        polls.append(seconds)
        state = slots.read(slot)
        assert state.state == "assigned" and slots.claim(slot, "w1", state.seq)

    launched = launch(ref, "token-1", records, fleet, slots, sleep=worker_polls)
    worker, started = launched.worker, launched.started
    # Then the retry saw it taken by that worker: one offer (its seq), no RunTask
    assert (worker, started, len(polls)) == ("w1", False, 1)
    assert slots.read(slot).seq == offered.seq and fleet.run_tasks == []


def test_an_offer_never_goes_to_a_worker_busy_on_a_step(phase):
    # Given a worker that just took step 1 (its beat fresh)
    _, slots, _, ref = phase
    slot = WorkerSlot.of(ref)
    slots.register(slot, "w1")
    step2 = preflight_result(sweep(targets=1, repetitions=1, workers=1).phases[0].targets[0]).steps[2].shards[0]
    # Then another step cannot be offered to it
    assert slots.offer(slot, Assignment(step=step2, task_token="token-2", last=False)) is None
    # But once it is finishing its step (about to answer), the next step can be
    slots.finishing(slot, "w1")
    assert slots.offer(slot, Assignment(step=step2, task_token="token-2", last=False)) is not None
    # And the same step's token cannot be offered twice
    assert slots.idle(slot, "w1")
    assert slots.offer(slot, Assignment(step=step2, task_token="token-2", last=False)) is None


def test_a_retry_with_a_new_token_starts_the_step_anew_only_once_its_abandoned_attempt_stopped(phase):
    # Given a worker busy on step 1 with the first attempt's token (AWS gives each attempt its own token)
    records, slots, fleet, ref = phase
    slot = WorkerSlot.of(ref)
    slots.register(slot, "w1")
    slots.finishing(slot, "w1")
    assert slots.idle(slot, "w1")
    fleet.waiting["w1"] = slot
    launch(ref, "attempt-1", records, fleet, slots, sleep=fleet.poll)
    assert slots.read(slot).state == "busy"
    # When the retry comes with a new token: the old one's heartbeat is refused, so the worker stops on
    # its third poll of the launch function's wait
    ticks = itertools.count(0.0, 1.0)
    polls = []

    def old_attempt_stops(seconds: float) -> None:
        polls.append(seconds)
        assert fleet.run_tasks == []  # nothing started beside the abandoned attempt
        if len(polls) == 3:
            assert slots.leave(slot, "w1", "stopped")

    launched = launch(ref, "attempt-2", records, fleet, slots, clock=lambda: next(ticks), sleep=old_attempt_stops)
    worker, started = launched.worker, launched.started
    # Then the step was started anew on one new worker, after the old attempt let go
    assert started and fleet.run_tasks == [worker] and len(polls) == 3 < ABANDONED_WAIT_S
    assert slots.read(slot).task_token == "attempt-2"
