"""Metrics: what each target did on each workload point, computed from results.json alone. Pure.

A *point* is one target x workload x client count, over its repetitions. Per point: throughput,
latency, error and retry rates, stability over the run (from pgbench's per-interval progress
lines) and cost efficiency. Per target and workload with a client sweep: the scaling curve
against ideal linear scaling and a Universal Scalability Law fit.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean, median, pstdev, stdev
from typing import Literal, TypedDict, TypeVar

from pgarena.analysis.intervals import METHOD, SINGLE_RUN_NOTE, interval
from pgarena.analysis.latency_intervals import point_latency
from pgarena.analysis.rate import RATE_NOT_SUSTAINED
from pgarena.analysis.saturation import CLIENT_SATURATED
from pgarena.model import layout
from pgarena.model.figures import Interval, Latency, UslFit, usl
from pgarena.model.metrics import (
    Finding,
    PointLatency,
    PointMetrics,
    Scaling,
    ScalingPoint,
    Stability,
    TargetMetrics,
    TypeLatency,
)
from pgarena.model.monitor import Incident
from pgarena.model.results import CampaignResults, LoadResult, ProgressSample, Statistics, TargetResult, WorkloadResult
from pgarena.model.tool_figures import ToolFigures, TransactionType

N = TypeVar("N", int, float)

# An interval below this fraction of the median of the run's earlier intervals is a drop. A drop the run
# never climbs back from is a collapse (the Azure study's 457 -> 15 tps); one it recovers from, a stall.
TPS_COLLAPSE_FRACTION = 0.25
# A stall: no transaction for this long, or an interval under this fraction of the run's median tps
# (a frozen server, a lock held): the run measured an outage, so its point is not ranked as healthy.
STALL_ZERO_S = 5.0
STALL_FRACTION = 0.10
# The USL has three parameters (lambda, sigma, kappa): fewer points than that cannot pin them.
USL_MIN_POINTS = 3
# A scaling curve needs at least two client counts.
SCALING_MIN_POINTS = 2

# A load generator whose median `select 1` round trip exceeds this is not in the database's zone: every
# transaction pays the network, and a closed-loop benchmark measures the distance as much as the server.
FAR_RTT_MS = 2.0


class _Where(TypedDict):
    """Where a run's finding happened."""

    target: str
    workload: str
    clients: int | None
    repetition: int


# --- stability ---------------------------------------------------------------------------------


def _drops(series: list[ProgressSample]) -> list[Incident]:
    incidents: list[Incident] = []
    # The baseline is the median of the run's earlier healthy intervals, not their peak: a one-interval
    # spike (1229.7 tps among 250-350) would otherwise make an ordinary interval look like a collapse.
    # Earlier ones only, so a collapse that fills most of the run still stands out from what came before.
    healthy = [series[0].tps]
    i = 1
    while i < len(series):
        sample, baseline = series[i], median(healthy)
        floor = TPS_COLLAPSE_FRACTION * baseline
        if baseline > 0 and sample.tps < floor:
            recovered = next((j for j in range(i + 1, len(series)) if series[j].tps >= floor), None)
            after = [s.tps for s in series[i:recovered]]
            if recovered is None:
                incidents.append(
                    Incident(
                        kind="tps_collapse",
                        at_s=sample.elapsed_s,
                        message=f"tps fell from {baseline:,.1f} to {sample.tps:,.1f} at {sample.elapsed_s:g} s and never "
                        f"recovered (median {median(after):,.1f} tps over the last {len(after)} intervals; "
                        f"{baseline:,.1f} was the median of the {len(healthy)} interval(s) before)",
                    )
                )
                break
            incidents.append(
                Incident(
                    kind="tps_stall",
                    at_s=sample.elapsed_s,
                    message=f"tps fell from {baseline:,.1f} to {min(after):,.1f} at {sample.elapsed_s:g} s for "
                    f"{len(after)} interval(s), then recovered",
                )
            )
            i = recovered
            continue
        healthy.append(sample.tps)
        i += 1
    return incidents


