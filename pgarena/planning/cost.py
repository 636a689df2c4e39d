"""What a campaign costs in AWS: an itemised estimate from its plan and a price table. Pure.

The estimate counts what the campaign makes AWS bill (Fargate worker time, Lambda, Step Functions
state transitions, DynamoDB and S3 requests) and what its targets cost while it runs (each target's
`hourly_cost_usd` x the campaign's wall time). The cost guard (pgarena.ledger) compares it with
the matrix's caps before any worker starts; the aggregate step prices what actually ran the same way.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from pgarena.model.cost import CostEstimate, CostLine, RegionPrices
from pgarena.model.matrix import Campaign, Endpoint
from pgarena.model.plan import (
    INIT_TIMEOUT_BASE_S,
    INIT_TIMEOUT_PER_SCALE_S,
    RUN_TIMEOUT_MARGIN_S,
    WORKER_HARD_STOP_GRACE_S,
    Plan,
    Step,
)
from pgarena.model.results import StepSummary
from pgarena.planning.planner import plan_campaign
from pgarena.planning.shards import shard

# THE PRICE TABLE. List prices as of 2026-06 from the AWS pricing pages; they change, and some
# regions are missing: edit this table (a region without an entry is priced as DEFAULT_REGION, and
# the estimate says so). Savings plans and free tiers are not modelled; data transfer only where a
# worker site's results cross regions (below).
PRICES_AS_OF = "2026-06"
DEFAULT_REGION = "us-east-1"
_US = RegionPrices(
    fargate_vcpu_hour=0.04048,
    fargate_gb_hour=0.004445,
    fargate_spot_discount=0.70,
    lambda_gb_second=0.0000166667,
    lambda_request=0.20 / 1e6,
    sfn_transition=0.025 / 1e3,
    dynamodb_write=0.625 / 1e6,
    dynamodb_read=0.125 / 1e6,
    s3_put=0.005 / 1e3,
    s3_get=0.0004 / 1e3,
)
PRICES: dict[str, RegionPrices] = {
    "us-east-1": _US,
    "us-east-2": _US,
    "us-west-2": _US,
    "eu-west-1": _US.model_copy(
        update={
            "fargate_vcpu_hour": 0.04456,
            "fargate_gb_hour": 0.004865,
            "dynamodb_write": 0.705 / 1e6,
            "dynamodb_read": 0.141 / 1e6,
        }
    ),
    "eu-central-1": _US.model_copy(
        update={
            "fargate_vcpu_hour": 0.04656,
            "fargate_gb_hour": 0.00511,
            "dynamodb_write": 0.7625 / 1e6,
            "dynamodb_read": 0.1525 / 1e6,
            "s3_put": 0.0054 / 1e3,
            "s3_get": 0.00043 / 1e3,
        }
    ),
}

# Per region: (NAT gateway per hour, NAT data processed per GB), USD (aws.amazon.com/vpc/pricing); the
# stack's and each region site's NAT (pgarena.planning.fixed_cost), and a site's results leaving through it.
NAT_PRICES: dict[str, tuple[float, float]] = {
    "us-east-1": (0.045, 0.045),
    "us-east-2": (0.045, 0.045),
    "us-west-2": (0.045, 0.045),
    "eu-west-1": (0.048, 0.048),
    "eu-central-1": (0.052, 0.052),
}
PUBLIC_IPV4_HOUR_USD = 0.005  # every region (aws.amazon.com/vpc/pricing, public IPv4 addresses)
# Data transfer out of a region to another AWS region, per GB (aws.amazon.com/ec2/pricing/on-demand, "Data
# Transfer OUT From Amazon EC2 To" another region): $0.02 from these regions; a region not listed is priced so.
INTER_REGION_GB_USD: dict[str, float] = {
    "us-east-1": 0.02,
    "us-east-2": 0.02,
    "us-west-2": 0.02,
    "eu-west-1": 0.02,
    "eu-central-1": 0.02,
}
# ECS Anywhere, per managed on-premises instance-hour, every region (aws.amazon.com/ecs/pricing): an external
# site's worker is priced so for its task's time instead of Fargate (its machine is its cloud's bill).
ECS_ANYWHERE_INSTANCE_HOUR_USD = 0.01025
# What a worker uploads to the home bucket and table per second of its tool (raw output, per-transaction
# logs, progress series), an assumption rather than a measurement: a region site's uploads go through its
# NAT and across regions, priced by the GB.
SITE_UPLOAD_BYTES_PER_TOOL_S = 50_000
SITE_UPLOAD_BYTES_PER_STEP = 1_000_000  # summary, monitor series, logs of the step

# The model's assumptions about time, in seconds. Fargate bills from the start of the image pull
# to the task's stop, and at least a minute per task.
FARGATE_MINIMUM_S = 60
TASK_OVERHEAD_S = 45  # per worker task: provisioning, image pull, interpreter start, final uploads
# A warm worker serves its slot's steps one after another (pgarena.model.warm): each step after its
# first pays the hand-over (the launch function, a poll of the slot) and its final uploads only.
WARM_STEP_OVERHEAD_S = 5
INIT_BASE_S = 20  # a load's fixed part (connections, vacuum, primary keys on an empty start)
INIT_PER_SIZE_S = 1.0  # per pgbench scale unit (100,000 rows) or sysbench equivalent, over the network
CLEANUP_S = 30  # sysbench cleanup: dropping its tables
CAMPAIGN_FIXED_S = 15  # validate, cost check and aggregate around the targets
TARGET_FIXED_S = 5  # a target's preflight and lease release around its steps

# Lambda per invocation: memory (MiB, the stack's sizes in cdk/pgarena_cdk/constants.py; an
# infrastructure test keeps them equal) and a typical billed duration (s).
LAMBDA_SHAPE: dict[str, tuple[int, float]] = {
    "validate": (512, 1.0),
    "cost_guard": (256, 1.0),
    "preflight": (512, 3.0),
    "launch_worker": (512, 1.0),
    "release_lease": (256, 0.5),
    "aggregate": (1024, 5.0),
    "decide": (1024, 5.0),
}

# State transitions of a campaign that runs, from statemachines/campaign.asl.json's success path
# (a unit test walks the file and keeps these equal); retries and failures add a few.
# Validate And Plan, Check Cost Cap, Within Cost Cap?, Check Targets, Run Phases In Order, Decision Due?,
# Aggregate And Rank
TRANSITIONS_PER_CAMPAIGN = 7
# An adaptive campaign's loop: each batch after the first enters Run Phases In Order and Decision Due? again;
# each decision (one per batch) is Decide More Phases and Another Phase?.
TRANSITIONS_PER_BATCH = 2
TRANSITIONS_PER_DECISION = 2
TRANSITIONS_PER_PHASE = 2  # List Phase Targets, Benchmark Targets
# Where Preflight Runs, Preflight Target (or Preflight On Site), Run Steps In Order, Release Connection Lease, Target Finished
TRANSITIONS_PER_TARGET = 5
TRANSITIONS_PER_STEP = 2  # List Shards, Run Shards Together
TRANSITIONS_PER_WORKER = 1  # Run Worker Task, once per shard

# Requests per worker task: raw output (once every UPLOAD_EVERY_S while the tool runs, then
# once more), the monitor series, summary.json; one summary item.
S3_PUTS_PER_STEP = 3
S3_UPLOAD_EVERY_S = 15
DYNAMODB_WRITES_PER_STEP = 1
DYNAMODB_WRITES_PER_SLOT_STEP = 3  # the slot's item: offered (or registered), taken, freed
DYNAMODB_WRITES_PER_TARGET = (
    3  # the server's lease: queued (its turn), taken, given back (a waiter renews its place about every 30 s besides)
)
DYNAMODB_WRITES_PER_CAMPAIGN = 4  # ledger: booked (entry + month total), settled (entry + month total)


_PLACEHOLDER_ENDPOINT = Endpoint(host="127.0.0.1", user="postgres")


def prices_for(region: str) -> tuple[RegionPrices, list[str]]:
    if region in PRICES:
        return PRICES[region], []
    return PRICES[DEFAULT_REGION], [
        f"no prices for {region} in pgarena/planning/cost.py PRICES: priced as {DEFAULT_REGION}; add the region to the table"
    ]


def init_size(step: Step) -> int:
    """The load's size in scale units, as the plan sized its timeout."""
    return max(1, (step.timeout_s - INIT_TIMEOUT_BASE_S) // INIT_TIMEOUT_PER_SCALE_S)


def expected_work_s(step: Step) -> float:
    """How long a step's tool is expected to run: the run's planned duration, or an estimate of a load."""
    if step.kind == "run":  # every tool run of the step (an SLO search's probes) has its margin in the timeout
        return float(step.timeout_s - step.tool_runs * RUN_TIMEOUT_MARGIN_S)
    if step.kind == "init":
        return min(float(step.timeout_s), INIT_BASE_S + INIT_PER_SIZE_S * init_size(step))
    return float(CLEANUP_S)


def bounded_work_s(step: Step) -> float:
    """The longest a step's worker can live: its timeout, then the worker's hard stop."""
    return float(step.timeout_s + WORKER_HARD_STOP_GRACE_S)


def _billed_s(task_s: float) -> float:
    return max(float(FARGATE_MINIMUM_S), task_s)


def makespan(target_s: list[float], lanes: int) -> float:
    """Wall time of targets run `lanes` at a time, each starting when a lane frees (the Map's MaxConcurrency)."""
    free = [0.0] * max(1, min(lanes, len(target_s)))
    heapq.heapify(free)
    end = 0.0
    for seconds in target_s:
        start = heapq.heappop(free)
        heapq.heappush(free, start + seconds)
        end = max(end, start + seconds)
    return end


def _line(item: str, quantity: float, unit: str, unit_price: float, note: str = "") -> CostLine:
    return CostLine(
        item=item,
        quantity=round(quantity, 6),
        unit=unit,
        unit_price_usd=unit_price,
        usd=round(quantity * unit_price, 6),
        note=note,
    )


Worker = tuple[Step, float]  # one step (or shard) a worker runs, and its tool seconds


def worker_tasks(plan: Plan, workers: list[Worker]) -> list[list[Worker]]:
    """The worker tasks that run these steps: one per slot (phase, target, shard index), its steps in
    order, as warm workers serve them (pgarena.model.warm)."""
    where = {
        step.step_id: (p, t)
        for p, phase in enumerate(plan.phases)
        for t, target in enumerate(phase.targets)
        for step in target.steps
    }
    tasks: dict[tuple[int, int, int], list[Worker]] = {}
    for worker in workers:
        step = worker[0]
        logical = step.group_id or step.step_id
        index = re.search(r"/s(\d+)$", step.step_id) if step.group_id else None
        phase, target = where.get(logical, (-1, -1))
        tasks.setdefault((phase, target, int(index.group(1)) if index else step.shard), []).append(worker)
    return list(tasks.values())


def _slot_tasks(plan: Plan, workers: list[Worker]) -> tuple[list[float], float]:
    """The estimate's worker tasks, one per slot (worker_tasks): each task's seconds, and the campaign's
    wall time. A task's first step pays its start-up, each later one the hand-over; Fargate bills the
    task whole."""
    on_task = [
        [(step, seconds + (TASK_OVERHEAD_S if i == 0 else WARM_STEP_OVERHEAD_S)) for i, (step, seconds) in enumerate(task)]
        for task in worker_tasks(plan, workers)
    ]
    step_s: dict[str, float] = {}  # a step lasts as long as its slowest shard
    for step, seconds in (worker for task in on_task for worker in task):
        key = step.group_id or step.step_id
        step_s[key] = max(step_s.get(key, 0.0), seconds)
    # Each phase benchmarks its targets `concurrency` at a time; phases run one after the other.
    wall_s = CAMPAIGN_FIXED_S + sum(
        makespan([TARGET_FIXED_S + sum(step_s.get(s.step_id, 0.0) for s in t.steps) for t in phase.targets], phase.concurrency)
        for phase in plan.phases
    )
    return [sum(seconds for _, seconds in task) for task in on_task], wall_s


def _epoch(timestamp: str) -> float | None:
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return None


def recorded_tasks(summaries: Iterable[StepSummary], lost: Iterable[Worker], departures: Mapping[str, float]) -> list[float]:
    """The worker tasks that ran, as their steps recorded them (`worker_id` in each step's facts): per
    worker, one start-up and the span from its first step's start to its last step's end, plus its idle
    time until it left when its slot recorded that (`departures`). A replaced worker is two workers. A
    step whose summary names no worker (written before an old worker recorded one) is a task of its own;
    so is a step launched that wrote no summary (`lost`: its worker died or was killed), up to its hard stop."""
    spans: dict[str, tuple[float, float]] = {}
    tasks: list[float] = []
    for summary in summaries:
        worker = summary.worker.worker_id if summary.worker else None
        start, finished = _epoch(summary.started_at), _epoch(summary.finished_at)
        if worker is None or start is None or finished is None:
            tasks.append(TASK_OVERHEAD_S + summary.wall_s)
            continue
        # The step's end: its summary written, after the uploads and any SLO probes (the harness's wall,
        # counted here from the tool's start: an upper bound by the few seconds before it).
        end = max(finished, start + (summary.harness.wall_s if summary.harness else 0.0))
        first, last = spans.get(worker, (start, end))
        spans[worker] = (min(first, start), max(last, end))
    for worker, (first, last) in spans.items():
        idle_s = max(0.0, departures[worker] - last) if worker in departures else 0.0
        tasks.append(TASK_OVERHEAD_S + (last - first) + idle_s)
    tasks.extend(TASK_OVERHEAD_S + seconds for _, seconds in lost)
    return tasks


def on_external_site(step: Step) -> bool:
    """Whether the step's worker runs on an external site (ECS Anywhere), not on Fargate."""
    return step.placement is not None and step.placement.site is not None


def site_region(step: Step, home: str) -> str | None:
    """The region site the step's worker runs in, when it is not the stack's own region."""
    region = step.placement.region if step.placement is not None else None
    return region if region not in (None, home) else None


def _external_lines(external_s: list[float]) -> list[CostLine]:
    if not external_s:
        return []
    return [
        _line(
            "ECS Anywhere instances",
            sum(external_s) / 3600,
            "instance-hours",
            ECS_ANYWHERE_INSTANCE_HOUR_USD,
            f"{len(external_s)} worker tasks on external sites (placement.site), instead of Fargate; "
            "the machines are their cloud's bill",
        )
    ]


def site_upload_gb(workers: Iterable[Worker]) -> float:
    """What these workers upload home (SITE_UPLOAD_BYTES_PER_TOOL_S, SITE_UPLOAD_BYTES_PER_STEP), in GB."""
    return sum(SITE_UPLOAD_BYTES_PER_STEP + SITE_UPLOAD_BYTES_PER_TOOL_S * seconds for _, seconds in workers) / 1e9


def _transfer_lines(workers: list[Worker], home: str) -> list[CostLine]:
    """A region site's results reach the home bucket and table through its NAT and across regions: the NAT's
    processing there, then the transfer out of that region, per GB."""
    by_region: dict[str, list[Worker]] = {}
    for worker in workers:
        if (far := site_region(worker[0], home)) is not None:
            by_region.setdefault(far, []).append(worker)
    lines = []
    for far, site_workers in sorted(by_region.items()):
        processing = NAT_PRICES.get(far, NAT_PRICES[DEFAULT_REGION])[1]
        transfer = INTER_REGION_GB_USD.get(far, INTER_REGION_GB_USD[DEFAULT_REGION])
        lines.append(
            _line(
                f"results from {far}",
                site_upload_gb(site_workers),
                "GB",
                processing + transfer,
                f"{len(site_workers)} workers' uploads home: its NAT ${processing:.3f}/GB + to {home} ${transfer:.3f}/GB "
                f"(assumed {SITE_UPLOAD_BYTES_PER_TOOL_S // 1000} KB per tool second)",
            )
        )
    return lines


def _price(  # noqa: PLR0913  # the worker size, region and Spot, not grouped yet
    plan: Plan,
    workers: list[Worker],
    task_s: list[float],
    wall_s: float,
    worker_vcpu: float,
    worker_memory_gb: float,
    region: str,
    spot: bool,
    basis: str,
    external_s: list[float] | None = None,
) -> CostEstimate:
    """Price these worker tasks (`task_s`: each Fargate task's seconds before Fargate's minimum, counted as
    `basis` says; `external_s`: each external site's task's) and the steps they ran (`workers`: the requests
    each makes, the uploads of region sites); steps without a worker did not run."""
    external_s = external_s or []
    prices, notes = prices_for(region)
    billed_s = sum(_billed_s(seconds) for seconds in task_s)
    step_count = len({step.group_id or step.step_id for step, _ in workers})
    passes = [(phase.concurrency, phase.targets) for phase in plan.phases]
    target_passes = sum(len(targets) for _, targets in passes)
    wall_h = wall_s / 3600
    discount = (1 - prices.fargate_spot_discount) if spot else 1.0
    kind = "Fargate Spot" if spot else "Fargate"
    lines = [
        _line(
            f"{kind} vCPU",
            billed_s / 3600 * worker_vcpu,
            "vCPU-hours",
            prices.fargate_vcpu_hour * discount,
            f"{len(task_s)} tasks for {len(workers)} steps ({basis}) x {worker_vcpu:g} vCPU, "
            f"{TASK_OVERHEAD_S} s start-up each, at least {FARGATE_MINIMUM_S} s",
        ),
        _line(
            f"{kind} memory",
            billed_s / 3600 * worker_memory_gb,
            "GB-hours",
            prices.fargate_gb_hour * discount,
            f"{worker_memory_gb:g} GB per task",
        ),
        *_external_lines(external_s),
    ]
    for target in plan.targets:
        hourly = target.hourly_cost_usd
        lines.append(
            _line(
                f"target {target.name}",
                wall_h,
                "hours",
                hourly or 0.0,
                f"{target.provider}, for the campaign's wall time"
                if hourly is not None
                else f"{target.provider}: no hourly_cost_usd in the matrix, counted as free",
            )
        )
    decisions = len(plan.batches()) if plan.adaptive else 0  # priced at the maximum: every phase runs
    invocations = {
        "decide": decisions,
        "validate": 1,
        "cost_guard": 1,
        "aggregate": 1,
        "preflight": target_passes,
        "release_lease": target_passes,
        "launch_worker": len(workers),
    }
    requests = sum(invocations.values())
    gb_s = sum(count * LAMBDA_SHAPE[name][0] / 1024 * LAMBDA_SHAPE[name][1] for name, count in invocations.items())
    transitions = (
        TRANSITIONS_PER_CAMPAIGN
        + (TRANSITIONS_PER_BATCH * (decisions - 1) + TRANSITIONS_PER_DECISION * decisions if decisions else 0)
        + TRANSITIONS_PER_PHASE * len(passes)
        + TRANSITIONS_PER_TARGET * target_passes
        + TRANSITIONS_PER_STEP * step_count
        + TRANSITIONS_PER_WORKER * len(workers)
    )
    # Each tool run of a step (an SLO search's probes too) uploads its own output and log.
    s3_puts = sum(S3_PUTS_PER_STEP * step.tool_runs + seconds // S3_UPLOAD_EVERY_S for step, seconds in workers) + 1
    dynamodb_writes = (
        (DYNAMODB_WRITES_PER_STEP + DYNAMODB_WRITES_PER_SLOT_STEP) * len(workers)
        + DYNAMODB_WRITES_PER_TARGET * target_passes
        + DYNAMODB_WRITES_PER_CAMPAIGN
    )
    lines += [
        _line("Lambda requests", requests, "requests", prices.lambda_request),
        _line("Lambda compute", gb_s, "GB-seconds", prices.lambda_gb_second, "x86_64, typical durations"),
        _line("Step Functions transitions", transitions, "transitions", prices.sfn_transition, "standard workflow"),
        _line(
            "DynamoDB writes",
            dynamodb_writes,
            "write units",
            prices.dynamodb_write,
            "summaries, leases, ledger; lease polling adds reads",
        ),
        _line("S3 requests", s3_puts, "PUT requests", prices.s3_put, "raw output, summaries, results.json"),
        *_transfer_lines(workers, region),
    ]
    return CostEstimate(
        region=region,
        prices_as_of=PRICES_AS_OF,
        worker_vcpu=worker_vcpu,
        worker_memory_gb=worker_memory_gb,
        spot=spot,
        tasks=len(task_s) + len(external_s),
        worker_task_s=round(billed_s, 3),
        wall_s=round(wall_s, 3),
        lines=lines,
        total_usd=round(sum(line.usd for line in lines), 6),
        notes=notes,
    )


def _all_steps(plan: Plan) -> Iterable[Step]:
    return (step for target in plan.targets for step in target.steps)


def _workers(plan: Plan, seconds: Callable[[Step], float]) -> list[Worker]:
    """Every worker task the plan starts: one per step, or one per shard of a sharded run."""
    return [(worker, seconds(step)) for step in _all_steps(plan) for worker in shard(step).shards]


def estimate(plan: Plan, worker_cpu: float, worker_memory_gb: float, region: str, spot: bool = False) -> CostEstimate:
    """The campaign's expected cost, itemised, with the most it can cost (`bound_usd`) beside it.

    `worker_cpu` is in vCPU (Fargate CPU units / 1024). Spot prices vary; the cost guard prices on-demand.
    """
    priced = []
    for seconds in (expected_work_s, bounded_work_s):
        workers = _workers(plan, seconds)
        _, wall_s = _slot_tasks(plan, workers)
        task_s, _ = _slot_tasks(plan, [w for w in workers if not on_external_site(w[0])])
        external_s, _ = _slot_tasks(plan, [w for w in workers if on_external_site(w[0])])
        basis = f"one per target, phase and shard, {WARM_STEP_OVERHEAD_S} s per later step"
        priced.append(_price(plan, workers, task_s, wall_s, worker_cpu, worker_memory_gb, region, spot, basis, external_s))
    expected, bound = priced
    return expected.model_copy(update={"bound_usd": bound.total_usd})


def actual(  # noqa: PLR0913  # what ran, and the worker size, region and Spot, not grouped yet
    plan: Plan,
    summaries: list[StepSummary],
    lost: set[str],
    departures: Mapping[str, float],
    wall_s: float,
    worker_cpu: float,
    worker_memory_gb: float,
    region: str,
    spot: bool = False,
) -> CostEstimate:
    """What a finished campaign cost, priced like its estimate: its worker tasks as the steps recorded
    them (recorded_tasks), the requests of the steps that ran, the targets over its wall time. `lost`:
    the step and shard ids launched that wrote no summary."""
    workers = measured_workers(plan, {s.step_id: s.wall_s for s in summaries}, lost)
    external = {w[0].step_id for w in workers if on_external_site(w[0])}
    tasks, external_s = (
        recorded_tasks(
            [s for s in summaries if (s.step_id in external) is on_site],
            [w for w in workers if w[0].step_id in lost and (w[0].step_id in external) is on_site],
            departures,
        )
        for on_site in (False, True)
    )
    basis = "the workers the steps recorded, each from its first step's start to its last step's end"
    return _price(plan, workers, tasks, wall_s, worker_cpu, worker_memory_gb, region, spot, basis, external_s)


def measured_workers(plan: Plan, tool_s: dict[str, float], launched_without_summary: set[str]) -> list[Worker]:
    """The workers that ran, by step or shard id: a summary's wall time, or, for a worker launched that
    never wrote one (lost, killed), everything up to its hard stop."""
    workers: list[Worker] = []
    for step in _all_steps(plan):
        shard_id = re.compile(re.escape(step.step_id) + r"(/s\d+)?$")
        for worker_id in sorted(i for i in tool_s.keys() | launched_without_summary if shard_id.match(i)):
            worker = step.model_copy(update={"step_id": worker_id, "group_id": step.step_id})
            workers.append((worker, tool_s.get(worker_id, bounded_work_s(step))))
    return workers


def worker_size(cpu_units: int, memory_mib: int) -> tuple[float, float]:
    """Fargate task size in vCPU and GB from the task definition's units."""
    return cpu_units / 1024, memory_mib / 1024


def format_lines(estimate_: CostEstimate) -> list[str]:
    """The estimate line by line, for people."""
    rows = [f"{'item':32} {'quantity':>14} {'unit':14} {'unit price':>12} {'USD':>10}"]
    for line in estimate_.lines:
        rows.append(
            f"{line.item:32} {line.quantity:>14,.4f} {line.unit:14} {line.unit_price_usd:>12.8f} "
            f"{line.usd:>10.4f}  {line.note}".rstrip()
        )
    rows.append(f"{'total':32} {'':>14} {'':14} {'':>12} {estimate_.total_usd:>10.4f}")
    if estimate_.bound_usd is not None:
        rows.append(f"{'at most (every step to its timeout)':62} {'':>12} {estimate_.bound_usd:>10.4f}")
    return rows


def estimate_campaign(
    campaign: Campaign, cpu_units: int, memory_mib: int, region: str | None = None, spot: bool = False
) -> CostEstimate:
    """`pgarena estimate`: the guard's estimate of a matrix, before it is ever started.

    Embedded targets (local runs) are priced as if they were endpoints: what the campaign would
    cost in AWS against servers of the same hourly price.
    """
    plan = endpoint_plan(campaign)
    vcpu, memory_gb = worker_size(cpu_units, memory_mib)
    chosen = region or (campaign.cost.region if campaign.cost else None) or DEFAULT_REGION
    return estimate(plan, vcpu, memory_gb, chosen, spot)


def endpoint_plan(campaign: Campaign) -> Plan:
    """The campaign's plan before it runs, embedded targets standing as endpoints (their steps are the same)."""
    targets = [
        t if t.endpoint is not None else t.model_copy(update={"embedded": None, "endpoint": _PLACEHOLDER_ENDPOINT})
        for t in campaign.targets
    ]
    return plan_campaign(campaign.model_copy(update={"targets": targets}), f"{campaign.campaign}-estimate")
