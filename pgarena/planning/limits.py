"""What AWS lets a campaign's plan carry, measured on the plan as pgarena.planning makes it. Pure functions.

Each refusal names the limit; pgarena.planning.campaign.parse_campaign applies them right after the
schema, so every entry point refuses a campaign AWS would not run before anything touches a database.
What the strict local runtime enforces on an execution is in pgarena.local.limits.
"""

from __future__ import annotations

import json
from typing import Any

from pgarena.model.matrix import FAN_OUT_REASON, MAX_STARTED_TOGETHER, Campaign
from pgarena.model.matrix_errors import Problem
from pgarena.model.plan import INIT_TIMEOUT_BASE_S
from pgarena.planning.history import HISTORY_LIMIT_EVENTS, HISTORY_RESERVE_EVENTS, count_history, max_workers_within
from pgarena.planning.planner import Pass, init_timeout_s, passes, run_timeout_s, step_shapes
from pgarena.planning.shards import run_workers, split_clients

# Each worker gets its step in its ECS RunTask container overrides, which hold at most 8,192 characters;
# the task token (up to 2,048), the other variables and the step's own fields take the reserve.
RUNTASK_OVERRIDES_LIMIT_CHARS = 8_192
RUNTASK_RESERVED_CHARS = 3_800
# A state's input and output in Step Functions: 256 KiB. The state carries refs (pgarena.model.plan: a
# phase's, a step's, at most these many bytes in JSON, tests/unit/test_matrix_limits.py checks), the
# rest of the plan is in the bucket; failure messages get the reserve.
STATE_LIMIT_BYTES = 262_144
STATE_RESERVED_BYTES = 64_000
PHASE_REF_BYTES = 80
STEP_REF_BYTES = 96
# A phase's ref lists the targets preflighted on their site (PhaseRef.on_site): an index and a comma each.
ON_SITE_INDEX_BYTES = 5
# States.ArrayRange (List Phase Targets) makes at most this many items.
MAX_MAP_ITEMS = 1_000


def phase_refs_bytes(campaign: Campaign) -> int:
    """Validate And Plan's answer at most: its phases' refs, each listing every target placed on a site
    (counted whether or not the stack treats its region as home: the matrix alone does not tell)."""
    placed = sum(1 for target in campaign.targets if target.placement and (target.placement.site or target.placement.region))
    return len(passes(campaign)) * (PHASE_REF_BYTES + ON_SITE_INDEX_BYTES * placed)


def limit_problems(campaign: Campaign) -> list[Problem]:
    """What validates field by field but cannot run: a step's workers outgrowing an inline Map, a worker's
    step outgrowing its RunTask overrides, or the plan outgrowing the execution's Step Functions state."""
    problems = _fan_out_problems(campaign) + _overrides_problems(campaign) + _heartbeat_problems(campaign)
    if problems:
        return problems
    return _state_problems(campaign) + _history_problems(campaign)


def _fan_out_problems(campaign: Campaign) -> list[Problem]:
    problems = []
    for w in range(len(campaign.workloads)):
        # (workers, clients) of each run: a load or a cleanup has no clients and runs on one worker.
        runs = [(s.workload, s.clients) for s in step_shapes(campaign, Pass(w, 1)) if s.clients is not None]
        workers, clients = max((len(split_clients(c, run_workers(workload, c))), c) for workload, c in runs)
        if workers > MAX_STARTED_TOGETHER:
            # Only a per-worker cap can ask for that many: `workers` itself is bounded by the schema.
            problems.append(
                Problem(
                    path=f"$.workloads[{w}].run.max_clients_per_worker",
                    message=f"makes {workers} workers for {clients:,} clients, at most "
                    f"{MAX_STARTED_TOGETHER}: {FAN_OUT_REASON}; raise it to at least "
                    f"{-(-clients // MAX_STARTED_TOGETHER)}",
                )
            )
    return problems


def _heartbeat_problems(campaign: Campaign) -> list[Problem]:
    """A heartbeat timeout at or past a step's own timeout never fires first: a lost worker would be told
    only by the step's timeout, later and as a timeout. Run steps get a target's replica catch-up on top."""
    catch_up_s = min(max((r.catch_up_timeout_s for r in t.replicas), default=0) for t in campaign.targets)
    shortest, which = None, ""
    for workload in campaign.workloads:
        candidates = [(init_timeout_s(workload), "load"), (run_timeout_s(workload) + catch_up_s, "run")]
        if workload.cleans_up:
            candidates.append((INIT_TIMEOUT_BASE_S, "cleanup"))
        for timeout_s, kind in candidates:
            if shortest is None or timeout_s < shortest:
                shortest, which = timeout_s, f"workload {workload.name}'s {kind}"
    if shortest is None or campaign.heartbeat_timeout_s < shortest:
        return []
    return [
        Problem(
            path="$.heartbeat_timeout_s",
            message=f"{campaign.heartbeat_timeout_s} s is not shorter than the shortest step's timeout ({shortest} s, "
            f"{which}): a lost worker would be noticed only when its step times out; set it below {shortest}",
        )
    ]


def _encoded_chars(value: Any) -> int:
    """Characters a value takes in a RunTask override: JSON in a JSON string (quotes and newlines escaped)."""
    return len(json.dumps(json.dumps(value)))


