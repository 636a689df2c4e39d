"""Warm workers: the launch function hands each step to its slot's live worker (campaign, phase, target,
shard) and starts one only when none takes it; a worker waits at its slot for the next step.

Slots are the real adapter (pgarena.aws.worker_slots) on a moto table; the workers are simulated by
the same calls the step use case (pgarena.campaign.step.slot) makes around each step (finishing, idle, claim).
"""

from __future__ import annotations

import itertools
from typing import Any

import boto3
import pytest
from moto import mock_aws

from pgarena.analysis.aggregate import worker_changes
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.campaign.launch import launch
from pgarena.campaign.slots import close_slots
from pgarena.campaign.step.slot import Seat, next_assignment, serve_slot
from pgarena.model.errors import WorkerStopped, error_info
from pgarena.model.plan import ShardRef, Step
from pgarena.model.results import StepSummary, WorkerFacts
from pgarena.model.warm import (
    CAMPAIGN_ENDED,
    HANDOVER_S,
    IDLE_TIMEOUT_S,
    LEFT_CLOSED,
    LEFT_LAST_STEP,
    LEFT_STOPPED,
    SLOT_FAST_S,
    SLOT_IDLE_POLL_S,
    SLOT_POLL_S,
    TARGET_FAILED,
    Assignment,
    WorkerSlot,
    campaign_slots,
    last_on_slot,
    slot_poll_s,
)
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.cost import estimate
from pgarena.planning.planner import plan_campaign
from pgarena.planning.shards import shard
from tests.unit.test_campaign_state import preflight_result

TABLE = "results"
CLIENT_COUNTS = [1, 2, 4, 8, 16, 32, 64, 128]


@pytest.fixture
def aws(monkeypatch):
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket=TABLE)
        create_results_table(boto3.client("dynamodb"), TABLE)
        yield ResultStore(TABLE, TABLE, s3=boto3.client("s3"), dynamodb=boto3.client("dynamodb"))


def sweep(targets: int, repetitions: int, workers: int) -> Any:
    """4 targets x 8 client counts x 3 repetitions (three interleaved phases), each run in `workers` shards."""
    return plan_campaign(
        parse_campaign(
            {
                "campaign": "sweep",
                "repetitions": repetitions,
                "targets": [
                    {"name": f"t{i}", "provider": "self-hosted", "endpoint": {"host": f"10.0.0.{i + 1}", "user": "bench"}}
                    for i in range(targets)
                ],
                "workloads": [
                    {
                        "name": "tpcb",
                        "tool": "pgbench",
                        "init": {"scale": 1},
                        "run": {"clients": CLIENT_COUNTS, "duration_s": 60, "workers": workers},
                    }
                ],
            }
        ),
        "c1",
    )


class Fleet:
    """ECS RunTask and the workers it starts, as pgarena.campaign.step.slot behaves at its slot: registered when
    started, beating just before it answers, idle after unless the step was its last, taking an offer
    at its next poll."""

    def __init__(self, slots: DynamoWorkerSlots) -> None:
        self.slots = slots
        self.run_tasks: list[str] = []
        self.waiting: dict[str, WorkerSlot] = {}  # worker -> its slot, while it waits for a step

    def launch(
        self, step: Step, task_token: str, slot: WorkerSlot | None = None, last: bool = True
    ) -> tuple[str | None, list[Any]]:
        assert slot is not None
        worker = f"task-{len(self.run_tasks) + 1}"
        self.run_tasks.append(worker)
        self.slots.register(slot, worker)
        return worker, []

    def poll(self, seconds: float) -> None:
        """The waiting workers' next read of their slot: an offered step is taken."""
        for worker, slot in list(self.waiting.items()):
            state = self.slots.read(slot)
            if state is not None and state.state == "assigned" and state.worker == worker:
                assert self.slots.claim(slot, worker, state.seq)
                del self.waiting[worker]

    def finish(self, slot: WorkerSlot, worker: str, last: bool) -> None:
        self.slots.finishing(slot, worker)
        if not last:
            assert self.slots.idle(slot, worker)
            self.waiting[worker] = slot