def stall_incident(progress: list[ProgressSample]) -> Incident | None:
    """A `tps_stall` when the run made no transaction for STALL_ZERO_S or more, or an interval fell under
    STALL_FRACTION of the run's median tps; None for a run without one."""
    if len(progress) < 2:
        return None
    mid = median(s.tps for s in progress)
    zero_s, zero_from, longest, longest_from = 0.0, 0.0, 0.0, 0.0
    previous = 0.0
    for sample in progress:
        interval = sample.elapsed_s - previous
        previous = sample.elapsed_s
        if sample.tps > 0:
            zero_s = 0.0
            continue
        if zero_s == 0.0:
            zero_from = sample.elapsed_s - interval
        zero_s += interval
        if zero_s > longest:
            longest, longest_from = zero_s, zero_from
    if longest >= STALL_ZERO_S:
        return Incident(
            kind="tps_stall",
            at_s=longest_from,
            message=f"no transactions for {longest:g} s from {longest_from:g} s (median {mid:,.1f} tps): not ranked",
        )
    # A tool blocked as a whole (every client waiting on a frozen server) may print no line at all.
    steps = [b.elapsed_s - a.elapsed_s for a, b in zip(progress, progress[1:])]
    usual = median(steps)
    gap = max(zip(steps, progress[1:]), key=lambda pair: pair[0])
    if gap[0] >= max(STALL_ZERO_S, 3 * usual):
        return Incident(
            kind="tps_stall",
            at_s=gap[1].elapsed_s - gap[0],
            message=f"no progress reported for {gap[0]:g} s before {gap[1].elapsed_s:g} s (every {usual:g} s otherwise): not ranked",
        )
    low = [s for s in progress if mid > 0 and s.tps < STALL_FRACTION * mid]
    if low:
        worst = min(low, key=lambda s: s.tps)
        return Incident(
            kind="tps_stall",
            at_s=low[0].elapsed_s,
            message=f"{len(low)} interval(s) under {STALL_FRACTION:.0%} of the run's median {mid:,.1f} tps "
            f"(lowest {worst.tps:,.1f} at {worst.elapsed_s:g} s): not ranked",
        )
    return None


def stability(progress: list[ProgressSample]) -> Stability:
    """Coefficient of variation, worst interval vs median, and drops of one run's per-interval tps."""
    if len(progress) < 2:
        return Stability(intervals=len(progress))
    tps = [s.tps for s in progress]
    mean, mid, worst = fmean(tps), median(tps), min(tps)
    incidents = _drops(progress)
    collapsed = any(i.kind == "tps_collapse" for i in incidents)
    stall = None if collapsed else stall_incident(progress)
    if stall is not None:  # the stall's own account replaces the drop's: it says why the point is not ranked
        incidents = [*(i for i in incidents if i.kind != "tps_stall"), stall]
    return Stability(
        intervals=len(tps),
        cv=pstdev(tps) / mean if mean > 0 else None,
        median_tps=mid,
        worst_tps=worst,
        worst_vs_median=worst / mid if mid > 0 else None,
        incidents=incidents,
        stalled=stall is not None,
    )


def run_stability(run: WorkloadResult) -> Stability:
    """The run's stability as aggregation stored it; computed here only for a run built without it."""
    return run.stability if run.stability is not None else stability(run.progress)


def with_stability(target: TargetResult) -> TargetResult:
    """The target with each run's stability computed, once: results.json carries it per run."""
    runs = [w if w.stability is not None else w.model_copy(update={"stability": stability(w.progress)}) for w in target.workloads]
    return target.model_copy(update={"workloads": runs})


