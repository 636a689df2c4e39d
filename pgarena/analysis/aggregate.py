"""Aggregation: the plan, the state machine's outcomes and the workers' summaries become results.json. Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from statistics import median
from typing import TypedDict

from pgarena.analysis.catch_up import replication_result
from pgarena.analysis.computed import compute
from pgarena.analysis.consolidation import consolidation_tables
from pgarena.analysis.footing import site, worker_size
from pgarena.analysis.latency_intervals import interval_length
from pgarena.analysis.merge import NoCommonWindow, merge, run_intervals
from pgarena.analysis.metrics import merge_point_latencies
from pgarena.analysis.mix import consistency_incident, merged_mix
from pgarena.analysis.rate import rate_incident, skipped_incident
from pgarena.analysis.saturation import saturation_incident
from pgarena.model import layout
from pgarena.model.errors import Caught, ErrorInfo, ErrorKind, error_info
from pgarena.model.managed_metrics import ManagedMetrics
from pgarena.model.metrics import PointMetrics, RunHistograms, TargetMetrics
from pgarena.model.monitor import ConnectionReport, Incident
from pgarena.model.outcomes import StepOutcome, TargetOutcome
from pgarena.model.plan import Plan, PlannedTarget, Step
from pgarena.model.replication import ReplicationResult
from pgarena.model.results import (
    CampaignResults,
    HarnessCost,
    LoadResult,
    ReplicationPoint,
    Scenarios,
    ShardResult,
    Status,
    StepSummary,
    TargetResult,
    WorkerFacts,
    WorkloadResult,
)
from pgarena.model.series import ShardSeries
from pgarena.model.server_counters import ServerCounters
from pgarena.model.slo import SloSearch
from pgarena.model.tool_figures import ToolFigures


def merge_phases(outcomes: list[TargetOutcome]) -> dict[str, TargetOutcome]:
    """One outcome per target: its steps from every phase, the server as its last phase found it, and the
    first failure (a target that failed in one phase has that phase's steps not run)."""
    merged: dict[str, TargetOutcome] = {}
    for outcome in outcomes:
        seen = merged.get(outcome.name)
        merged[outcome.name] = (
            outcome
            if seen is None
            else seen.model_copy(
                update={
                    "steps": [*seen.steps, *outcome.steps],
                    "server": outcome.server or seen.server,
                    "failure": seen.failure or outcome.failure,
                }
            )
        )
    return merged


MISSING = ErrorInfo(kind=ErrorKind.MISSING_RESULT, message="the step reported success but wrote no summary")
NOT_RUN = ErrorInfo(kind=ErrorKind.NOT_RUN, message="the step did not run because the target failed before it")


def _relative(campaign_id: str, keys: list[str]) -> list[str]:
    return [layout.relative(campaign_id, k) for k in keys]


def _connections(campaign_id: str, summary: StepSummary | None) -> ConnectionReport | None:
    if summary is None or summary.connections is None:
        return None
    report = summary.connections
    return report.model_copy(update={"raw": _relative(campaign_id, [report.raw])[0] if report.raw else None})


def _server_counters(campaign_id: str, summary: StepSummary | None) -> ServerCounters | None:
    """The run's counter deltas, their snapshots' key relative to the campaign folder."""
    if summary is None or summary.server_counters is None:
        return None
    counters = summary.server_counters
    return counters.model_copy(update={"raw": _relative(campaign_id, [counters.raw])[0] if counters.raw else None})


def _managed(campaign_id: str, metrics: ManagedMetrics | None) -> ManagedMetrics | None:
    """A run's managed metrics, their kept answer's key relative to the campaign folder."""
    if metrics is None or metrics.raw is None:
        return metrics
    return metrics.model_copy(update={"raw": _relative(campaign_id, [metrics.raw])[0]})


def _replication(campaign_id: str, summary: StepSummary | None) -> ReplicationResult | None:
    if summary is None or summary.replication is None:
        return None
    raw = _relative(campaign_id, [summary.replication.raw])[0] if summary.replication.raw else None
    return replication_result(summary.replication.replicas, summary.replication.transactions, summary.replication.run_s, raw)


def _slo(campaign_id: str, summary: StepSummary | None) -> SloSearch | None:
    """The SLO search with its probes' raw output as paths in the campaign folder."""
    if summary is None or summary.slo is None:
        return None
    curve = [p.model_copy(update={"raw": _relative(campaign_id, p.raw)}) for p in summary.slo.curve]
    return summary.slo.model_copy(update={"curve": curve})


def interval_s_of(step: Step) -> int:
    """A run's latency intervals' length: its tool's progress interval, widened for a long run."""
    return interval_length(step.spec.progress_interval_s, step.spec.duration_s)


def run_histograms(step: Step, histogram: str | None, series: ShardSeries | None) -> RunHistograms | None:
    """A one-worker run's whole histogram and per-interval ones (from its per-second series), for its point's
    merged latency; None when the run kept no histogram or no series (sysbench, a log not read)."""
    if histogram is None or series is None:
        return None
    interval_s = interval_s_of(step)
    return RunHistograms(histogram=histogram, interval_s=interval_s, intervals=run_intervals([series], interval_s))


def _run_series(series: Mapping[str, ShardSeries], step_id: str) -> ShardSeries | None:
    """A one-worker run's series (every run of a tool with a transaction log keeps one), read once; None when it has none."""
    try:
        return series[step_id]
    except KeyError:
        return None


def _step_error(step: Step, outcome: StepOutcome | None, summary: StepSummary | None) -> ErrorInfo | None:
    if summary is not None:
        return summary.error
    if outcome is None:
        return NOT_RUN
    if not outcome.failure:
        return MISSING
    return error_info(Caught(outcome.failure, worker_timeouts_s=(step.heartbeat_timeout_s, step.timeout_s)))


def _shard_ids(step_id: str, summaries: dict[str, StepSummary], outcomes: dict[str, StepOutcome]) -> list[str]:
    """Ids of the step's shards (step_id/s0, step_id/s1, ...) known from summaries or outcomes."""
    pattern = re.compile(re.escape(step_id) + r"/s(\d+)$")
    found = {i for i in [*summaries, *outcomes] if pattern.match(i)}
    return sorted(found, key=lambda i: int(i.rsplit("/s", 1)[1]))


class _ShardedCommon(TypedDict):
    """The fields a sharded step's result has whether it succeeded or not."""

    name: str
    tool: str
    repetition: int
    shards: list[ShardResult]
    phase: int | None
    raw: list[str]
    harness: HarnessCost | None


def _sharded_result(  # noqa: PLR0913  # a step's planned shards, their outcomes, summaries and series
    step: Step,
    shard_ids: list[str],
    outcomes: dict[str, StepOutcome],
    summaries: dict[str, StepSummary],
    campaign_id: str,
    series: Mapping[str, ShardSeries],
) -> WorkloadResult:
    """One result for a step run by several workers, merged over the window when all of them ran."""
    shards: list[ShardResult] = []
    ran: list[tuple[StepSummary, ShardSeries]] = []
    for shard_id in shard_ids:
        summary = summaries.get(shard_id)
        error = _step_error(step, outcomes.get(shard_id), summary)
        ok = summary is not None and summary.status == "succeeded" and shard_id in series
        shards.append(
            ShardResult(
                step_id=shard_id,
                clients=summary.clients if summary else None,
                status="succeeded" if ok else "failed",
                tps=summary.tps if summary else None,
                transactions=summary.transactions if summary else None,
                barrier=summary.barrier if summary else None,
                raw=_relative(campaign_id, summary.raw if summary else []),
                error=None if ok else (error or MISSING),
            )
        )
        if ok and summary is not None:
            ran.append((summary, series[shard_id]))
    requested = step.clients
    common = _ShardedCommon(
        name=step.workload,
        tool=step.tool,
        repetition=step.repetition,
        shards=shards,
        phase=step.phase,
        raw=[path for s in shards for path in s.raw],
        harness=total_cost([summaries[i].harness for i in shard_ids if i in summaries]),
    )
    failed = [s for s in shards if s.status == "failed"]
    if not ran:
        return WorkloadResult(clients=step.clients, status="failed", error=failed[0].error, **common)
    try:
        merged = merge([s for _, s in ran], interval_s_of(step))
    except NoCommonWindow as why:
        return WorkloadResult(
            clients=step.clients, status="failed", error=ErrorInfo(kind=ErrorKind.NO_COMMON_WINDOW, message=str(why)), **common
        )
    covered = sum(summary.clients or 0 for summary, _ in ran)
    degraded = None
    if failed:
        reasons = "; ".join(f"{s.step_id}: {s.error.kind}: {s.error.message}" for s in failed if s.error is not None)
        degraded = ErrorInfo(
            kind=ErrorKind.DEGRADED, message=f"covers {covered} of {requested} clients; failed shards: {reasons}"
        )
    clamped_from = next((s.requested_clients for s, _ in ran if s.requested_clients), None)
    # The first shard timed the replicas' catch-up; the merged window's transactions are what they replicated.
    replication = _replication(campaign_id, summaries.get(shard_ids[0]))
    if replication is not None:
        replication = replication_result(replication.replicas, merged.transactions, merged.window_s, replication.raw)
    mix = merged_mix([s.tool_figures for s, _ in ran])
    checked = consistency_incident(mix.consistency, merged.progress[-1].elapsed_s if merged.progress else 0.0)
    return WorkloadResult(
        clients=covered,
        worker=next((s.worker for s, _ in ran if s.worker), None),
        requested_clients=(clamped_from or requested) if (failed or clamped_from) else None,
        status="succeeded",
        tps=round(merged.tps, 6),
        latency_ms=merged.latency,
        transactions=merged.transactions,
        failed_transactions=merged.failed_transactions,
        progress=merged.progress,
        warmup_s=ran[0][0].warmup_s,  # as the workers recorded it
        start_skew_s=merged.start_skew_s,
        window_s=merged.window_s,
        degraded=bool(failed),
        # A shard whose load generator ran out of CPU held the merged figure down with it.
        incidents=[
            *(i for shard, _ in ran if (i := saturation_incident(shard.worker, shard.harness)) is not None),
            *([checked] if checked is not None else []),
        ],
        tool_figures=mix,
        replication=replication,
        server_counters=_server_counters(campaign_id, summaries.get(shard_ids[0])),  # the first shard reads them
        error=degraded,
        **common,
    ).with_histograms(RunHistograms(histogram=merged.histogram, interval_s=interval_s_of(step), intervals=merged.intervals))


def total_cost(costs: list[HarnessCost | None]) -> HarnessCost | None:
    """Several workers' costs as one: times and CPU-seconds summed (what was spent), the largest peak RSS."""
    known = [c for c in costs if c is not None]
    if not known:
        return None
    peaks = [c.peak_rss_mib for c in known if c.peak_rss_mib is not None]
    return HarnessCost(
        wall_s=round(sum(c.wall_s for c in known), 3),
        cpu_s=round(sum(c.cpu_s for c in known), 3),
        tool_cpu_s=round(sum(c.tool_cpu_s for c in known), 3),
        log_processing_s=round(sum(c.log_processing_s for c in known), 3),
        peak_rss_mib=max(peaks) if peaks else None,
    )


_SHARD = re.compile(r"/s(\d+)$")
_PHASE = re.compile(r"(?:^|/)(p\d+)/")


def worker_changes(summaries: Iterable[StepSummary]) -> list[str]:
    """Where one slot's steps (a repetition's, or a sweep phase's, on one shard index) ran on more than
    one worker: a warm worker serves them all, so another one means its worker was lost and replaced,
    and the client side may have changed between the points of the sweep."""
    slots: dict[tuple[str, int, str, str], list[StepSummary]] = {}
    for summary in summaries:
        if summary.worker is None or summary.worker.worker_id is None:
            continue
        shard_of, phase_of = _SHARD.search(summary.step_id), _PHASE.search(summary.step_id)
        key = (
            summary.workload,
            summary.repetition,
            phase_of.group(1) if phase_of else "",
            shard_of.group(1) if shard_of else "0",
        )
        slots.setdefault(key, []).append(summary)
    changes = []
    for (workload, repetition, phase, shard), steps in sorted(slots.items()):
        workers = {s.worker.worker_id for s in steps if s.worker}
        if len(workers) > 1:
            cpus = sorted({s.worker.cpu_model or "unknown CPU" for s in steps if s.worker})
            where = (
                f"{workload} repetition {repetition}"
                + (f" {phase}" if phase else "")
                + (f" shard {shard}" if shard != "0" else "")
            )
            changes.append(f"{where}: {len(steps)} steps on {len(workers)} workers ({', '.join(cpus)})")
    return changes


def median_rtt_ms(workers: list[WorkerFacts | None]) -> float | None:
    """The target's round trip: the median of its workers' medians (each of 20 `select 1`)."""
    rtts = [w.rtt_ms for w in workers if w is not None and w.rtt_ms is not None]
    return round(median(rtts), 3) if rtts else None


def _run_incidents(step: Step, summary: StepSummary | None) -> list[Incident]:
    if summary is None:
        return []
    skipped = summary.tool_figures.skipped_transactions
    at_s = summary.progress[-1].elapsed_s if summary.progress else 0.0
    incidents = [
        rate_incident(step.spec.rate_tps, summary.tps, summary.progress, summary.transactions, skipped),
        skipped_incident(summary.transactions, skipped, at_s),
        saturation_incident(summary.worker, summary.harness),
        consistency_incident(summary.tool_figures.consistency, at_s),
    ]
    return [i for i in incidents if i is not None]


def _target_result(  # noqa: PLR0913  # a target's plan, outcome, summaries, series and raw keys
    planned: PlannedTarget,
    outcome: TargetOutcome | None,
    summaries: dict[str, StepSummary],
    campaign_id: str,
    series: Mapping[str, ShardSeries],
    raw_keys: frozenset[str] = frozenset(),
    managed: Mapping[str, ManagedMetrics] | None = None,
) -> TargetResult:
    step_outcomes = {s.step_id: s for s in (outcome.steps if outcome else [])}
    loads: list[LoadResult] = []
    workloads: list[WorkloadResult] = []
    errors: list[ErrorInfo] = []
    for step in planned.steps:
        summary = summaries.get(step.step_id)
        shard_ids = _shard_ids(step.step_id, summaries, step_outcomes)
        if shard_ids:
            result = _sharded_result(step, shard_ids, step_outcomes, summaries, campaign_id, series)
            result = result.model_copy(update={"managed_metrics": _managed(campaign_id, (managed or {}).get(step.step_id))})
            if result.status == "failed" and result.error is not None:
                errors.append(result.error)
            workloads.append(result)
            continue
        error = _step_error(step, step_outcomes.get(step.step_id), summary)
        status: Status = "succeeded" if summary is not None and summary.status == "succeeded" else "failed"
        # A worker that died wrote no summary, but the chunks it uploaded while the tool ran are kept.
        kept = summary.raw if summary else sorted(k for k in raw_keys if k.startswith(f"{step.raw_prefix}/"))
        if status == "failed":
            error = error or MISSING
            if error.raw is None and kept:
                error = error.model_copy(update={"raw": kept[0]})
            errors.append(error)
        raw = _relative(campaign_id, kept)
        if step.kind in ("init", "cleanup"):
            loads.append(
                LoadResult(
                    workload=step.workload,
                    kind=step.kind,
                    status=status,
                    seconds=summary.load_s if summary else None,
                    phases_s=summary.load_phases_s if summary else {},
                    phase=step.phase,
                    raw=raw,
                    error=error if status == "failed" else None,
                    connections=_connections(campaign_id, summary),
                )
            )
            continue
        workloads.append(
            WorkloadResult(
                name=step.workload,
                tool=step.tool,
                clients=summary.clients if summary else step.clients,
                requested_clients=summary.requested_clients if summary else None,
                repetition=step.repetition,
                status=status,
                tps=summary.tps if summary else None,
                latency_ms=summary.latency_ms if summary else WorkloadResult.model_fields["latency_ms"].default,
                transactions=summary.transactions if summary else None,
                failed_transactions=summary.failed_transactions if summary else None,
                progress=summary.progress if summary else [],
                # As the worker recorded it; a step that left no summary has its record's.
                warmup_s=summary.warmup_s if summary else step.spec.warmup_s,
                tool_figures=summary.tool_figures if summary else ToolFigures(),
                connections=_connections(campaign_id, summary),
                server_counters=_server_counters(campaign_id, summary),
                managed_metrics=_managed(campaign_id, (managed or {}).get(step.step_id)),
                replication=_replication(campaign_id, summary),
                phase=step.phase,
                barrier=summary.barrier if summary else None,
                rate_tps=step.spec.rate_tps,
                incidents=_run_incidents(step, summary) if status == "succeeded" else [],
                worker=summary.worker if summary else None,
                harness=summary.harness if summary else None,
                slo=_slo(campaign_id, summary),
                raw=raw,
                error=error if status == "failed" else None,
            ).with_histograms(
                run_histograms(step, summary.latency_histogram, _run_series(series, step.step_id))
                if summary is not None and status == "succeeded"
                else None
            )
        )
    target_error = (
        (error_info(Caught(outcome.failure)) if outcome.failure else None)
        if outcome
        else ErrorInfo(kind=ErrorKind.NOT_RUN, message="the state machine returned no outcome for this target")
    )
    if target_error is not None and target_error.raw is None and outcome is not None and outcome.failure:
        # Failed before any worker ran (preflight): its record of the target is the evidence.
        evidence = layout.evidence_key(campaign_id, planned.name)
        if evidence in raw_keys:
            target_error = target_error.model_copy(update={"raw": evidence})
    if target_error is None and errors:
        target_error = errors[0]
    workers = [s.worker for s in summaries.values() if s.target == planned.name]
    return TargetResult(
        name=planned.name,
        provider=planned.provider,
        status="failed" if target_error else "succeeded",
        error=target_error,
        server=outcome.server if outcome else None,
        hourly_cost_usd=planned.hourly_cost_usd,
        rtt_ms=median_rtt_ms(workers),
        site=site(planned.placement, workers),
        worker_size=worker_size(workers),
        worker_changes=worker_changes(s for s in summaries.values() if s.target == planned.name),
        harness=total_cost([s.harness for s in summaries.values() if s.target == planned.name]),
        loads=loads,
        workloads=workloads,
    )


def aggregate(  # noqa: PLR0913  # everything a campaign left behind, in separate pieces
    plan: Plan,
    outcomes: list[TargetOutcome],
    summaries: list[StepSummary],
    started_at: str,
    finished_at: str,
    refusal: ErrorInfo | None = None,
    series: Mapping[str, ShardSeries] | None = None,
    raw_keys: Iterable[str] = (),
    managed: Mapping[str, ManagedMetrics] | None = None,
) -> CampaignResults:
    """`refusal`: the campaign was refused before any target ran (the cost guard); every target fails with it.
    `managed`: each run's managed metrics (CloudWatch) by step id, as finalize read them."""
    if refusal is not None:
        cause = json.dumps({"errorType": refusal.kind, "errorMessage": refusal.message})
        outcomes = [TargetOutcome(name=t.name, failure={"Error": refusal.kind, "Cause": cause}) for t in plan.targets]
    by_name = merge_phases(outcomes)
    by_step = {s.step_id: s for s in summaries}
    keys = frozenset(raw_keys)
    results = [
        merge_point_latencies(_target_result(t, by_name.get(t.name), by_step, plan.campaign_id, series or {}, keys, managed))
        for t in plan.targets
    ]
    computed = compute(results, plan.campaign_id, plan.ranking, plan.repetitions, design=plan.design)
    return computed.results(
        campaign_id=plan.campaign_id,
        campaign=plan.campaign,
        started_at=started_at,
        finished_at=finished_at,
        scenarios=scenarios(plan, computed.targets, computed.metrics),
        run_order=plan.run_order,
    )


def _replication_point(p: PointMetrics) -> ReplicationPoint:
    return ReplicationPoint(
        target=p.target,
        workload=p.workload,
        clients=p.clients,
        runs=p.runs,
        tps=p.tps,
        catch_up_s=p.catch_up_s,
        sustainable_tps=p.sustainable_tps,
        caught_up=p.catch_up_s is not None,
        peak_lag_bytes=p.peak_lag_bytes,
    )


def scenarios(plan: Plan, targets: list[TargetResult], metrics: list[TargetMetrics]) -> Scenarios | None:
    """The consolidation tables (a phased plan) and the sustainable throughput per point (targets with
    replicas); None when the campaign is neither."""
    consolidation = []
    sweep = plan.scenario.consolidation if plan.scenario else None
    if sweep is not None:  # plan.phased
        phases = [(p.phase, [t.name for t in p.targets]) for p in plan.phases]
        consolidation = consolidation_tables(phases, targets, sweep.threshold)
    replication = [_replication_point(p) for m in metrics for p in m.points if p.replicated]
    if not consolidation and not replication:
        return None
    return Scenarios(consolidation=consolidation, replication=replication)