def _overrides_problems(campaign: Campaign) -> list[Problem]:
    problems = []
    step_budget = RUNTASK_OVERRIDES_LIMIT_CHARS - RUNTASK_RESERVED_CHARS
    workload_chars = [_encoded_chars(w.model_dump(mode="json")) for w in campaign.workloads]
    target_chars = [
        _encoded_chars(t.model_dump(mode="json", include={"endpoint", "embedded", "placement", "replicas"}))
        for t in campaign.targets
    ]
    for w, (workload, chars) in enumerate(zip(campaign.workloads, workload_chars)):
        for t, target in enumerate(campaign.targets):
            total = chars + target_chars[t]
            if total <= step_budget:
                continue
            long_field = workload.long_field  # what makes the workload long, as its tool names it
            path = (
                (f"$.workloads[{w}].{long_field}" if long_field else f"$.workloads[{w}]")
                if chars >= target_chars[t]
                else f"$.targets[{t}]"
            )
            problems.append(
                Problem(
                    path=path,
                    message=f"workload {workload.name} on target {target.name} needs about {total:,} characters in each "
                    f"worker's ECS RunTask overrides, which hold {RUNTASK_OVERRIDES_LIMIT_CHARS:,} in all "
                    f"({step_budget:,} for the matrix's part): shorten it (custom scripts, client counts, replicas, placement)",
                )
            )
            break
    return problems


def _state_problems(campaign: Campaign) -> list[Problem]:
    """The execution's state carries the plan's refs only (pgarena.model.plan.PlanRef, PreflightRef; the
    plan lives in the bucket): what grows is the phase list and one target's steps in one phase."""
    problems = []
    budget = STATE_LIMIT_BYTES - STATE_RESERVED_BYTES
    size = len(campaign.model_dump_json(exclude_none=True))
    if size > STATE_LIMIT_BYTES:
        problems.append(
            Problem(
                path="$",
                message=f"the matrix is {size:,} bytes and is the execution's input, which Step Functions' StartExecution "
                f"accepts up to {STATE_LIMIT_BYTES:,} bytes (256 KiB): fewer targets or workloads, shorter custom scripts",
            )
        )
    else:
        # Measured only on a matrix that can start: counting the steps of a larger one costs time without bound.
        problems += _plan_problems(campaign, budget)
    if len(campaign.targets) > MAX_MAP_ITEMS:
        problems.append(
            Problem(
                path="$.targets",
                message=f"{len(campaign.targets):,} targets: a phase's targets are listed by States.ArrayRange, which makes "
                f"at most {MAX_MAP_ITEMS:,} items; split the campaign",
            )
        )
    return problems


def _plan_problems(campaign: Campaign, budget: int) -> list[Problem]:
    problems = []
    phases = passes(campaign)
    if (refs_bytes := phase_refs_bytes(campaign)) > budget:
        problems.append(
            Problem(
                path="$.repetitions",
                message=f"{len(phases):,} phases (one per workload and repetition) make Validate And Plan's answer about "
                f"{refs_bytes // 1024:,} KB, and a state in Step Functions holds {STATE_LIMIT_BYTES // 1024} KB "
                f"({STATE_RESERVED_BYTES // 1000} KB kept for failure messages): fewer repetitions or workloads, or split the campaign",
            )
        )
    # Every target of a phase runs the same steps; a step's shards are indices made in the state machine,
    # never listed in its state, so steps are counted before sharding.
    steps = max(sum(1 for _ in step_shapes(campaign, selected)) for selected in set(phases))
    if steps * STEP_REF_BYTES > budget:
        problems.append(
            Problem(
                path="$.workloads",
                message=f"{steps:,} steps of one target in one phase make Preflight Target's answer about "
                f"{steps * STEP_REF_BYTES // 1024:,} KB, and a state in Step Functions holds {STATE_LIMIT_BYTES // 1024} KB "
                f"({STATE_RESERVED_BYTES // 1000} KB kept for failure messages): fewer client counts or workloads, "
                "repetitions > 1 (one phase per workload and repetition), or split the campaign",
            )
        )
    return problems


def _history_problems(campaign: Campaign) -> list[Problem]:
    """An execution's history holds 25,000 events (pgarena.planning.history): past it the execution fails
    mid-campaign, so the campaign is refused before it starts, naming the workload whose workers cost most."""
    count = count_history(campaign)
    if count.events <= count.budget:
        return []
    w = max(range(len(campaign.workloads)), key=lambda i: count.shard_events_by_workload[campaign.workloads[i].name])
    name = campaign.workloads[w].name
    fits = max_workers_within(campaign, w, count)
    lever = f"at most {fits} workers per run for workload {name}, " if count.shard_events_by_workload[name] and fits else ""
    return [
        Problem(
            path=f"$.workloads[{w}].run.workers" if lever else "$",
            message=f"the campaign's execution would write about {count.events:,} events ({count.shards:,} worker tasks in "
            f"{count.steps:,} steps) to its Step Functions history, which holds {HISTORY_LIMIT_EVENTS:,} "
            f"({HISTORY_RESERVE_EVENTS:,} kept for retries and failures): {lever}fewer targets, client counts or "
            "repetitions, or split the campaign (for example one campaign per repetition)",
        )
    ]