def _worst_stability(runs: list[Stability]) -> Stability:
    measured = [s for s in runs if s.cv is not None]
    if not measured:
        return max(runs, key=lambda s: s.intervals, default=Stability(intervals=0))
    worst = max(measured, key=lambda s: (s.collapsed, s.cv))
    return worst.model_copy(update={"incidents": [i for s in runs for i in s.incidents]})


# --- rates -------------------------------------------------------------------------------------


def error_rate(processed: int | None, failed: int | None) -> float | None:
    """Failed transactions over all attempted (processed + failed), as pgbench prints its percentage."""
    if processed is None or failed is None or processed + failed == 0:
        return None
    return failed / (processed + failed)


def retry_rate(processed: int | None, retried: float | None) -> float | None:
    if processed is None or retried is None or processed == 0:
        return None
    return retried / processed


def tps_per_usd_hour(tps: float | None, hourly_cost_usd: float | None) -> float | None:
    if tps is None or not hourly_cost_usd:
        return None
    return tps / hourly_cost_usd


def _sum(values: Sequence[N | None]) -> N | None:
    """The total when every value is known; None when any (or all) is missing."""
    known = [v for v in values if v is not None]
    return sum(known) if values and len(known) == len(values) else None


def _mean_of_all(values: Sequence[float | None]) -> float | None:
    """The mean when every value is known; None when any is missing."""
    known = [v for v in values if v is not None]
    return fmean(known) if known and len(known) == len(values) else None


def _mean_latency(runs: list[WorkloadResult]) -> Latency:
    fields: dict[str, float | None] = {}
    for name in Latency.model_fields:
        values = [getattr(w.latency_ms, name) for w in runs]
        known = [v for v in values if v is not None]
        fields[name] = fmean(known) if known and len(known) == len(values) else None
    return Latency(**fields)


def _latency_interval(runs: list[WorkloadResult], field: str) -> Interval | None:
    values = [getattr(w.latency_ms, field) for w in runs]
    return interval(values) if values and all(v is not None for v in values) else None


def retried_transactions(figures: ToolFigures) -> int | None:
    """Transactions the tool ran again: retried ones (pgbench 15+, --max-tries), else ignored errors, after
    each of which sysbench restarts the transaction."""
    return figures.retried if figures.retried is not None else figures.ignored_errors


def point_metrics(
    target: str, workload: str, clients: int | None, runs: list[WorkloadResult], hourly_cost_usd: float | None = None
) -> PointMetrics:
    """Aggregate a point's repetitions. Failed repetitions are counted, never averaged in."""
    ok = [w for w in runs if w.status == "succeeded" and w.tps is not None]
    tps_runs = [w.tps for w in ok if w.tps is not None]
    tps = fmean(tps_runs) if tps_runs else None
    processed = _sum([w.transactions for w in ok])
    retried = _sum([retried_transactions(w.tool_figures) for w in ok])
    qps = [q for w in ok if (q := w.tool_figures.qps) is not None]
    replicated = [w.replication for w in ok if w.replication is not None]
    caught_up = bool(replicated) and len(replicated) == len(ok) and all(r.caught_up for r in replicated)
    lags = [r.peak_lag_bytes for rep in replicated for r in rep.replicas if r.peak_lag_bytes is not None]
    stabilities = [run_stability(w) for w in ok]
    return PointMetrics(
        target=target,
        workload=workload,
        clients=clients,
        ran_clients=sorted({w.clients for w in runs if w.clients is not None}),
        clamped=any(is_clamped(w) for w in runs),
        runs=len(ok),
        failed_runs=len(runs) - len(ok),
        error_kinds=[w.error.kind for w in runs if w not in ok and w.error is not None],
        tps=tps,
        tps_stddev=stdev(tps_runs) if len(tps_runs) > 1 else None,
        tps_runs=tps_runs,
        tps_interval=interval(tps_runs),
        p95_interval=_latency_interval(ok, "p95"),
        p99_interval=_latency_interval(ok, "p99"),
        qps=fmean(qps) if qps and len(qps) == len(ok) else None,
        latency_ms=_mean_latency(ok) if ok else Latency(),
        error_rate=error_rate(processed, _sum([w.failed_transactions for w in ok])),
        retry_rate=retry_rate(processed, retried),
        stability=_worst_stability(stabilities),
        tps_per_usd_hour=tps_per_usd_hour(tps, hourly_cost_usd),
        sustainable_tps=_mean_of_all([r.sustainable_tps for r in replicated]) if caught_up else None,
        catch_up_s=_mean_of_all([r.catch_up_s for r in replicated]) if caught_up else None,
        replicated=bool(replicated),
        peak_lag_bytes=max(lags) if lags else None,
        rate_not_sustained=any(i.kind == RATE_NOT_SUSTAINED for w in ok for i in w.incidents),
        stalled=any(s.stalled for s in stabilities),
        client_saturated=any(i.kind == CLIENT_SATURATED for w in ok for i in w.incidents),
        warmup_s=max((w.warmup_s for w in runs if w.warmup_s), default=None),
        merged_latency=_merged_latency(ok),
        **_slo_fields(ok),
        **_mix_fields(ok),
    )


