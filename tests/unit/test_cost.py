"""The cost model: an itemised estimate from the plan and the price table."""

import json

import pytest

from pgarena.model.plan import RUN_TIMEOUT_MARGIN_S, WORKER_HARD_STOP_GRACE_S
from pgarena.model.results import HarnessCost, StepSummary, WorkerFacts
from pgarena.planning import cost
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES, ROOT

ASL = ROOT / "statemachines" / "campaign.asl.json"


def plan(targets=1, hourly=None, concurrency=1, clients=4, duration_s=60, repetitions=1, scale=1, **cost_policy):  # noqa: PLR0913  # a plan's knobs, as keywords with defaults
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    endpoint = data["targets"][0]["endpoint"]
    data["targets"] = [
        {"name": f"t{i}", "provider": "rds", "endpoint": endpoint, **({"hourly_cost_usd": hourly} if hourly is not None else {})}
        for i in range(targets)
    ]
    data["workloads"][0]["run"].update(clients=clients, duration_s=duration_s)
    data["workloads"][0]["init"]["scale"] = scale
    data.update(repetitions=repetitions, target_concurrency=concurrency)
    if cost_policy:
        data["cost"] = cost_policy
    return plan_campaign(parse_campaign(data), "cid")


def line(estimate, item):
    (found,) = [entry for entry in estimate.lines if entry.item == item]
    return found


def test_total_is_the_sum_of_the_itemised_lines():
    # Given a two-target sweep / When estimated
    e = cost.estimate(plan(targets=2, hourly=1.0, clients=[2, 8]), 1, 2, "us-east-1")

    # Then every line is priced, and the total is their sum
    assert [entry.item for entry in e.lines] == [
        "Fargate vCPU",
        "Fargate memory",
        "target t0",
        "target t1",
        "Lambda requests",
        "Lambda compute",
        "Step Functions transitions",
        "DynamoDB writes",
        "S3 requests",
    ]
    assert e.total_usd == pytest.approx(sum(entry.usd for entry in e.lines))
    assert all(entry.usd == pytest.approx(entry.quantity * entry.unit_price_usd, abs=1e-6) for entry in e.lines)


def test_worker_time_is_each_run_duration_and_a_load_estimate_plus_start_up():
    # Given one target: a load at scale 10, then three 600 s runs
    p = plan(clients=[1, 2, 4], duration_s=600, scale=10)

    # When estimated with 1 vCPU and 2 GB workers
    e = cost.estimate(p, 1, 2, "us-east-1")

    # Then Fargate bills one warm worker: the runs' duration, the load estimate, one start-up and a
    # hand-over per later step
    load_s = cost.INIT_BASE_S + cost.INIT_PER_SIZE_S * 10
    expected_s = 3 * 600 + load_s + cost.TASK_OVERHEAD_S + 3 * cost.WARM_STEP_OVERHEAD_S
    assert (e.tasks, e.worker_task_s) == (1, pytest.approx(expected_s))
    assert line(e, "Fargate vCPU").quantity == pytest.approx(expected_s / 3600, abs=1e-6)
    assert line(e, "Fargate memory").quantity == pytest.approx(2 * expected_s / 3600, abs=1e-6)
    assert line(e, "Fargate vCPU").unit_price_usd == cost.PRICES["us-east-1"].fargate_vcpu_hour


def test_a_short_task_is_billed_fargate_minimum():
    # Given two repetitions of a 1 s run: the second phase's worker runs that one step, under a minute
    e = cost.estimate(plan(duration_s=1, scale=1, repetitions=2), 1, 2, "us-east-1")

    # Then its task is billed a minute, beside the first phase's (the load, then a run)
    first_s = cost.INIT_BASE_S + cost.INIT_PER_SIZE_S + cost.TASK_OVERHEAD_S + 1 + cost.WARM_STEP_OVERHEAD_S
    assert 1 + cost.TASK_OVERHEAD_S < cost.FARGATE_MINIMUM_S < first_s
    assert (e.tasks, e.worker_task_s) == (2, cost.FARGATE_MINIMUM_S + first_s)