def test_a_sweep_starts_one_worker_per_target_phase_and_shard(aws):
    # Given 4 targets x 8 client counts x 3 repetitions in 2 shards, each phase's preflight answered
    plan = sweep(targets=4, repetitions=3, workers=2)
    records = CampaignState(aws)
    for phase in plan.phases:
        for index, target in enumerate(phase.targets):
            records.put_preflight("c1", phase.phase, index, preflight_result(target))
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    fleet = Fleet(slots)
    ran_on: dict[tuple[int, int, int], set[str]] = {}
    steps = 0
    # When the state machine runs every phase, target, step and shard in order
    for phase in plan.phases:
        for index, target in enumerate(phase.targets):
            groups = preflight_result(target).steps
            for number, group in enumerate(groups):
                for k in range(len(group.shards)):
                    ref = ShardRef(campaign_id="c1", phase=phase.phase, target=index, step=number, shard=k)
                    launched = launch(ref, f"token-{steps}", records, fleet, slots, sleep=fleet.poll)
                    step, worker = launched.step, launched.worker
                    assert step.step_id == group.shards[k].step_id
                    fleet.finish(WorkerSlot.of(ref), worker, last_on_slot(groups, number, k))
                    ran_on.setdefault((phase.phase, index, k), set()).add(worker)
                    steps += 1
    # Then RunTask ran once per target, phase and shard (24), not once per step and shard
    assert len(plan.phases) == 3 and steps == 184
    assert len(fleet.run_tasks) == 24 == len(ran_on)
    # And each slot's steps all ran on its one worker
    assert all(len(workers) == 1 for workers in ran_on.values())
    # And the estimate counts the same worker tasks
    assert estimate(plan, 1.0, 2.0, "us-east-1").tasks == 24


def test_a_worker_that_does_not_take_its_step_is_replaced(aws):
    # Given a slot whose worker showed idle, then died (it will never read its slot again)
    plan = sweep(targets=1, repetitions=1, workers=1)
    records = CampaignState(aws)
    records.put_preflight("c1", 1, 0, preflight_result(plan.phases[0].targets[0]))
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    fleet = Fleet(slots)
    ref = ShardRef(campaign_id="c1", phase=1, target=0, step=1, shard=0)
    slot = WorkerSlot.of(ref)
    slots.register(slot, "dead")
    assert slots.idle(slot, "dead")
    ticks = itertools.count(0.0, 1.0)
    # When the next step is launched and the hand-over wait passes
    launched = launch(ref, "token", records, fleet, slots, clock=lambda: next(ticks), sleep=lambda s: None)
    step, worker, started = launched.step, launched.worker, launched.started
    assert step.step_id.endswith("c1-r1")
    # Then its offer was withdrawn and a new worker started for the step
    assert started and fleet.run_tasks == [worker] and worker != "dead"
    assert next(ticks) > HANDOVER_S
    # And the dead worker, were it to come back, can no longer take the step
    assert not slots.claim(slot, "dead", 1)
    assert slots.read(slot).worker == worker


def _seat(slots: DynamoWorkerSlots, slot: WorkerSlot, worker: str) -> Seat:
    return Seat(slot, slots, worker, exit_now=lambda: pytest.fail("the hard stop fired"))


def test_an_idle_worker_takes_the_next_step_then_leaves_after_the_idle_time_out(aws):
    # Given a worker idle at its slot
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    slot = WorkerSlot(campaign_id="c1", phase=1, target=0, shard=0)
    slots.register(slot, "w1")
    assert slots.idle(slot, "w1")
    step = shard(sweep(targets=1, repetitions=1, workers=1).phases[0].targets[0].steps[1]).shards[0]
    offered = Assignment(step=step, task_token="token-2", last=False)
    assert slots.offer(slot, offered) is not None
    # When it polls: it takes the offered step
    ticks = itertools.count(0.0, 1.0)
    taken = next_assignment(_seat(slots, slot, "w1"), clock=lambda: next(ticks), sleep=lambda s: None)
    assert taken == offered and slots.read(slot).state == "busy"
    # And when it polls again with nothing offered, it leaves after the idle time-out
    assert slots.idle(slot, "w1")
    assert next_assignment(_seat(slots, slot, "w1"), clock=lambda: next(ticks), sleep=lambda s: None) is None
    assert next(ticks) > IDLE_TIMEOUT_S
    # Then the slot is gone: the next step's offer fails, so the launch function starts a new worker
    assert slots.read(slot).state == "gone" and slots.offer(slot, offered) is None