class _MixFields(TypedDict, total=False):
    nopm: float | None
    nopm_interval: Interval | None
    tpm: float | None
    rollbacks: int | None
    transaction_types: list[TypeLatency]
    consistency: Literal["passed", "failed", "not checked"] | None


def _consistency(figures: list[ToolFigures]) -> Literal["passed", "failed", "not checked"] | None:
    """The runs' data checks as one: failed in any run, passed in every run, else not checked in some."""
    checks = [f.consistency for f in figures]
    if all(c is None for c in checks):
        return None
    if any(c and not all(check.passed for check in c) for c in checks):
        return "failed"
    return "passed" if all(checks) else "not checked"


def _mix_fields(ok: list[WorkloadResult]) -> _MixFields:
    """A transaction mix's figures over a point's runs (TPROC-C): NOPM and TPM when every run has them, and
    each type's percentiles averaged over the runs that have it, as latency_ms's are."""
    figures = [w.tool_figures for w in ok]
    consistency = _consistency(figures)
    nopm = [n for f in figures if (n := f.new_orders_per_minute) is not None]
    if not nopm or len(nopm) != len(ok):
        return _MixFields(consistency=consistency) if consistency is not None else _MixFields()
    types: dict[str, list[TransactionType]] = defaultdict(list)
    for f in figures:
        for t in f.transaction_types or []:
            types[t.name].append(t)
    return _MixFields(
        nopm=fmean(nopm),
        nopm_interval=interval(nopm),
        tpm=_mean_of_all([f.transactions_per_minute for f in figures]),
        rollbacks=_sum([f.rollbacks for f in figures]),
        transaction_types=[
            TypeLatency(
                name=name,
                done=sum(t.done for t in runs),
                failed=sum(t.failed for t in runs),
                rolled_back=runs[0].rolled_back,
                latency_ms=Latency(
                    **{p: _mean_of_all([getattr(t.latency_ms, p) for t in runs]) for p in ("p50", "p95", "p99", "max")}
                ),
            )
            for name, runs in types.items()
        ],
        consistency=consistency or "not checked",
    )


def _merged_latency(ok: list[WorkloadResult]) -> PointLatency | None:
    """Every run's histograms merged, when every run kept them (a run read back from results.json has none), or
    the merge merge_point_latencies made of them already."""
    if ok and all(w.point_merged for w in ok):
        return ok[0].point_latency
    kept = [h for w in ok if (h := w.histograms) is not None]
    return point_latency(kept) if kept and len(kept) == len(ok) else None


def merge_point_latencies(target: TargetResult) -> TargetResult:
    """Each point's latency merged now from its runs' histograms, which are then let go: aggregation holds one
    target's histograms at a time, not the campaign's (tests/integration/test_aggregation_memory.py)."""
    for runs in point_runs(target).values():
        ok = [w for w in runs if w.status == "succeeded" and w.tps is not None]
        merged = _merged_latency(ok)
        for w in ok:
            w.with_point_latency(merged)
    return target


