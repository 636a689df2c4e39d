"""The Markdown summary and the self-contained HTML report, rendered with Jinja2 templates."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from pgarena.analysis.metrics import FAR_RTT_MS, TPS_COLLAPSE_FRACTION, latest_phase, nominal_clients
from pgarena.model.figures import Interval
from pgarena.model.metrics import PointMetrics
from pgarena.report.charts import Bars, Line, bar_chart, colour, line_chart, percentile_chart
from pgarena.report.links import local_link, trend_link
from pgarena.report.managed import managed_tables
from pgarena.report.stacked import label_cells
from pgarena.report.timestamps import utc_second
from pgarena.report.view import Key, Report, point_label

TEMPLATES = Path(__file__).parent / "templates"
PROGRESS_HEIGHT = 220  # time series are many and read as shapes: shorter than the other charts
SWEEP_MIN_POINTS = 2  # a line against clients needs two client counts


@dataclass
class Chart:
    id: str
    title: str
    svg: Markup
    legend: list[tuple[str, str, str]]  # (name, colour, style: solid/dashed/dotted)
    note: str = ""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}{suffix}"


def _pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value * 100:.{digits}f}%"


def _md(value: object) -> str:
    """Data in Markdown: HTML escaped (Markdown renders inline HTML), pipes escaped, one line."""
    return html.escape(str(value), quote=False).replace("|", "\\|").replace("\n", " ")


def _labels(report: Report) -> dict[Key, str]:
    single = len({w for w, _ in report.keys}) == 1
    return {k: point_label(k, single) for k in report.keys}


def _target_names(report: Report) -> list[str]:
    return [t.name for t in report.results.targets]


def _not_compared(point: PointMetrics | None) -> str | None:
    if point is None or point.tps is None:
        return None
    if point.clamped:
        return f"clamped to {', '.join(str(c) for c in point.ran_clients)} clients: not compared"
    if point.failed_runs:
        return f"{point.failed_runs} failed run(s): not compared"
    return None


def throughput_chart(report: Report) -> Chart | None:
    labels = _labels(report)
    series = []
    for name in _target_names(report):
        by_key = {p.key: p for k in report.keys for p in report.points[k] if p.target == name}
        values = [by_key[k].tps if k in by_key else None for k in report.keys]
        if any(v is not None for v in values):
            errors = [by_key[k].tps_stddev if k in by_key else None for k in report.keys]
            faded = [_not_compared(by_key.get(k)) for k in report.keys]
            series.append(Bars(name, report.colours[name], values, errors=errors, faded=faded))
    if not series:
        return None
    title = "Throughput per target (mean tps over repetitions; whiskers: ± stddev)"
    svg = bar_chart("chart-throughput", title, [labels[k] for k in report.keys], series, "tps", unit="tps", css="bars throughput")
    return Chart("chart-throughput", title, svg, [(s.name, s.colour, "solid") for s in series])


def latency_chart(report: Report) -> Chart | None:
    if not report.has_latency:
        return None
    labels = _labels(report)
    series = []
    for name in _target_names(report):
        by_key = {p.key: p for k in report.keys for p in report.points[k] if p.target == name}
        values = [by_key[k].latency_ms.avg if k in by_key else None for k in report.keys]
        markers = [by_key[k].latency_ms.p95 if k in by_key else None for k in report.keys]
        p99 = [by_key[k].latency_ms.p99 if k in by_key else None for k in report.keys]
        if any(v is not None for v in values):
            series.append(
                Bars(
                    name, report.colours[name], values, markers=markers, marker_label="p95",
                    high_markers=p99, high_marker_label="p99",
                )
            )  # fmt: skip
    title = "Latency per target (bars: average; diamonds: p95; caps: p99, where measured)"
    svg = bar_chart(
        "chart-latency", title, [labels[k] for k in report.keys], series, "latency (ms)", unit="ms", css="bars latency",
        log=None,
    )  # fmt: skip
    return Chart("chart-latency", title, svg, [(s.name, s.colour, "solid") for s in series])


def progress_charts(report: Report) -> list[Chart]:
    labels = _labels(report)
    charts = []
    for key in report.keys:
        lines, legend = [], []
        for t in report.results.targets:
            runs = [w for w in latest_phase(t.workloads) if w.name == key[0] and nominal_clients(w) == key[1] and w.progress]
            for w in runs:
                name = t.name if len(runs) == 1 else f"{t.name} r{w.repetition}"
                dash = None if w.repetition == 1 else "6 4"
                lines.append(
                    Line(
                        name,
                        report.colours[t.name],
                        _held([(s.elapsed_s, s.tps) for s in w.progress]),
                        dash=dash,
                        labels=[f"{s.elapsed_s:g} s: {s.tps:,.1f} tps" for s in w.progress],
                    )
                )
                legend.append((name, report.colours[t.name], "dashed" if dash else "solid"))
        if not lines:
            continue
        chart_id = f"chart-progress-{slug(key[0])}-c{key[1]}"
        title = f"tps per interval over the run: {labels[key]}"
        incidents = [f for f in report.findings if f.source == "stability" and (f.workload, f.clients) == key]
        grouped: dict[tuple[float, str], list[str]] = {}
        for f in incidents:
            if f.at_s is not None:
                grouped.setdefault((f.at_s, f.kind), []).append(f"{f.target} r{f.repetition}")
        events = [(at_s, f"{kind}: {', '.join(who)}") for (at_s, kind), who in grouped.items()]
        svg = line_chart(
            chart_id, title, lines, "seconds since start", "tps", css="lines timeseries", height=PROGRESS_HEIGHT, events=events
        )
        note = "; ".join(dict.fromkeys(f"{f.target}: {f.message}" for f in incidents))
        charts.append(Chart(chart_id, title, svg, legend, note))
    return charts


# How a latency line is drawn per percentile: one colour per target, the percentile by its dash.
PERCENTILE_DASHES: dict[str, tuple[str | None, str]] = {
    "p50": (None, "solid"),
    "p95": ("6 4", "dashed"),
    "p99": ("2 3", "dotted"),
}


def latency_point_charts(report: Report) -> list[Chart]:
    """Per point, its latency per interval over the run, then its percentile distribution."""
    labels = _labels(report)
    charts = []
    for key in report.keys:
        charts += [c for c in (latency_time_chart(report, key, labels[key]), distribution_chart(report, key, labels[key])) if c]
    return charts


def latency_time_chart(report: Report, key: Key, label: str) -> Chart | None:
    """p50/p95/p99 per progress interval, a line per target and percentile: from every run's histograms merged
    per interval, or, for a tool without them, its own per-interval percentile, a line per run."""
    lines, legend, sizes = [], [], set()
    for p in report.points[key]:
        c, merged = report.colours[p.target], p.merged_latency
        if merged is not None and merged.intervals:
            sizes.add(merged.interval_s)
            for name, (dash, style) in PERCENTILE_DASHES.items():
                lines.append(
                    Line(
                        f"{p.target} {name}",
                        c,
                        _held([(i.elapsed_s, getattr(i, name)) for i in merged.intervals]),
                        dash=dash,
                        labels=[
                            f"{i.elapsed_s:g} s: {name} {getattr(i, name):,.2f} ms ({i.transactions:,} transactions, "
                            f"{i.runs} run(s))"
                            for i in merged.intervals
                        ],
                    )
                )
                legend.append((f"{p.target} {name}", c, style))
            continue
        lines_of, legend_of = _tool_percentile_lines(report, p.target, key)
        lines, legend = lines + lines_of, legend + legend_of
    if not lines:
        return None
    chart_id = f"chart-latency-time-{slug(key[0])}-c{key[1]}"
    title = f"Latency per interval over the run: {label}"
    svg = line_chart(
        chart_id, title, lines, "seconds since start", "latency (ms)", css="lines latency-time", height=PROGRESS_HEIGHT, log=None
    )
    every = ", ".join(f"{s} s" for s in sorted(sizes))
    note = f"each {every} interval: every run's transactions that ended in it, their histograms merged" if sizes else ""
    return Chart(chart_id, title, svg, legend, note)


def distribution_chart(report: Report, key: Key, label: str) -> Chart | None:
    """The percentile distribution of a point (the HdrHistogram plot), a line per target, from its merged histogram."""
    lines, legend = [], []
    for p in report.points[key]:
        merged = p.merged_latency
        if merged is None or not merged.distribution:
            continue
        c = report.colours[p.target]
        lines.append(
            Line(
                p.target,
                c,
                [(d.percentile, d.ms) for d in merged.distribution],
                dots=False,  # a curve of 25 points a target: its values are in results.json, the page stays light
            )
        )
        legend.append((f"{p.target} ({merged.transactions:,} transactions)", c, "solid"))
    if not lines:
        return None
    chart_id = f"chart-distribution-{slug(key[0])}-c{key[1]}"
    title = f"Latency by percentile: {label}"
    svg = percentile_chart(chart_id, title, lines, "latency (ms)", height=PROGRESS_HEIGHT)
    return Chart(chart_id, title, svg, legend, "every run's transactions in one histogram per target")


def _tool_percentile_lines(report: Report, target: str, key: Key) -> tuple[list[Line], list[tuple[str, str, str]]]:
    """The tool's own per-interval percentile, a line per run (a tool's percentiles of different runs cannot be merged)."""
    found = next(t for t in report.results.targets if t.name == target)
    runs = [
        w
        for w in latest_phase(found.workloads)
        if w.name == key[0] and nominal_clients(w) == key[1] and any(s.latency_pct_ms is not None for s in w.progress)
    ]
    lines, legend = [], []
    for w in runs:
        samples = [s for s in w.progress if s.latency_pct_ms is not None]
        name = f"{target} p{samples[0].percentile:g}" + (f" r{w.repetition}" if len(runs) > 1 else "")
        dash = None if w.repetition == 1 else "6 4"
        lines.append(
            Line(
                name,
                report.colours[target],
                _held([(s.elapsed_s, s.latency_pct_ms) for s in samples if s.latency_pct_ms is not None]),
                dash=dash,
                labels=[f"{s.elapsed_s:g} s: {s.latency_pct_ms:,.2f} ms" for s in samples],
            )
        )
        legend.append((name, report.colours[target], "dashed" if dash else "solid"))
    return lines, legend


def _held(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A series of one interval drawn as its value held from 0 over the interval: a lone point draws no line."""
    return [(0.0, points[0][1]), *points] if len(points) == 1 else points