def test_an_idle_worker_polls_fast_right_after_its_step_then_slowly(aws):
    # Given a worker idle at its slot, nothing offered
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    slot = WorkerSlot(campaign_id="c1", phase=1, target=0, shard=0)
    slots.register(slot, "w1")
    assert slots.idle(slot, "w1")
    # When it waits out its idle time-out, a second a poll on its clock
    ticks = itertools.count(0.0, 1.0)
    slept: list[float] = []
    assert next_assignment(_seat(slots, slot, "w1"), clock=lambda: next(ticks), sleep=slept.append, idle_timeout_s=20) is None
    # Then it read its slot every SLOT_POLL_S while the next step would come (the step waits on that poll),
    # then every SLOT_IDLE_POLL_S (a phase cut short: fewer reads)
    assert slept[0] == SLOT_POLL_S < SLOT_IDLE_POLL_S == slept[-1]
    assert slept == sorted(slept) and set(slept) == {SLOT_POLL_S, SLOT_IDLE_POLL_S}
    assert [slot_poll_s(s) for s in (0.0, SLOT_FAST_S - 0.01, SLOT_FAST_S)] == [SLOT_POLL_S, SLOT_POLL_S, SLOT_IDLE_POLL_S]


def test_a_worker_replaced_at_its_slot_stops_waiting(aws):
    # Given a worker idle at its slot, whose slot another worker took (the first was taken for dead)
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    slot = WorkerSlot(campaign_id="c1", phase=1, target=0, shard=0)
    slots.register(slot, "w1")
    assert slots.idle(slot, "w1")
    slots.register(slot, "w2")
    # When the first polls, then Then it exits at once, and cannot show itself idle there either
    assert next_assignment(_seat(slots, slot, "w1"), sleep=lambda s: pytest.fail("waited")) is None
    assert not slots.idle(slot, "w1")


def test_a_shards_last_step_is_the_last_that_has_that_shard():
    # Given a load on one worker, then runs of 1 client (one shard) and more (two shards)
    groups = [shard(step) for step in sweep(targets=1, repetitions=1, workers=2).phases[0].targets[0].steps]
    sizes = [len(group.shards) for group in groups]
    assert sizes[:2] == [1, 1] and set(sizes[2:]) == {2}
    # Then each shard index's last step is the phase's last, and no earlier one
    last = len(groups) - 1
    assert [last_on_slot(groups, i, 0) for i in range(len(groups))] == [False] * last + [True]
    assert [last_on_slot(groups, i, 1) for i in range(2, len(groups))] == [False] * (last - 2) + [True]


def _ran(step_id: str, repetition: int, worker: str, cpu: str = "cpu A") -> StepSummary:
    return StepSummary(
        campaign_id="c1", step_id=step_id, target="t0", workload="tpcb", kind="run", tool="pgbench", repetition=repetition,
        status="succeeded", started_at="t", finished_at="t", wall_s=1.0, worker=WorkerFacts(worker_id=worker, cpu_model=cpu),
    )  # fmt: skip


def test_the_results_say_when_a_phases_steps_ran_on_more_than_one_worker():
    # Given repetition 1 on one worker per shard, and repetition 2 whose worker was replaced mid-phase
    summaries = [
        _ran("t0/tpcb/c2-r1/s0", 1, "w1"),
        _ran("t0/tpcb/c2-r1/s1", 1, "w2"),
        _ran("t0/tpcb/c4-r1/s0", 1, "w1"),
        _ran("t0/tpcb/c4-r1/s1", 1, "w2"),
        _ran("t0/tpcb/c2-r2", 2, "w3"),
        _ran("t0/tpcb/c4-r2", 2, "w4", "cpu B"),
    ]
    # Then only repetition 2 is named, with its workers' CPUs (shards on their own workers are expected)
    assert worker_changes(summaries) == ["tpcb repetition 2: 2 steps on 2 workers (cpu A, cpu B)"]