class _SloFields(TypedDict, total=False):
    slo: str
    slo_tps: float | None
    slo_tps_interval: Interval | None


def _slo_fields(ok: list[WorkloadResult]) -> _SloFields:
    """tps at SLO over a point's runs, when every run's search finished."""
    searches = [w.slo for w in ok if w.slo is not None]
    if not searches:
        return _SloFields()
    found = [s.slo_tps for s in searches if s.slo_tps is not None]
    complete = len(found) == len(ok)
    return _SloFields(
        slo=f"p{searches[0].percentile} <= {searches[0].limit_ms:g} ms",
        slo_tps=fmean(found) if complete else None,
        slo_tps_interval=interval(found) if complete else None,
    )


def latest_phase(runs: list[WorkloadResult]) -> list[WorkloadResult]:
    """A consolidation sweep's target ran in several phases: its figures are those of its last, where every
    target ran at once (the earlier phases are the sweep's own table). Other campaigns have one phase."""
    phases = {w.phase for w in runs if w.phase is not None}
    return [w for w in runs if w.phase == max(phases)] if phases else runs


def is_clamped(run: WorkloadResult) -> bool:
    return run.requested_clients is not None and run.requested_clients != run.clients


def nominal_clients(run: WorkloadResult) -> int | None:
    """The client count the matrix asked for (before any budget clamp)."""
    return run.requested_clients if run.requested_clients is not None else run.clients


# --- scaling -----------------------------------------------------------------------------------


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when the system is singular."""
    n = len(rhs)
    rows = [[*row[:], rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        if abs(rows[pivot][col]) < 1e-15:
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(n):
            if r != col:
                factor = rows[r][col] / rows[col][col]
                for c in range(col, n + 1):
                    rows[r][c] -= factor * rows[col][c]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def _least_squares(columns: list[list[float]], y: list[float]) -> list[float] | None:
    k = len(columns)
    normal = [[sum(a * b for a, b in zip(columns[i], columns[j])) for j in range(k)] for i in range(k)]
    return _solve(normal, [sum(a * b for a, b in zip(columns[i], y)) for i in range(k)])


def fit_usl(points: list[tuple[int, float]]) -> UslFit | None:
    """Least-squares USL fit over (N, tps) points (N: clients, or targets at once); None with fewer than three N.

    The USL is linear in its parameters once inverted: N / X(N) = a + b (N - 1) + c N (N - 1), with
    lambda = 1 / a, sigma = b / a, kappa = c / a. Each row is divided by its measured N / X so the
    residuals are relative errors: small and large client counts weigh alike. A negative kappa (no
    retrograde region in the data) is refitted with kappa = 0, which is Amdahl's law.
    """
    points = sorted((n, x) for n, x in points if n > 0 and x > 0)
    if len({n for n, _ in points}) < USL_MIN_POINTS:
        return None
    y = [n / x for n, x in points]
    weights = [1 / v for v in y]
    serial = [w * (n - 1) for w, (n, _) in zip(weights, points)]
    crosstalk = [w * n * (n - 1) for w, (n, _) in zip(weights, points)]
    target = [1.0] * len(points)  # y_i * w_i
    solution = _least_squares([weights, serial, crosstalk], target)
    if solution is not None and solution[2] < 0:
        solution = None
    if solution is None:
        amdahl = _least_squares([weights, serial], target)
        solution = [*amdahl, 0.0] if amdahl is not None else None
    if solution is None or solution[0] <= 0:
        return None
    a, b, c = solution
    lambda_tps, sigma, kappa = 1 / a, b / a, c / a
    peak_n = math.sqrt((1 - sigma) / kappa) if kappa > 0 and sigma < 1 else None
    peak_tps = usl(peak_n, lambda_tps, sigma, kappa) if peak_n is not None else None
    if peak_tps is not None and peak_tps <= 0:
        # Strongly superlinear points (sigma < 0) can put a pole of the curve before its "peak": no peak then.
        peak_n = peak_tps = None
    max_error = max(abs(usl(n, lambda_tps, sigma, kappa) - x) / x for n, x in points)
    return UslFit(
        lambda_tps=lambda_tps,
        sigma=sigma,
        kappa=kappa,
        peak_n=peak_n,
        peak_tps=peak_tps,
        max_error=max_error,
        points=len(points),
    )


def scaling_curve(points: list[tuple[int, float]]) -> list[ScalingPoint]:
    """Measured tps against ideal linear scaling from the first (smallest) client count."""
    points = sorted(points)
    if not points or points[0][1] <= 0:
        return []
    first_clients, first_tps = points[0]
    curve = []
    for clients, tps in points:
        ideal = first_tps * clients / first_clients
        curve.append(ScalingPoint(clients=clients, tps=tps, ideal_tps=ideal, efficiency=tps / ideal))
    return curve


def scaling(target: str, workload: str, points: list[tuple[int, float]]) -> Scaling | None:
    if len({n for n, _ in points}) < SCALING_MIN_POINTS:
        return None
    fit = fit_usl(points)
    curve = [p.model_copy(update={"usl_tps": fit.predict(p.clients) if fit else None}) for p in scaling_curve(points)]
    return Scaling(target=target, workload=workload, points=curve, usl=fit)


# --- findings ----------------------------------------------------------------------------------


def relative_raw(campaign_id: str, raw: str | None) -> list[str]:
    """An ErrorInfo's raw as a path relative to the campaign folder, when it names a file."""
    if not raw or any(ch.isspace() for ch in raw):
        return []
    return [layout.relative(campaign_id, raw)]


