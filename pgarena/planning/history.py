"""The events a campaign's execution writes to its Step Functions history, counted from its plan. Pure functions.

Step Functions fails an execution whose history passes 25,000 events
(https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html). Each state of
statemachines/campaign.asl.json writes a fixed number of events per run of it (calibrated against
moto's GetExecutionHistory: tests/integration/test_history_events.py, and test_site_regions.py for a
target preflighted on its site); the campaign's shape gives how
many times each runs. A shard's worker adds its Map iteration and its task, so the count grows with
targets x client counts x repetitions x workers. An adaptive campaign (repetitions {min, max}) is counted
at its maximum, its loop's decisions included (loop_events), so every phase it may run is within the limit.
"""

from __future__ import annotations

from pydantic import BaseModel

from pgarena.model.matrix import Campaign
from pgarena.planning.planner import Pass, passes, step_shapes
from pgarena.planning.shards import run_workers, split_clients

HISTORY_LIMIT_EVENTS = 25_000
# Room for what a run without failures does not write: a retried launch or preflight adds about 3
# events, a shard that fails adds its failure record (5) and its retries.
HISTORY_RESERVE_EVENTS = 1_250

# Events per run of a state, as the history lists them.
EXECUTION_EVENTS = 2  # ExecutionStarted, ExecutionSucceeded
LAMBDA_TASK_EVENTS = 5  # TaskStateEntered, TaskScheduled, TaskStarted, TaskSucceeded, TaskStateExited
TOKEN_TASK_EVENTS = 6  # the same and TaskSubmitted (waitForTaskToken)
DYNAMODB_TASK_EVENTS = 5
PASS_EVENTS = 2  # PassStateEntered, PassStateExited (a Choice alike)
MAP_EVENTS = 4  # MapStateEntered, MapStateStarted, MapStateSucceeded, MapStateExited
ITERATION_EVENTS = 2  # MapIterationStarted, MapIterationSucceeded

# Validate And Plan, Check Cost Cap, Within Cost Cap?, Check Targets, Run Phases In Order, Decision Due?,
# Aggregate And Rank.
CAMPAIGN_EVENTS = EXECUTION_EVENTS + 4 * LAMBDA_TASK_EVENTS + 2 * PASS_EVENTS + MAP_EVENTS
# An adaptive campaign's loop, per batch of phases after the first: Run Phases In Order again and Decision Due?;
# per decision (one after every batch): Decide More Phases and Another Phase?.
BATCH_EVENTS = MAP_EVENTS + PASS_EVENTS
DECISION_EVENTS = LAMBDA_TASK_EVENTS + PASS_EVENTS
# The phase's iteration, List Phase Targets, Benchmark Targets.
PHASE_EVENTS = ITERATION_EVENTS + PASS_EVENTS + MAP_EVENTS
# The target's iteration, Where Preflight Runs, Preflight Target, Run Steps In Order, Release Connection
# Lease, Target Finished. A target preflighted on its site runs Preflight On Site instead: a token task.
TARGET_EVENTS = ITERATION_EVENTS + PASS_EVENTS + 2 * LAMBDA_TASK_EVENTS + MAP_EVENTS + DYNAMODB_TASK_EVENTS
ON_SITE_PREFLIGHT_EVENTS = TOKEN_TASK_EVENTS - LAMBDA_TASK_EVENTS
# The step's iteration, List Shards, Run Shards Together.
STEP_EVENTS = ITERATION_EVENTS + PASS_EVENTS + MAP_EVENTS
# The shard's iteration and Run Worker Task.
SHARD_EVENTS = ITERATION_EVENTS + TOKEN_TASK_EVENTS