def test_targets_cost_their_hourly_price_for_the_campaign_wall_time():
    # Given two targets at $2/h benchmarked one after the other
    e = cost.estimate(plan(targets=2, hourly=2.0, duration_s=600), 1, 2, "us-east-1")

    # Then each target line is $2/h x the campaign's wall time
    assert line(e, "target t0").usd == pytest.approx(2.0 * e.wall_s / 3600, abs=1e-6)
    assert line(e, "target t1").usd == line(e, "target t0").usd


def test_target_concurrency_shortens_the_wall_time_not_the_worker_time():
    # Given four targets, one at a time and then all at once
    serial = cost.estimate(plan(targets=4, hourly=1.0, duration_s=600), 1, 2, "us-east-1")
    parallel = cost.estimate(plan(targets=4, hourly=1.0, duration_s=600, concurrency=4), 1, 2, "us-east-1")

    # Then the same Fargate time is billed, in a quarter of the target time
    assert parallel.worker_task_s == serial.worker_task_s
    per_target = (serial.wall_s - cost.CAMPAIGN_FIXED_S) / 4
    assert parallel.wall_s == pytest.approx(cost.CAMPAIGN_FIXED_S + per_target)


def test_target_without_hourly_cost_is_free_and_says_so():
    e = cost.estimate(plan(), 1, 2, "us-east-1")
    assert line(e, "target t0").usd == 0 and "no hourly_cost_usd" in line(e, "target t0").note


def test_spot_discounts_fargate_only():
    # Given the same plan on demand and on Spot
    p = plan(hourly=1.0, duration_s=600)
    on_demand, spot = cost.estimate(p, 1, 2, "us-east-1"), cost.estimate(p, 1, 2, "us-east-1", spot=True)

    # Then Fargate lines drop by the Spot discount and the rest is unchanged
    discount = 1 - cost.PRICES["us-east-1"].fargate_spot_discount
    assert spot.line_usd("Fargate") == pytest.approx(on_demand.line_usd("Fargate") * discount, abs=1e-6)
    assert spot.line_usd("target") == on_demand.line_usd("target")


def test_region_prices_come_from_the_table():
    p = plan(duration_s=600)
    assert cost.estimate(p, 1, 2, "eu-central-1").line_usd("Fargate") > cost.estimate(p, 1, 2, "us-east-1").line_usd("Fargate")


def test_unknown_region_is_priced_as_the_default_and_noted():
    # Given a region missing from the table / When estimated
    e = cost.estimate(plan(), 1, 2, "ap-south-2")

    # Then the default region's prices are used, and the estimate says so
    assert e.total_usd == cost.estimate(plan(), 1, 2, cost.DEFAULT_REGION).total_usd
    assert e.notes and "ap-south-2" in e.notes[0]


def test_bound_runs_every_step_to_its_timeout_and_hard_stop():
    # Given one target with one 60 s run / When estimated
    p = plan(duration_s=60, scale=1)
    e = cost.estimate(p, 1, 2, "us-east-1")

    # Then the bound prices each step at its timeout plus the worker's hard stop
    (target,) = p.targets
    bound_s = sum(s.timeout_s + WORKER_HARD_STOP_GRACE_S + cost.TASK_OVERHEAD_S for s in target.steps)
    bound_fargate = bound_s / 3600 * (cost.PRICES["us-east-1"].fargate_vcpu_hour + 2 * cost.PRICES["us-east-1"].fargate_gb_hour)
    assert e.bound_usd > e.total_usd
    assert e.bound_usd == pytest.approx(bound_fargate + (e.total_usd - e.line_usd("Fargate")), rel=0.05)


def test_expected_run_time_is_the_planned_duration():
    (target,) = plan(duration_s=90).targets
    run = target.steps[1]
    assert cost.expected_work_s(run) == 90 == run.timeout_s - RUN_TIMEOUT_MARGIN_S


def summary_of(step, started_at, finished_at, wall_s, worker=None, harness_s=None):  # noqa: PLR0913  # a summary's timing fields
    return StepSummary(
        campaign_id=step.campaign_id, step_id=step.step_id, target=step.target, workload=step.workload, kind=step.kind,
        tool=step.tool, status="succeeded", started_at=started_at, finished_at=finished_at, wall_s=wall_s,
        worker=WorkerFacts(worker_id=worker) if worker else None,
        harness=HarnessCost(wall_s=harness_s, cpu_s=0, tool_cpu_s=0, log_processing_s=0) if harness_s else None,
    )  # fmt: skip