def _load_incidents(target: str, load: LoadResult) -> list[Finding]:
    """What the live monitor saw during a load (a lock it waited on), each a finding of the load."""
    monitored = load.connections
    if monitored is None:
        return []
    raw = [monitored.raw] if monitored.raw else []
    return [
        Finding(target=target, source="load", kind=i.kind, message=i.message, at_s=i.at_s, workload=load.workload, raw=raw)
        for i in monitored.incidents
    ]


def findings(target: TargetResult, campaign_id: str = "") -> list[Finding]:  # noqa: C901  # one check per kind of finding, in a row
    """Every classified failure and incident of a target, each with its evidence."""
    found: list[Finding] = []
    errors = [*(w.error for w in target.workloads), *(lo.error for lo in target.loads)]
    step_errors = {(e.kind, e.message) for e in errors if e is not None}
    # The aggregate repeats a target's first failed step as the target's error: show it once.
    if target.error is not None and (target.error.kind, target.error.message) not in step_errors:
        found.append(
            Finding(
                target=target.name,
                source="target",
                kind=target.error.kind,
                message=target.error.message,
                raw=relative_raw(campaign_id, target.error.raw),
            )
        )
    if target.rtt_ms is not None and target.rtt_ms > FAR_RTT_MS:
        found.append(
            Finding(
                target=target.name,
                source="target",
                kind="far_load_generator",
                message=f"load generator not next to the database: median round trip {target.rtt_ms:.2f} ms "
                f"(> {FAR_RTT_MS:g} ms); its latency and closed-loop tps include the network",
            )
        )
    for load in target.loads:
        if load.error is not None and not (target.error is not None and load.error.kind == "not_run"):
            found.append(
                Finding(
                    target=target.name,
                    source="load",
                    kind=load.error.kind,
                    message=load.error.message,
                    workload=load.workload,
                    raw=load.raw or relative_raw(campaign_id, load.error.raw),
                )
            )
        found.extend(_load_incidents(target.name, load))
    for w in target.workloads:
        where = _Where(target=target.name, workload=w.name, clients=nominal_clients(w), repetition=w.repetition)
        if w.error is not None and not (target.error is not None and w.error.kind == "not_run"):
            found.append(
                Finding(
                    source="run",
                    kind=w.error.kind,
                    message=w.error.message,
                    raw=w.raw or relative_raw(campaign_id, w.error.raw),
                    **where,
                )
            )
        if is_clamped(w):
            found.append(
                Finding(
                    source="run",
                    kind="clamped",
                    message=f"ran with {w.clients} clients instead of {w.requested_clients}: "
                    "left out of the ranking at this point",
                    raw=w.raw,
                    **where,
                )
            )
        for incident in run_stability(w).incidents:
            found.append(
                Finding(
                    source="stability", kind=incident.kind, message=incident.message, at_s=incident.at_s, raw=w.raw[:1], **where
                )
            )
        for incident in w.incidents:
            found.append(
                Finding(source="run", kind=incident.kind, message=incident.message, at_s=incident.at_s, raw=w.raw[:1], **where)
            )
        if w.connections is not None:
            for incident in w.connections.incidents:
                found.append(
                    Finding(
                        source="connections",
                        kind=incident.kind,
                        message=incident.message,
                        at_s=incident.at_s,
                        raw=[w.connections.raw] if w.connections.raw else [],
                        **where,
                    )
                )
    return found


