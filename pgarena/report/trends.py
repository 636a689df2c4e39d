"""The trend page of a campaign's history: one chart per series with its change points and splits
marked, self-contained as the report is (inline CSS and SVG, no script, the same CSP), and its CSV."""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path

from markupsafe import Markup

from pgarena.analysis.history import index, trends
from pgarena.analysis.history.schema import History, Series
from pgarena.analysis.history.trends import metric_name
from pgarena.report.charts import Line, colour, line_chart
from pgarena.report.links import trend_page
from pgarena.report.render import TEMPLATES, Chart, _environment, slug
from pgarena.report.stacked import label_cells

log = logging.getLogger(__name__)

CSV_COLUMNS = [
    "campaign", "target", "workload", "clients", "metric", "unit", "run", "campaign_id", "started_at",
    "value", "ci95_low", "ci95_high", "n", "split", "change",
]  # fmt: skip


def _events(series: Series) -> list[tuple[float, str]]:
    """Short marks (a long one would run past the chart's edge): the full sentences are the chart's note."""
    marks = [(float(s.run), f"split at run {s.run}") for s in series.splits]
    marks += [(float(c.run), f"{c.ratio - 1:+.0%} ({c.direction})") for c in series.changes]
    return marks


def run_ticks(first: int, last: int, most: int = 10) -> list[tuple[float, str]]:
    """The x axis of a campaign's runs: half a run of room each side (unlabelled ends, so a single run is a
    point in the middle), a label at whole run numbers only, every 1, 2, 5, 10, 20... runs so at most `most`
    are labelled."""
    step = next(m * 10**e for e in range(12) for m in (1, 2, 5) if (last - first) // (m * 10**e) + 1 <= most)
    labelled = [(float(r), str(r)) for r in range(first, last + 1) if r % step == 0]
    return [(first - 0.5, ""), *labelled, (last + 0.5, "")]


def axis_label(series: Series) -> str:
    """The metric's readable name and its unit once: 'p95 latency (ms)', 'tps'."""
    name = metric_name(series.metric)
    return name if series.unit == name else f"{name} ({series.unit})"


def series_chart(index: int, series: Series, runs: tuple[int, int]) -> Chart:
    """The series over the campaign's runs (`runs`: its first and last run number), its 95% interval as dashed
    lines, splits and change points as marks."""
    name = metric_name(series.metric)
    points = [(float(p.run), p.value) for p in series.points]
    lines = [
        Line(
            name,
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
    title = f"{series.label}: {name}"
    svg = line_chart(
        f"trend-{index}-{slug(title)}",
        title,
        lines,
        "run",
        axis_label(series),
        events=_events(series),
        x_ticks=run_ticks(*runs),
    )
    notes = [f"Split at run {s.run} (not compared across): {'; '.join(s.changed)}." for s in series.splits]
    notes += [f"{c.message} ({c.direction}, p = {c.p:.3g})." for c in series.changes]
    legend = [(name, colour(0), "solid")] + ([("95% interval", colour(0), "dashed")] if low else [])
    return Chart(f"trend-{index}", title, svg, legend, " ".join(notes))


def render_trends_html(history: History) -> str:
    numbers = [r.run for r in history.runs] + [p.run for s in history.series for p in s.points]
    runs = (min(numbers, default=1), max(numbers, default=1))
    charts = [series_chart(i, s, runs) for i, s in enumerate(history.series)]
    css = (TEMPLATES / "report.css").read_text()
    template = _environment(autoescape=True).get_template("trends.html.j2")
    page = template.render(
        h=history,
        charts=charts,
        css=Markup(css),
        wanting=trends.too_few_runs(history),
        names={s.metric: metric_name(s.metric) for s in history.series},
        costs=[index.cost_text(r) for r in history.runs],
    )
    return label_cells(page)


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


def write_trend_page(root: Path, campaign: str) -> Path | None:
    """The campaign name's trend page and CSV, written (anew) where its reports link to: <root>/history/<name>.html
    (pgarena.report.links). Every local campaign's end and `pgarena history NAME` refresh it; it reads that
    name's runs only. None when the name makes no safe file name or no run of it is under the root."""
    if trend_page(campaign) is None:
        return None
    found = index.read_runs(root, campaign)
    if not found.runs:
        return None
    return save_trend_page(root, trends.history(found, campaign, str(root)))


def save_trend_page(root: Path, told: History) -> Path | None:
    """`told`'s trend page and CSV at <root>/history/<name>.html; None for a name that makes no safe file name."""
    page = trend_page(told.campaign)
    if page is None:
        return None
    path = root / page
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_trends_html(told))
    path.with_suffix(".csv").write_text(trends_csv(told))
    return path


def refresh_trend_page(root: Path, campaign: str) -> Path | None:
    """write_trend_page at a campaign's end: a page that cannot be written is said, and the campaign's own
    results stand (its report's link then waits for `pgarena history NAME`)."""
    try:
        return write_trend_page(root, campaign)
    except OSError as error:
        log.warning("the trend page of %s was not written under %s: %s", campaign, root, error)
        return None
