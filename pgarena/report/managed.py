"""The report's managed metrics: per target that named its DB instance (`cloudwatch`), each run's CloudWatch
metrics over its window (average, and the least and greatest), or why they are missing. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from pgarena.model.managed_metrics import METRICS, MetricSummary
from pgarena.model.results import CampaignResults, WorkloadResult

# How each CloudWatch unit reads in a table cell.
_SCALES: dict[str, tuple[float, str, int]] = {
    "Percent": (1.0, " %", 1),
    "Bytes": (2.0**30, " GiB", 2),
    "Count/Second": (1.0, "/s", 0),
    "Count": (1.0, "", 2),
    "Seconds": (1.0, " s", 1),
    "Milliseconds": (1.0, " ms", 1),
}


def shown(value: float, unit: str) -> str:
    divisor, suffix, digits = _SCALES.get(unit, (1.0, f" {unit}", 2))
    return f"{value / divisor:,.{digits}f}{suffix}"


def cell(metric: MetricSummary) -> str:
    """The window's average, then its range: `42.0 % (12.5 % – 61.0 %)`."""
    low, high = shown(metric.min, metric.unit), shown(metric.max, metric.unit)
    if low == high:  # a steady metric (or one datapoint): its range says nothing more
        return shown(metric.avg, metric.unit)
    return f"{shown(metric.avg, metric.unit)} ({low} – {high})"


@dataclass
class ManagedRow:
    run: str  # workload · clients · repetition
    cells: dict[str, str]  # by metric name
    raw: str | None  # the kept GetMetricData answer
    note: str | None  # why nothing (or not everything) was read


@dataclass
class ManagedTable:
    target: str
    instance: str
    region: str | None
    period_s: int
    columns: list[str]  # metric names with datapoints in some run, in METRICS' order
    rows: list[ManagedRow] = field(default_factory=list)


def _label(w: WorkloadResult) -> str:
    clients = f" · {w.clients} clients" if w.clients is not None else ""
    return f"{w.name}{clients} · r{w.repetition}"


def managed_tables(results: CampaignResults) -> list[ManagedTable]:
    """One table per target with managed metrics: a row per run, a column per metric."""
    tables = []
    for target in results.targets:
        runs = [w for w in target.workloads if w.managed_metrics is not None]
        if not runs:
            continue
        first = runs[0].managed_metrics
        assert first is not None
        present = {m.name for w in runs if w.managed_metrics for m in w.managed_metrics.metrics}
        table = ManagedTable(
            target.name, first.instance, first.region, first.period_s, [s.name for s in METRICS if s.name in present]
        )
        for w in runs:
            metrics = w.managed_metrics
            assert metrics is not None
            note = f"{metrics.note.kind}: {metrics.note.message}" if metrics.note else None
            table.rows.append(ManagedRow(_label(w), {m.name: cell(m) for m in metrics.metrics}, metrics.raw, note))
        tables.append(table)
    return tables