def test_a_closed_slot_sends_its_idle_worker_away_at_once_and_says_why(aws):
    # Given a worker idle at its slot, a step of the phase it could have been offered
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    slot = WorkerSlot(campaign_id="c1", phase=1, target=0, shard=0)
    slots.register(slot, "w1")
    assert slots.idle(slot, "w1")
    step = shard(sweep(targets=1, repetitions=1, workers=1).phases[0].targets[0].steps[1]).shards[0]
    # When its target's phase is cut short: the release closes its slots
    assert close_slots(slots, [slot], TARGET_FAILED, clock=lambda: 1234.5) == {"w1": 1234.5}  # it leaves now
    # Then the worker's next poll ends its wait, without waiting out the idle time-out
    assert next_assignment(_seat(slots, slot, "w1"), sleep=lambda s: pytest.fail("waited")) is None
    # And the slot says why it closed and why its worker left; nothing can be offered there any more
    state = slots.read(slot)
    assert (state.state, state.closed, state.left) == ("closed", TARGET_FAILED, LEFT_CLOSED)
    assert slots.offer(slot, Assignment(step=step, task_token="t", last=False)) is None
    assert not slots.idle(slot, "w1")
    # And a later close (the campaign's end) keeps the first reason, and reads when the worker left
    departures = close_slots(slots, [slot], CAMPAIGN_ENDED.format("completed"))
    assert slots.read(slot).closed == TARGET_FAILED and departures == {"w1": state.left_at}


def test_a_worker_started_for_a_closed_slot_does_not_register(aws):
    # Given a slot closed before any worker registered there (the campaign cancelled as RunTask started one)
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    slot = WorkerSlot(campaign_id="c1", phase=1, target=0, shard=1)
    assert slots.close(slot, CAMPAIGN_ENDED.format("cancelled")) is None
    # When the late worker starts / Then it is refused: it exits without loading the target
    assert not slots.register(slot, "late")
    assert slots.read(slot).closed == "campaign_cancelled" and slots.read(slot).worker == ""


def test_a_worker_leaves_its_slot_saying_why(aws):
    # Given workers serving their slots
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    done, stopped = (WorkerSlot(campaign_id="c1", phase=1, target=t, shard=0) for t in (0, 1))
    step = shard(sweep(targets=1, repetitions=1, workers=1).phases[0].targets[0].steps[1]).shards[0]
    served: list[str] = []

    def serve(kind):
        return lambda assignment, n, finishing: served.append(kind) or (None if kind == "ok" else error_info(WorkerStopped()))

    # When one runs its slot's last step, and another is stopped on its step
    slots.register(done, "w1")
    assert serve_slot(Assignment(step=step, task_token="t1", last=True), _seat(slots, done, "w1"), serve("ok")) == 0
    slots.register(stopped, "w2")
    assert serve_slot(Assignment(step=step, task_token="t2", last=False), _seat(slots, stopped, "w2"), serve("stop")) == 1
    # Then each slot says why its worker left: a next step's offer finds no one and starts a worker at once
    assert [(s.state, s.left) for s in map(slots.read, (done, stopped))] == [("gone", LEFT_LAST_STEP), ("gone", LEFT_STOPPED)]
    assert served == ["ok", "stop"]


def test_every_slot_a_campaign_may_have_used_is_listed_from_its_preflights():
    # Given two targets, the second's runs in two shards, each preflight answered
    plan = sweep(targets=2, repetitions=1, workers=2)
    preflights = {(1, i): preflight_result(t) for i, t in enumerate(plan.phases[0].targets)}
    # Then every (phase, target, shard) is listed once
    assert sorted(s.name for s in campaign_slots("c1", preflights)) == ["1#0#0", "1#0#1", "1#1#0", "1#1#1"]


def test_each_slot_has_a_partition_of_its_own_within_the_workers_grant():
    # Given every slot of a campaign of 40 targets x 40 shards (each idle worker reads its slot every 0.05 s)
    from pgarena.aws import access

    keys = [access.worker_slot_key("c1", f"1#{t}#{k}")["pk"]["S"] for t in range(40) for k in range(40)]
    # Then no two share a partition, and the workers' grant (its leading keys) covers each
    assert len(set(keys)) == len(keys) == 1600
    assert all(access.grant_covers(access.TableGrant(access.WORKERS, (access.Action.GET_ITEM,)), key) for key in keys)
    # And another campaign's slot of the same name is another item
    assert access.worker_slot_key("c2", "1#0#0") != access.worker_slot_key("c1", "1#0#0")