def latency_clients_charts(report: Report) -> list[Chart]:
    """p50/p95/p99 against clients, a chart per workload with a sweep, from each point's merged histogram."""
    charts = []
    for workload in dict.fromkeys(w for w, _ in report.keys):
        lines, legend = [], []
        for target in _target_names(report):
            points = sorted(
                (p for k in report.keys if k[0] == workload for p in report.points[k]
                 if p.target == target and p.clients is not None and p.merged_latency is not None),
                key=lambda p: p.clients or 0,
            )  # fmt: skip
            if len(points) < SWEEP_MIN_POINTS:
                continue
            c = report.colours[target]
            for name, (dash, style) in PERCENTILE_DASHES.items():
                xy = [(float(p.clients or 0), getattr(p.merged_latency.latency_ms, name)) for p in points if p.merged_latency]
                lines.append(
                    Line(f"{target} {name}", c, xy, dash=dash, labels=[f"{x:g} clients: {name} {y:,.2f} ms" for x, y in xy])
                )
                legend.append((f"{target} {name}", c, style))
        if not lines:
            continue
        chart_id = f"chart-latency-clients-{slug(workload)}"
        title = f"Latency against clients: {workload}"
        svg = line_chart(chart_id, title, lines, "clients", "latency (ms)", css="lines latency-clients", log=None)
        charts.append(Chart(chart_id, title, svg, legend, "p50/p95/p99 of each point's runs, their histograms merged"))
    return charts


