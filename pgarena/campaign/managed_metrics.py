"""Finalize's read of the managed metrics: for each target that names its DB instance (`cloudwatch`), CloudWatch's
instance metrics over each of its runs' measured windows, the answer kept beside the step's raw output and
summarized (pgarena.model.managed_metrics).

Read at the campaign's end, not by the step's worker: CloudWatch publishes a minute's datapoint a minute or
more later, so the end of a step is too early for its last minutes; and one role (the finalizing function's)
holds cloudwatch:GetMetricData instead of every worker's on every site. Optional all the way: a target
without `cloudwatch` reads nothing, and a read refused or failed is the run's note, never the campaign's
failure (the remaining runs of that target are not tried: the same role or instance would refuse them too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from pgarena.campaign.ports import MetricReads, Store
from pgarena.model import layout
from pgarena.model.managed_metrics import (
    PERIOD_S,
    ManagedMetrics,
    MetricsNote,
    MetricsReadFailed,
    measured_window,
    metric_queries,
    query_window,
    summarize,
)
from pgarena.model.plan import Plan, PlannedTarget
from pgarena.model.results import StepSummary

_SHARD = re.compile(r"^(?P<step>.+)/s\d+$")


def by_run(summaries: list[StepSummary]) -> dict[str, list[StepSummary]]:
    """The summaries of each step: its own, or its shards' (`<step>/s<i>`)."""
    runs: dict[str, list[StepSummary]] = {}
    for summary in summaries:
        shard = _SHARD.match(summary.step_id)
        runs.setdefault(shard["step"] if shard else summary.step_id, []).append(summary)
    return runs


def run_window(parts: list[StepSummary]) -> tuple[datetime, datetime] | None:
    """The measured window of a run from its summaries: its own, or its shards' together (the earliest start
    past the warm-up, the latest end); None when no worker of it wrote a summary."""
    if not parts:
        return None
    windows = [measured_window(s.started_at, s.finished_at, s.warmup_s) for s in parts]
    return min(w[0] for w in windows), max(w[1] for w in windows)


def _region(target: PlannedTarget) -> str | None:
    assert target.cloudwatch is not None
    return target.cloudwatch.region or (target.placement.region if target.placement else None)


def _frame(instance: str, region: str | None, window: tuple[datetime, datetime]) -> ManagedMetrics:
    """A run's read before its answer: the instance, the window and the window as asked (whole periods)."""
    start, end = query_window(*window)
    return ManagedMetrics(
        instance=instance,
        region=region,
        window_start=window[0].isoformat(timespec="milliseconds"),
        window_end=window[1].isoformat(timespec="milliseconds"),
        query_start=start.isoformat(),
        query_end=end.isoformat(),
        period_s=PERIOD_S,
    )


def _read(reads: MetricReads, store: Store, frame: ManagedMetrics, key: str) -> ManagedMetrics:
    """One run's read: the answer kept at `key`, then summarized."""
    queries = metric_queries(frame.instance)
    start, end = datetime.fromisoformat(frame.query_start), datetime.fromisoformat(frame.query_end)
    answer = reads.metric_data(frame.region, queries, start, end)
    request = {"region": frame.region, "StartTime": frame.query_start, "EndTime": frame.query_end, "MetricDataQueries": queries}
    raw = store.put_json(key, {"request": request, "answer": answer})
    metrics = summarize(answer)
    note = None
    if not metrics:
        note = MetricsNote(
            kind="no_datapoints",
            message=f"CloudWatch had no datapoints for DB instance {frame.instance} from {frame.query_start} to "
            f"{frame.query_end} (region {frame.region or 'home'}): is that the instance's identifier and region?",
        )
    return frame.model_copy(update={"metrics": metrics, "note": note, "raw": raw})


def _target_metrics(
    target: PlannedTarget, campaign_id: str, runs: Mapping[str, list[StepSummary]], reads: MetricReads, store: Store
) -> dict[str, ManagedMetrics]:
    assert target.cloudwatch is not None
    instance, region = target.cloudwatch.instance, _region(target)
    found: dict[str, ManagedMetrics] = {}
    earlier: MetricsNote | None = None  # the first refusal or failure: the target's later runs are not tried
    for step in target.steps:
        window = run_window(runs.get(step.step_id, [])) if step.kind == "run" else None
        if window is None:
            continue
        frame = _frame(instance, region, window)
        if earlier is not None:
            note = MetricsNote(kind="not_read", message=f"not read: an earlier read was {earlier.kind}: {earlier.message}")
            found[step.step_id] = frame.model_copy(update={"note": note})
            continue
        try:
            found[step.step_id] = _read(reads, store, frame, layout.managed_metrics_key(campaign_id, step.step_id))
        except MetricsReadFailed as error:
            earlier = MetricsNote(kind="denied" if error.denied else "failed", message=str(error))
        except Exception as error:  # whatever it is, the campaign's results come first
            earlier = MetricsNote(kind="failed", message=f"{type(error).__name__}: {error}")
        if earlier is not None and step.step_id not in found:
            found[step.step_id] = frame.model_copy(update={"note": earlier})
    return found


def read_managed_metrics(plan: Plan, summaries: list[StepSummary], reads: MetricReads, store: Store) -> dict[str, ManagedMetrics]:
    """Each run's managed metrics by its step id, for the targets that name their instance (none else)."""
    runs = by_run(summaries)
    found: dict[str, ManagedMetrics] = {}
    for target in plan.targets:
        if target.cloudwatch is not None:
            found.update(_target_metrics(target, plan.campaign_id, runs, reads, store))
    return found
