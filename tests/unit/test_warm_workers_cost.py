"""The actual cost counts the workers the steps recorded (`worker_id` in each step's facts): one start-up
per worker and the span from its first step's start to its last step's end, plus its idle time until it
left when its slot recorded that. A replaced worker counts twice; the plan's slots do not decide."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pgarena.model.plan import WORKER_HARD_STOP_GRACE_S
from pgarena.model.results import HarnessCost, StepSummary, WorkerFacts
from pgarena.planning import cost
from tests.unit.test_cost import plan

T0 = 1_795_000_000.0  # 2026-11-18, epoch seconds


def at(seconds: float) -> str:
    return datetime.fromtimestamp(T0 + seconds, UTC).isoformat(timespec="milliseconds")


def ran(step, start_s: float, end_s: float, worker: str | None, n: int = 1, harness_s: float | None = None) -> StepSummary:  # noqa: PLR0913  # a step's recorded timing and worker
    return StepSummary(
        campaign_id=step.campaign_id, step_id=step.step_id, target=step.target, workload=step.workload, kind=step.kind,
        tool=step.tool, status="succeeded", started_at=at(start_s), finished_at=at(end_s), wall_s=end_s - start_s,
        worker=WorkerFacts(worker_id=worker, step_of_worker=n) if worker else None,
        harness=HarnessCost(wall_s=harness_s, cpu_s=0, tool_cpu_s=0, log_processing_s=0) if harness_s else None,
    )  # fmt: skip


def steps(clients=(1, 2, 4, 8)):
    """One target: a load, then a run per client count, in one phase (one slot)."""
    (target,) = plan(clients=list(clients), duration_s=60).targets
    return target.steps


def test_a_phase_on_one_worker_is_one_start_up_and_its_span():
    # Given a load and four runs, all recorded by worker w1, from 0 s to 310 s with gaps between steps
    load, *runs = steps()
    summaries = [ran(load, 0, 40, "w1")] + [ran(r, 50 + 65 * i, 110 + 65 * i, "w1", i + 2) for i, r in enumerate(runs)]
    # When counted / Then one worker task: one start-up and the span, gaps included
    assert cost.recorded_tasks(summaries, [], {}) == [cost.TASK_OVERHEAD_S + 305]


def test_a_replaced_worker_counts_twice():
    # Given the same phase whose worker w1 was killed after the second run, the rest on its replacement w2
    load, *runs = steps()
    summaries = [
        ran(load, 0, 40, "w1"),
        ran(runs[0], 50, 110, "w1", 2),
        ran(runs[1], 115, 175, "w1", 3),
        ran(runs[2], 240, 300, "w2"),  # w2's start-up came between
        ran(runs[3], 305, 365, "w2", 2),
    ]
    # When counted / Then two workers, each with its start-up and its own span (not one slot task)
    tasks = cost.recorded_tasks(summaries, [], {})
    assert sorted(tasks) == sorted([cost.TASK_OVERHEAD_S + 175, cost.TASK_OVERHEAD_S + 125])
    # And priced: two tasks, billed their sum, where the slot model would bill one
    p = plan(clients=[1, 2, 4, 8], duration_s=60)
    spent = cost.actual(p, summaries, set(), {}, 400.0, 1, 2, "us-east-1")
    assert (spent.tasks, spent.worker_task_s) == (2, pytest.approx(sum(tasks)))
    assert "the workers the steps recorded" in spent.lines[0].note


def test_idle_time_until_the_worker_left_is_counted_when_its_slot_recorded_it():
    # Given a worker whose last step ended at 110 s, then waited idle until it left at 230 s (its idle
    # time-out), and another that has no departure recorded
    load, run, *_ = steps()
    summaries = [ran(load, 0, 40, "w1"), ran(run, 50, 110, "w1", 2), ran(load, 0, 40, "w9")]
    # When counted / Then w1 runs to its departure, w9 to its last step's end
    tasks = cost.recorded_tasks(summaries, [], {"w1": T0 + 230, "w-other": T0 + 999})
    assert tasks == [cost.TASK_OVERHEAD_S + 230, cost.TASK_OVERHEAD_S + 40]
    # And a departure before its last step's end (a clock apart) adds nothing
    assert cost.recorded_tasks(summaries[:2], [], {"w1": T0 + 100}) == [cost.TASK_OVERHEAD_S + 110]


def test_a_step_ends_when_its_summary_is_written_after_its_probes():
    # Given an SLO search: its own run ends at 60 s, its probes and uploads until 200 s (the harness's wall)
    (run,) = steps(clients=(4,))[1:]
    summaries = [ran(run, 0, 60, "w1", harness_s=200.0)]
    # When counted / Then the worker ran until its summary was written
    assert cost.recorded_tasks(summaries, [], {}) == [cost.TASK_OVERHEAD_S + 200]


def test_steps_with_no_recorded_worker_and_lost_steps_are_tasks_of_their_own():
    # Given a summary that names no worker, and a run launched that never wrote one (its worker lost)
    load, run, *_ = steps()
    lost = [(run, cost.bounded_work_s(run))]
    # When counted / Then each is a task: the first its wall time, the lost one up to its hard stop
    tasks = cost.recorded_tasks([ran(load, 0, 40, None)], lost, {})
    assert tasks == [cost.TASK_OVERHEAD_S + 40, cost.TASK_OVERHEAD_S + run.timeout_s + WORKER_HARD_STOP_GRACE_S]