def scaling_charts(report: Report) -> list[Chart]:
    charts = []
    for workload in dict.fromkeys(s.workload for s in report.scaling):
        lines, legend = [], []
        for s in (s for s in report.scaling if s.workload == workload):
            c = report.colours[s.target]
            lines.append(
                Line(
                    f"{s.target} measured",
                    c,
                    [(p.clients, p.tps) for p in s.points],
                    css="series measured",
                    labels=[f"{p.clients} clients: {p.tps:,.1f} tps ({p.efficiency:.0%} of ideal)" for p in s.points],
                )
            )
            lines.append(
                Line(
                    f"{s.target} ideal",
                    c,
                    [(p.clients, p.ideal_tps) for p in s.points],
                    dash="6 4",
                    dots=False,
                    css="series ideal",
                )
            )
            legend += [(f"{s.target} measured", c, "solid"), (f"{s.target} ideal linear", c, "dashed")]
            if s.usl is not None and s.usl.good:
                measured = max(p.clients for p in s.points)
                # Drawn up to the predicted peak, within three times the largest measured client count.
                top = max(measured, min(s.usl.peak_n or 0, 3 * measured))
                xs = sorted({*(p.clients for p in s.points), *(1 + (top - 1) * i / 40 for i in range(41))})
                lines.append(
                    Line(f"{s.target} USL fit", c, [(x, s.usl.predict(x)) for x in xs], dash="2 3", dots=False, css="series usl")
                )
                legend.append((f"{s.target} USL fit", c, "dotted"))
        chart_id = f"chart-scaling-{slug(workload)}"
        title = f"Scaling with clients: {workload} (measured vs ideal linear vs USL fit)"
        svg = line_chart(chart_id, title, lines, "clients", "tps", css="lines scaling")
        charts.append(Chart(chart_id, title, svg, legend))
    return charts


