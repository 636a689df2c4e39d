"""The trend page of a campaign's history: one chart per series with its change points and splits
marked, self-contained as the report is (inline CSS and SVG, no script, the same CSP), and its CSV."""

from __future__ import annotations

import csv
import io

from markupsafe import Markup

from pgarena.analysis.history.schema import History, Series
from pgarena.report.charts import Line, colour, line_chart
from pgarena.report.render import TEMPLATES, Chart, _environment, slug
from pgarena.report.stacked import label_cells

CSV_COLUMNS = [
    "campaign", "target", "workload", "clients", "metric", "unit", "run", "campaign_id", "started_at",
    "value", "ci95_low", "ci95_high", "n", "split", "change",
]  # fmt: skip


def _events(series: Series) -> list[tuple[float, str]]:
    """Short marks (a long one would run past the chart's edge): the full sentences are the chart's note."""
    marks = [(float(s.run), f"split at run {s.run}") for s in series.splits]
    marks += [(float(c.run), f"{c.ratio - 1:+.0%} ({c.direction})") for c in series.changes]
    return marks


def series_chart(index: int, series: Series) -> Chart:
    """The series over run numbers, its 95% interval as dashed lines, splits and change points as marks."""
    points = [(float(p.run), p.value) for p in series.points]
    lines = [
        Line(
            series.metric,
            colour(0),
            points,
            labels=[f"run {p.run} ({p.started_at[:10]}): {p.value:,.1f} {series.unit}" for p in series.points],
        )
    ]
    # The axis starts at 0: an interval reaching below it (few, noisy repetitions) is drawn to 0
    low = [(float(p.run), max(0.0, p.ci95_low)) for p in series.points if p.ci95_low is not None]
    high = [(float(p.run), p.ci95_high) for p in series.points if p.ci95_high is not None]
    if low and high:
        lines += [
            Line("95% low", colour(0), low, dash="4 3", dots=False),
            Line("95% high", colour(0), high, dash="4 3", dots=False),
        ]
    title = f"{series.label}: {series.metric}"
    svg = line_chart(
        f"trend-{index}-{slug(title)}", title, lines, "run", f"{series.metric} ({series.unit})", events=_events(series)
    )
    notes = [f"Split at run {s.run} (not compared across): {'; '.join(s.changed)}." for s in series.splits]
    notes += [f"{c.message} ({c.direction}, p = {c.p:.3g})." for c in series.changes]
    legend = [(series.metric, colour(0), "solid")] + ([("95% interval", colour(0), "dashed")] if low else [])
    return Chart(f"trend-{index}", title, svg, legend, " ".join(notes))


def render_trends_html(history: History) -> str:
    charts = [series_chart(i, s) for i, s in enumerate(history.series)]
    css = (TEMPLATES / "report.css").read_text()
    template = _environment(autoescape=True).get_template("trends.html.j2")
    return label_cells(template.render(h=history, charts=charts, css=Markup(css)))


def trends_csv(history: History) -> str:
    """One row per series point: the figure, its interval, and the split or change that starts at it."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for s in history.series:
        splits = {x.run: "; ".join(x.changed) for x in s.splits}
        changes = {c.run: c.message for c in s.changes}
        for p in s.points:
            writer.writerow(
                [
                    history.campaign,
                    s.target,
                    s.workload,
                    s.clients,
                    s.metric,
                    s.unit,
                    p.run,
                    p.campaign_id,
                    p.started_at,
                    p.value,
                    p.ci95_low,
                    p.ci95_high,
                    p.n,
                    splits.get(p.run, ""),
                    changes.get(p.run, ""),
                ]
            )
    return out.getvalue()