def test_actual_prices_measured_seconds_and_leaves_out_steps_that_never_ran():
    # Given a plan of two steps of which only the load ran, for 3 s, in a 20 s campaign
    p = plan(hourly=3.6)
    (target,) = p.targets
    ran = summary_of(target.steps[0], "2026-11-22T12:00:00+00:00", "2026-11-22T12:00:03+00:00", 3.0, "w1")

    # When priced / Then one task is billed (its minute) and the target costs 20 s
    spent = cost.actual(p, [ran], set(), {}, 20.0, 1, 2, "us-east-1")
    assert (spent.tasks, spent.worker_task_s, spent.wall_s) == (1, cost.FARGATE_MINIMUM_S, 20.0)
    assert line(spent, "target t0").usd == pytest.approx(3.6 * 20 / 3600)


def test_a_lost_worker_is_counted_up_to_its_hard_stop():
    # Given a step launched that never wrote a summary
    p = plan()
    (target,) = p.targets
    run = target.steps[1]

    # When measuring / Then it counts until its timeout and the hard stop
    ((worker, seconds),) = cost.measured_workers(p, {}, {run.step_id})
    assert (worker.step_id, seconds) == (run.step_id, run.timeout_s + WORKER_HARD_STOP_GRACE_S)


def sharded_plan(workers: int):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["targets"][0]["hourly_cost_usd"] = 1.0
    data["workloads"][0]["run"].update(clients=12, duration_s=600, workers=workers, percentiles=True)
    return plan_campaign(parse_campaign(data), "cid")


def test_a_sharded_run_bills_one_task_per_worker_but_lasts_as_long_as_one():
    # Given the same 12-client run on one worker and split across three
    single, sharded = sharded_plan(1), sharded_plan(3)
    one, three = cost.estimate(single, 1, 2, "us-east-1"), cost.estimate(sharded, 1, 2, "us-east-1")

    # Then the split run starts two more tasks, each billed the run's duration; the step lasts as long as
    # its slowest shard: a new worker's start-up, where the single worker was warm from the load
    assert three.tasks == one.tasks + 2
    assert three.worker_task_s == pytest.approx(one.worker_task_s + 2 * (600 + cost.TASK_OVERHEAD_S))
    assert three.wall_s == one.wall_s + cost.TASK_OVERHEAD_S - cost.WARM_STEP_OVERHEAD_S


def test_measured_shards_are_priced_one_task_each():
    # Given a sharded run whose three workers each ran 600 s
    p = sharded_plan(3)
    run = p.targets[0].steps[1]
    measured = {f"{run.step_id}/s{i}": 600.0 for i in range(3)}

    # When priced / Then three tasks are billed, and the step counts once in the wall time
    workers = cost.measured_workers(p, measured, set())
    assert sorted(w.step_id for w, _ in workers) == sorted(measured)
    summaries = [
        summary_of(w, "2026-11-22T12:00:00+00:00", "2026-11-22T12:10:00+00:00", 600.0, f"w{i}")
        for i, (w, _) in enumerate(workers)
    ]
    spent = cost.actual(p, summaries, set(), {}, 700.0, 1, 2, "us-east-1")
    assert spent.tasks == 3 and spent.worker_task_s == pytest.approx(3 * (600 + cost.TASK_OVERHEAD_S))


# The Choices of an adaptive campaign's loop: a fixed campaign takes their Default.
LOOP_CHOICES = {"$.planned.adaptive", "$.planned.more"}


def _success_path(states: dict, start: str) -> list[str]:
    """State names entered by a campaign that runs and succeeds with fixed repetitions: Next, the allowed
    branch of a Choice, the Default of the adaptive loop's."""
    names, name = [], start
    while name:
        state = states[name]
        names.append(name)
        if state["Type"] == "Choice" and {c["Variable"] for c in state["Choices"]} <= LOOP_CHOICES:
            name = state["Default"]
        elif state["Type"] == "Choice":
            (allowed,) = [c for c in state["Choices"] if c.get("BooleanEquals") is True]
            name = allowed["Next"]
        else:
            name = state.get("Next")
    return names