def slo_charts(report: Report) -> list[Chart]:
    """Per workload point: each target's probes, offered rate against the objective's percentile, with
    the objective as a dashed line; the highest rate that met it is what "tps at SLO" reports."""
    charts = []
    labels = _labels(report)
    for key in dict.fromkeys((run.workload, run.clients) for run in report.slo_runs):
        runs = [run for run in report.slo_runs if (run.workload, run.clients) == key]
        lines, legend = [], []
        several = len({run.repetition for run in runs}) > 1
        top_rate = 0.0
        for run in runs:
            field = f"p{run.search.percentile}_ms"
            probes = sorted(
                (p for p in run.search.curve if p.rate_tps is not None and getattr(p, field) is not None),
                key=lambda p: p.rate_tps or 0.0,
            )
            if not probes:
                continue
            name = f"{run.target} r{run.repetition}" if several else run.target
            c = report.colours[run.target]
            lines.append(
                Line(
                    name,
                    c,
                    [(p.rate_tps or 0.0, getattr(p, field)) for p in probes],
                    css="series slo",
                    labels=[
                        f"rate {p.rate_tps:,.1f} tps: {p.tps or 0:,.1f} tps, p95 {p.p95_ms or 0:,.2f} ms, "
                        f"p99 {p.p99_ms or 0:,.2f} ms, {'met' if p.met else 'not met'}"
                        + (", schedule lag growing" if p.lag_growing else "")
                        for p in probes
                    ],
                )
            )
            legend.append((name, c, "solid"))
            top_rate = max(top_rate, *(p.rate_tps or 0.0 for p in probes))
        if not lines:
            continue
        search = runs[0].search
        lines.append(
            Line(
                f"objective p{search.percentile} <= {search.limit_ms:g} ms",
                "#888888",
                [(0.0, search.limit_ms), (top_rate, search.limit_ms)],
                dash="6 4",
                dots=False,
                css="series objective",
            )
        )
        legend.append((f"objective p{search.percentile} <= {search.limit_ms:g} ms", "#888888", "dashed"))
        label = labels.get(key) or point_label(key, single_workload=False)
        chart_id = f"chart-slo-{slug(label)}"
        title = f"Offered rate vs p{search.percentile} latency: {label}"
        svg = line_chart(
            chart_id, title, lines, "offered rate (tps, --rate)", f"p{search.percentile} (ms)", css="lines slo", log=None
        )
        charts.append(Chart(chart_id, title, svg, legend))
    return charts


def cost_chart(report: Report) -> Chart | None:
    if not report.has_costs:
        return None
    labels = _labels(report)
    series = []
    for name in _target_names(report):
        by_key = {p.key: p for k in report.keys for p in report.points[k] if p.target == name}
        values = [by_key[k].tps_per_usd_hour if k in by_key else None for k in report.keys]
        if any(v is not None for v in values):
            faded = [_not_compared(by_key.get(k)) for k in report.keys]
            series.append(Bars(name, report.colours[name], values, faded=faded))
    title = "Cost efficiency (tps per dollar-hour of the target)"
    svg = bar_chart(
        "chart-cost", title, [labels[k] for k in report.keys], series, "tps per $/h", unit="tps per $/h", css="bars cost"
    )
    return Chart("chart-cost", title, svg, [(s.name, s.colour, "solid") for s in series])


