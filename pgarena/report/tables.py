"""CSV tables for spreadsheets and Athena: one header row, one fact per row, campaign_id on every row
so that many campaigns' files can sit under one table location."""

from __future__ import annotations

import csv
import io
from typing import Any

from pgarena.analysis.metrics import is_clamped, nominal_clients, run_stability
from pgarena.analysis.ranking import METRICS
from pgarena.model.metrics import ScalingPoint
from pgarena.report.view import Report

Table = tuple[list[str], list[list[Any]]]
# A text cell starting with one of these is a formula to a spreadsheet (OWASP's CSV injection rule).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _inert(value: Any) -> Any:
    """A text cell a spreadsheet would run, prefixed with a quote; numbers (-1.5) are left numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e15 else repr(value)
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return value


def to_csv(table: Table) -> bytes:
    header, rows = table
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    # Python 3.11 quotes a field for the characters of the line terminator only: a row holding a bare
    # carriage return is written fully quoted, or readers would take it for a line end.
    quoted = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(header)
    for row in rows:
        cells = [_inert(_cell(v)) for v in row]
        (quoted if any(isinstance(c, str) and "\r" in c for c in cells) else writer).writerow(cells)
    return buffer.getvalue().encode()


def targets_table(report: Report) -> Table:
    header = [
        "campaign_id",
        "target",
        "provider",
        "status",
        "rank",
        "score",
        "error_kind",
        "error_message",
        "server_version",
        "max_connections",
        "budget_capacity",
        "budget_binding",
        "hourly_cost_usd",
        "load_s",
    ]
    ranks = {r.target: r for r in report.rows}
    metrics = {m.target: m for m in report.targets}
    rows = []
    for t in report.results.targets:
        server = t.server
        rows.append(
            [
                report.results.campaign_id,
                t.name,
                t.provider,
                t.status,
                ranks[t.name].rank,
                ranks[t.name].score,
                t.error.kind if t.error else None,
                t.error.message if t.error else None,
                server.version if server else None,
                server.max_connections if server else None,
                server.budget.capacity if server else None,
                server.budget.binding if server else None,
                t.hourly_cost_usd,
                sum(metrics[t.name].load_s.values()) if metrics[t.name].load_s else None,
            ]
        )
    return header, rows


def workloads_table(report: Report) -> Table:
    """One row per run (repetition), as measured."""
    header = [
        "campaign_id",
        "target",
        "provider",
        "workload",
        "tool",
        "clients",
        "requested_clients",
        "clamped",
        "repetition",
        "status",
        "tps",
        "latency_avg_ms",
        "latency_stddev_ms",
        "latency_p50_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "transactions",
        "failed_transactions",
        "tps_cv",
        "worst_vs_median",
        "collapsed",
        "error_kind",
        "error_message",
        "raw",
        "phase",
        "catch_up_s",
        "sustainable_tps",
        "warmup_s",
        "harness_cpu_s",
        "tool_cpu_s",
        "log_processing_s",
    ]
    rows = []
    for t in report.results.targets:
        for w in t.workloads:
            s = run_stability(w)
            lat = w.latency_ms
            rows.append(
                [
                    report.results.campaign_id,
                    t.name,
                    t.provider,
                    w.name,
                    w.tool,
                    w.clients,
                    nominal_clients(w),
                    is_clamped(w),
                    w.repetition,
                    w.status,
                    w.tps,
                    lat.avg,
                    lat.stddev,
                    lat.p50,
                    lat.p95,
                    lat.p99,
                    w.transactions,
                    w.failed_transactions,
                    s.cv,
                    s.worst_vs_median,
                    s.collapsed,
                    w.error.kind if w.error else None,
                    w.error.message if w.error else None,
                    w.raw,
                    w.phase,
                    w.replication.catch_up_s if w.replication else None,
                    w.replication.sustainable_tps if w.replication else None,
                    w.warmup_s,
                    w.harness.cpu_s if w.harness else None,
                    w.harness.tool_cpu_s if w.harness else None,
                    w.harness.log_processing_s if w.harness else None,
                ]
            )
    return header, rows


def progress_table(report: Report) -> Table:
    header = ["campaign_id", "target", "workload", "clients", "repetition", "elapsed_s", "tps", "latency_avg_ms"]
    rows = [
        [report.results.campaign_id, t.name, w.name, w.clients, w.repetition, s.elapsed_s, s.tps, s.latency_avg_ms]
        for t in report.results.targets
        for w in t.workloads
        for s in w.progress
    ]
    return header, rows


def ranking_table(report: Report) -> Table:
    header = [
        "campaign_id",
        "rank",
        "target",
        "provider",
        "status",
        "score",
        *(f"{m}_score" for m in METRICS),
        *(f"{m}_rank" for m in METRICS),
        "tied_with",
        "undecided_with",
        "provisional",
        "flags",
        "reason",
        "basis",
    ]
    rows = [
        [
            report.results.campaign_id,
            r.rank,
            r.target,
            r.provider,
            r.status,
            r.score,
            *(r.metrics.get(m) for m in METRICS),
            *(r.metric_ranks.get(m) for m in METRICS),
            r.tied_with,
            r.undecided_with,
            r.provisional,
            "; ".join(r.flags),
            r.reason,
            report.basis if r.rank is not None else None,
        ]
        for r in report.rows
    ]
    return header, rows


def metrics_table(report: Report) -> Table:
    """One row per target x workload x client count, over repetitions, with scaling where swept."""
    header = [
        "campaign_id",
        "target",
        "workload",
        "clients",
        "clamped",
        "runs",
        "failed_runs",
        "tps_mean",
        "tps_stddev",
        "latency_avg_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "error_rate",
        "retry_rate",
        "tps_cv",
        "worst_vs_median",
        "collapsed",
        "qps_mean",
        "tps_per_usd_hour",
        "ideal_tps",
        "scaling_efficiency",
        "usl_tps",
        "tps_ci95_low",
        "tps_ci95_high",
        "p95_ci95_low",
        "p95_ci95_high",
        "p99_ci95_low",
        "p99_ci95_high",
        "slo",
        "slo_tps",
        "nopm_mean",
        "nopm_ci95_low",
        "nopm_ci95_high",
        "tpm_mean",
    ]
    curves: dict[tuple[str, str, int | None], ScalingPoint] = {
        (s.target, s.workload, p.clients): p for s in report.scaling for p in s.points
    }
    rows = []
    for key in report.keys:
        for p in report.points[key]:
            c = curves.get((p.target, p.workload, p.clients))
            rows.append(
                [
                    report.results.campaign_id,
                    p.target,
                    p.workload,
                    p.clients,
                    p.clamped,
                    p.runs,
                    p.failed_runs,
                    p.tps,
                    p.tps_stddev,
                    p.latency_ms.avg,
                    p.latency_ms.p95,
                    p.latency_ms.p99,
                    p.error_rate,
                    p.retry_rate,
                    p.stability.cv,
                    p.stability.worst_vs_median,
                    p.stability.collapsed,
                    p.qps,
                    p.tps_per_usd_hour,
                    c.ideal_tps if c else None,
                    c.efficiency if c else None,
                    c.usl_tps if c else None,
                    *(
                        bound
                        for ci in (p.tps_interval, p.p95_interval, p.p99_interval)
                        for bound in ((ci.ci95_low, ci.ci95_high) if ci else (None, None))
                    ),
                    p.slo,
                    p.slo_tps,
                    p.nopm,
                    p.nopm_interval.ci95_low if p.nopm_interval else None,
                    p.nopm_interval.ci95_high if p.nopm_interval else None,
                    p.tpm,
                ]
            )
    return header, rows


TABLES = {
    "targets.csv": targets_table,
    "workloads.csv": workloads_table,
    "progress.csv": progress_table,
    "ranking.csv": ranking_table,
    "metrics.csv": metrics_table,
}
