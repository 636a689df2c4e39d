"""What a campaign asks of AWS's limits, as `pgarena estimate` prints it beside the cost. Pure functions.

Validation refuses what passes a limit (pgarena.planning.limits); this says how close an accepted
campaign comes: its history events, its largest state, its plan in the bucket, its largest step record
and what aggregating it holds in memory at once.
"""

from __future__ import annotations

from pydantic import BaseModel

from pgarena.model.matrix import Campaign
from pgarena.planning.cost import endpoint_plan
from pgarena.planning.history import HISTORY_LIMIT_EVENTS, count_history
from pgarena.planning.limits import STATE_LIMIT_BYTES, STEP_REF_BYTES, phase_refs_bytes
from pgarena.planning.planner import passes, step_shapes
from pgarena.planning.shards import run_workers, split_clients

# The Aggregate and Finalize Stopped functions' memory (cdk/pgarena_cdk/constants.py; a test keeps them equal).
AGGREGATE_MEMORY_MIB = 1024
# A shard's per-second histograms once parsed: ~1.9 KB a second at 2,000 tps (bench/limits.py measured
# 98 MiB streamed against 206 MiB eager for 1,920 shards of 30 s: 56 KB each).
SERIES_PARSED_BYTES_PER_S = 1_900
# One progress sample in JSON: what a summary's item held per progress_s before it moved to the bucket.
PROGRESS_SAMPLE_BYTES = 60
DYNAMODB_ITEM_LIMIT_BYTES = 400_000


class Footprint(BaseModel):
    history_events: int
    largest_state_bytes: int
    plan_bytes: int
    largest_progress_samples: int
    shards_per_step: int
    aggregation_series_bytes: int  # the largest step's shards' series, parsed: what aggregation holds at once


def footprint(campaign: Campaign) -> Footprint:
    steps = max(sum(1 for _ in step_shapes(campaign, selected)) for selected in set(passes(campaign)))
    shards, samples, series = 1, 0, 0
    for workload in campaign.workloads:
        seconds = workload.run_s or 0
        run = getattr(workload, "run", None)  # each tool names its progress interval its own way
        progress_s = getattr(run, "progress_s", None) or getattr(run, "report_interval_s", None) or 1
        samples = max(samples, seconds // progress_s * workload.step_spec("run").tool_runs)
        for clients in workload.client_counts:
            k = len(split_clients(clients, run_workers(workload, clients)))
            shards = max(shards, k)
            if k > 1:
                series = max(series, k * seconds * SERIES_PARSED_BYTES_PER_S)
    return Footprint(
        history_events=count_history(campaign).events,
        largest_state_bytes=max(phase_refs_bytes(campaign), steps * STEP_REF_BYTES),
        plan_bytes=len(endpoint_plan(campaign).model_dump_json()),  # embedded targets priced as endpoints
        largest_progress_samples=samples,
        shards_per_step=shards,
        aggregation_series_bytes=series,
    )


def _mb(size: float) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size / 1e3:,.1f} KB"


def format_footprint(figures: Footprint) -> list[str]:
    """The lines `pgarena estimate` prints under the cost: each figure against its limit."""
    return [
        "AWS limits:",
        f"  history events      {figures.history_events:,} of {HISTORY_LIMIT_EVENTS:,} (Step Functions execution history)",
        f"  largest state       {_mb(figures.largest_state_bytes)} of {STATE_LIMIT_BYTES // 1024} KiB "
        "(the states carry refs; the plan is in the bucket)",
        f"  plan.json           {_mb(figures.plan_bytes)} in the results bucket",
        f"  step record         progress series of up to {figures.largest_progress_samples:,} samples "
        f"(~{_mb(figures.largest_progress_samples * PROGRESS_SAMPLE_BYTES)}) in the bucket; the DynamoDB item "
        f"({DYNAMODB_ITEM_LIMIT_BYTES // 1000} KB limit) keeps a pointer",
        f"  aggregation memory  one step's shards at a time: {figures.shards_per_step} x series, "
        f"~{_mb(figures.aggregation_series_bytes)} at 2,000 tps, of the Aggregate function's {AGGREGATE_MEMORY_MIB:,} MB",
    ]