# --- per target --------------------------------------------------------------------------------


def point_runs(target: TargetResult) -> dict[tuple[str, int | None], list[WorkloadResult]]:
    """The target's runs per point (workload x client count the matrix asked for), its latest phase's."""
    grouped: dict[tuple[str, int | None], list[WorkloadResult]] = defaultdict(list)
    for w in latest_phase(target.workloads):
        grouped[(w.name, nominal_clients(w))].append(w)
    return grouped


def target_metrics(target: TargetResult, campaign_id: str = "") -> TargetMetrics:
    points = [
        point_metrics(target.name, name, clients, runs, target.hourly_cost_usd)
        for (name, clients), runs in point_runs(target).items()
    ]
    curves = []
    for workload in dict.fromkeys(p.workload for p in points):
        sweep = [
            (p.clients, p.tps)
            for p in points
            if p.workload == workload and p.complete and p.clients is not None and p.tps is not None
        ]
        curve = scaling(target.name, workload, sweep)
        if curve is not None:
            curves.append(curve)
    return TargetMetrics(
        target=target.name,
        provider=target.provider,
        status=target.status,
        hourly_cost_usd=target.hourly_cost_usd,
        load_s={lo.workload: lo.seconds for lo in target.loads if lo.kind == "init" and lo.seconds is not None},
        points=points,
        scaling=curves,
        findings=findings(target, campaign_id),
    )


def stored_metrics(results: CampaignResults) -> list[TargetMetrics]:
    """The metrics aggregation stored in results.json, which every reader shows as they are. A results.json
    written before they were stored has none: its are computed here, once per load."""
    if results.metrics or not results.targets:
        return results.metrics
    return [target_metrics(t, results.campaign_id) for t in results.targets]


def with_points(target: TargetResult, metrics: TargetMetrics) -> TargetResult:
    """The target with its points' mean, stddev, n and 95% intervals (results.json `points`)."""
    return target.model_copy(update={"points": [p.stats for p in metrics.points if p.runs]})


def campaign_statistics(targets: list[TargetResult], repetitions: int) -> Statistics:
    """The interval method, and a note when points rest on a single run (no interval, no measured noise)."""
    counts = [p.n for t in targets for p in t.points]
    single = sum(1 for n in counts if n < 2)
    note = None
    if counts and single == len(counts):
        note = SINGLE_RUN_NOTE
    elif single:
        note = f"{single} of {len(counts)} points have 1 run: no confidence interval there"
    return Statistics(method=METHOD, repetitions=repetitions, note=note)