def consolidation_charts(report: Report) -> list[Chart]:
    """Total tps per consolidation step against ideal scaling and the USL fit, a chart per workload point."""
    charts = []
    c = colour(0)
    for table in report.consolidation:
        steps = [s for s in table.steps if s.complete and s.measured_tps is not None]
        if not steps:
            continue
        lines = [
            Line(
                "measured total",
                c,
                [(s.targets, tps) for s in steps if (tps := s.measured_tps) is not None],
                css="series measured",
                labels=[f"{s.targets} targets: {s.measured_tps:,.1f} tps ({s.ratio:.0%} of ideal)" for s in steps],
            ),
            Line(
                "ideal",
                c,
                [(s.targets, s.ideal_tps) for s in table.steps if s.ideal_tps is not None],
                dash="6 4",
                dots=False,
                css="series ideal",
            ),
        ]
        legend = [("measured total", c, "solid"), ("ideal: first step per target × targets", c, "dashed")]
        if table.usl is not None and table.usl.good:
            top = steps[-1].targets
            xs = [1 + (top - 1) * i / 40 for i in range(41)]
            fit = table.usl
            lines.append(
                Line(
                    "USL fit",
                    colour(1),
                    [(x, fit.predict(x)) for x in xs],
                    dash="2 3",
                    dots=False,
                    css="series usl",
                )
            )
            legend.append(("USL fit", colour(1), "dotted"))
        events = (
            [(table.below_threshold_at, f"below {table.threshold:.0%} of ideal")]
            if table.below_threshold_at is not None
            else None
        )
        chart_id = f"chart-consolidation-{slug(table.workload)}-c{table.clients}"
        title = f"Consolidation: {table.workload}, {table.clients} clients per target (total tps vs ideal scaling)"
        svg = line_chart(chart_id, title, lines, "targets running at once", "total tps", css="lines consolidation", events=events)
        charts.append(Chart(chart_id, title, svg, legend))
    return charts


def sustainable_charts(report: Report) -> list[Chart]:
    """Sustainable tps per client count (bars) beside what the primary ran (diamonds), a chart per workload."""
    charts = []
    for workload in dict.fromkeys(p.workload for p in report.replication):
        points = [p for p in report.replication if p.workload == workload]
        clients = sorted({p.clients for p in points if p.clients is not None})
        series = []
        for name in _target_names(report):
            by_clients = {p.clients: p for p in points if p.target == name}
            if by_clients:
                series.append(
                    Bars(
                        name,
                        report.colours[name],
                        [by_clients[n].sustainable_tps if n in by_clients else None for n in clients],
                        markers=[by_clients[n].tps if n in by_clients else None for n in clients],
                        marker_label="primary tps",
                    )
                )
        chart_id = f"chart-sustainable-{slug(workload)}"
        title = f"Sustainable throughput: {workload} (bars: transactions / (run + catch-up); diamonds: primary tps)"
        svg = bar_chart(
            chart_id,
            title,
            [f"{n} client{'s' if n != 1 else ''}" for n in clients],
            series,
            "tps",
            unit="tps",
            css="bars sustainable",
        )
        charts.append(Chart(chart_id, title, svg, [(s.name, s.colour, "solid") for s in series]))
    return charts


def _ci(value: Interval | None, digits: int = 1) -> str:
    """A 95% interval as [low, high]; a dash with one run (no interval)."""
    if value is None or value.ci95_low is None or value.ci95_high is None:
        return "–"
    return f"[{value.ci95_low:,.{digits}f}, {value.ci95_high:,.{digits}f}]"


def _mib(value: int | None) -> str:
    return "–" if value is None else f"{value / 2**20:,.2f} MiB"


@cache  # compiling the templates costs more than rendering them
def _environment(autoescape: bool) -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(enabled_extensions=("html.j2",), default=False) if autoescape else False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(fmt=_fmt, pct=_pct, md=_md, slug=slug, mib=_mib, ci=_ci, local_link=local_link, trend_link=trend_link)
    env.filters["utc"] = utc_second
    return env


def _context(report: Report) -> dict[str, object]:
    return dict(
        r=report,
        results=report.results,
        labels=_labels(report),
        drop_fraction=TPS_COLLAPSE_FRACTION,
        far_rtt_ms=FAR_RTT_MS,
        managed=managed_tables(report.results),
    )


def render_markdown(report: Report) -> str:
    return _environment(autoescape=False).get_template("summary.md.j2").render(**_context(report))


def render_html(report: Report) -> str:
    charts = dict(
        throughput=throughput_chart(report),
        latency=latency_chart(report),
        progress=progress_charts(report),
        latency_points=latency_point_charts(report),
        latency_clients=latency_clients_charts(report),
        scaling=scaling_charts(report),
        cost=cost_chart(report),
        consolidation=consolidation_charts(report),
        sustainable=sustainable_charts(report),
        slo=slo_charts(report),
    )
    css = (TEMPLATES / "report.css").read_text()
    page = _environment(autoescape=True).get_template("report.html.j2").render(**_context(report), charts=charts, css=Markup(css))
    return label_cells(page)