def test_transition_counts_follow_the_asl():
    # Given the state machine file
    asl = json.loads(ASL.read_text())
    campaign = _success_path(asl["States"], asl["StartAt"])
    phases = asl["States"]["Run Phases In Order"]["ItemProcessor"]
    phase = _success_path(phases["States"], phases["StartAt"])
    targets = phases["States"]["Benchmark Targets"]["ItemProcessor"]
    target = _success_path(targets["States"], targets["StartAt"])
    steps = targets["States"]["Run Steps In Order"]["ItemProcessor"]
    step = _success_path(steps["States"], steps["StartAt"])
    # A step's workers run in a Map of their own inside the step
    (shards,) = [steps["States"][name]["ItemProcessor"] for name in step if steps["States"][name]["Type"] == "Map"]
    worker = _success_path(shards["States"], shards["StartAt"])

    # When counting the states a successful campaign enters at each level / Then the model agrees
    assert "Check Cost Cap" in campaign and "Run Worker Task" in worker
    assert (len(campaign), len(phase), len(target), len(step), len(worker)) == (
        cost.TRANSITIONS_PER_CAMPAIGN,
        cost.TRANSITIONS_PER_PHASE,
        cost.TRANSITIONS_PER_TARGET,
        cost.TRANSITIONS_PER_STEP,
        cost.TRANSITIONS_PER_WORKER,
    )


def test_the_adaptive_loop_counts_follow_the_asl():
    # Given the state machine file
    states = json.loads(ASL.read_text())["States"]

    # When following the loop from Run Phases In Order back to itself, its decision allowing another phase
    path, name = [], states["Run Phases In Order"]["Next"]
    while name != "Run Phases In Order":
        path.append(name)
        state = states[name]
        name = next(c["Next"] for c in state["Choices"]) if state["Type"] == "Choice" else state["Next"]

    # Then a batch after the first re-enters the Map and Decision Due?, and a decision is two states
    assert path == ["Decision Due?", "Decide More Phases", "Another Phase?"]
    assert 1 + len(path) == cost.TRANSITIONS_PER_BATCH + cost.TRANSITIONS_PER_DECISION
    assert states["Another Phase?"]["Default"] == states["Decision Due?"]["Default"] == "Aggregate And Rank"


def test_an_adaptive_campaign_is_priced_at_its_maximum():
    # Given the same campaign with 6 fixed repetitions and with repetitions {min 3, max 6}
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["targets"][0]["hourly_cost_usd"] = 1.0
    fixed, adaptive = json.loads(json.dumps(data)), json.loads(json.dumps(data))
    fixed["repetitions"], adaptive["repetitions"] = 6, {"min": 3, "max": 6}
    low = json.loads(json.dumps(data))
    low["repetitions"] = 3

    # When estimated
    def estimated(matrix):
        return cost.estimate(plan_campaign(parse_campaign(matrix), "c"), 1, 2, "us-east-1")

    at_max, fixed6, fixed3 = estimated(adaptive), estimated(fixed), estimated(low)

    # Then its workers and wall time are the six repetitions', not the three it may stop at
    assert at_max.tasks == fixed6.tasks > fixed3.tasks
    assert at_max.wall_s == pytest.approx(fixed6.wall_s)
    # and its decisions (one after the first 3 phases, then one after each of the 3 more) are priced too
    requests = {line.item: line.quantity for line in at_max.lines}["Lambda requests"]
    assert requests == {line.item: line.quantity for line in fixed6.lines}["Lambda requests"] + 4
    assert at_max.total_usd > fixed6.total_usd


def test_format_lines_prints_each_item_and_the_total():
    e = cost.estimate(plan(hourly=1.0), 1, 2, "us-east-1")
    text = "\n".join(cost.format_lines(e))
    assert all(entry.item in text for entry in e.lines)
    assert f"{e.total_usd:.4f}" in text and "at most" in text


def test_every_region_in_the_table_prices_every_item():
    assert cost.DEFAULT_REGION in cost.PRICES
    assert all(all(v > 0 for v in prices.model_dump().values()) for prices in cost.PRICES.values())