class HistoryCount(BaseModel):
    """A campaign's history events when every state succeeds at its first attempt."""

    events: int
    phases: int
    target_runs: int  # targets benchmarked, summed over the phases
    steps: int  # steps run, summed over targets and phases
    shards: int  # worker tasks
    shard_events_by_workload: dict[str, int]  # what each workload's extra workers add (beyond one per step)

    @property
    def budget(self) -> int:
        return HISTORY_LIMIT_EVENTS - HISTORY_RESERVE_EVENTS


def _phase_targets(campaign: Campaign) -> list[int]:
    """How many targets each phase benchmarks."""
    sweep = campaign.scenario.consolidation if campaign.scenario else None
    if sweep is not None:
        return list(sweep.steps)
    return [len(campaign.targets)] * len(passes(campaign))


def batches(campaign: Campaign) -> int:
    """The batches Run Phases In Order runs when every phase runs (an adaptive campaign at its maximum): a
    repetition past min is a batch of its own, each followed by a decision."""
    if campaign.min_repetitions is None:
        return 1
    low = campaign.min_repetitions
    count, previous_conditional = 0, False
    for selected in passes(campaign):
        conditional = selected.repetition is not None and selected.repetition > low
        if count == 0 or conditional or previous_conditional:
            count += 1
        previous_conditional = conditional
    return count


def loop_events(campaign: Campaign) -> int:
    """What an adaptive campaign's loop adds to the history at its maximum (0 for fixed repetitions)."""
    if campaign.min_repetitions is None:
        return 0
    n = batches(campaign)
    return (n - 1) * BATCH_EVENTS + n * DECISION_EVENTS


def count_history(campaign: Campaign) -> HistoryCount:
    """The history events of the campaign's execution, from its shape alone (no plan is built)."""
    phases = passes(campaign)
    targets = _phase_targets(campaign)
    steps = shards = 0
    extra: dict[str, int] = {w.name: 0 for w in campaign.workloads}
    step_cache: dict[Pass, tuple[int, int, dict[str, int]]] = {}
    for selected, n in zip(phases, targets):
        if selected not in step_cache:
            count, workers, by_workload = 0, 0, dict.fromkeys(extra, 0)
            for shape in step_shapes(campaign, selected):
                count += 1
                k = 1 if shape.clients is None else len(split_clients(shape.clients, run_workers(shape.workload, shape.clients)))
                workers += k
                by_workload[shape.workload.name] += (k - 1) * SHARD_EVENTS
            step_cache[selected] = (count, workers, by_workload)
        count, workers, by_workload = step_cache[selected]
        steps += n * count
        shards += n * workers
        for name, events in by_workload.items():
            extra[name] += n * events
    target_runs = sum(targets)
    # Counted on its site when placed anywhere: the matrix alone does not tell whether a region is the stack's own.
    on_site = [bool(t.placement and (t.placement.site or t.placement.region)) for t in campaign.targets]
    on_site_runs = sum(sum(on_site[:n]) for n in targets)
    events = (
        CAMPAIGN_EVENTS
        + loop_events(campaign)
        + len(phases) * PHASE_EVENTS
        + target_runs * TARGET_EVENTS
        + on_site_runs * ON_SITE_PREFLIGHT_EVENTS
        + steps * STEP_EVENTS
        + shards * SHARD_EVENTS
    )
    return HistoryCount(
        events=events, phases=len(phases), target_runs=target_runs, steps=steps, shards=shards, shard_events_by_workload=extra
    )


def max_workers_within(campaign: Campaign, workload: int, count: HistoryCount) -> int:
    """The most workers per run the workload could ask for with the history within budget (0: none fits)."""
    name = campaign.workloads[workload].name
    runs = sum(
        n * sum(1 for s in step_shapes(campaign, selected) if s.clients is not None and s.workload.name == name)
        for selected, n in zip(passes(campaign), _phase_targets(campaign))
    )
    without_extra = count.events - count.shard_events_by_workload[name]
    if runs == 0 or without_extra > count.budget:
        return 0
    return 1 + (count.budget - without_extra) // (runs * SHARD_EVENTS)
