"""Charts as inline SVG, drawn here: the report needs no script and no network to be read."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

WIDTH = 760
HEIGHT = 300
# Room for text drawn up to 22 user units high (report.css sizes chart text, larger on a narrow screen): tick
# labels of five characters left of the y axis, the y axis's label above the plot, two lines below it.
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 70, 16, 30, 56
# Okabe-Ito: tells targets apart for readers with any kind of colour vision.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def compact(value: float) -> str:
    """1234 -> 1.23k: axis labels short enough to fit."""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g}M"
    if magnitude >= 1e3:
        return f"{value / 1e3:.3g}k"
    if magnitude >= 1 or value == 0:
        return f"{value:.3g}"
    return f"{value:.2g}"


# Values spanning more than this ratio get a log axis (where the caller allows one): on a linear axis to
# 3,000 ms a 20 ms objective lies on the x axis.
LOG_SPAN = 10.0


def log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten from the one at or below `low` to the first tick at or above `high`, with 2 and 5
    between them when there are few decades."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    last = max(last, first + 1)
    steps = (1, 2, 5) if last - first <= 3 else (1,)
    ticks = [m * 10.0**d for d in range(first, last) for m in steps] + [10.0**last]
    # from the decade below the values (bars start there) to the first tick above them
    above = [t for t in ticks if t >= high]
    return [t for t in ticks if t <= (above[0] if above else ticks[-1])]


def wants_log(values: Sequence[float | None]) -> bool:
    positive = [v for v in values if v is not None and v > 0]
    return len(positive) >= 2 and max(positive) / min(positive) > LOG_SPAN


@dataclass
class YScale:
    """The y axis: linear from 0, or logarithmic over its ticks."""

    ticks: list[float]
    log: bool
    height: int = HEIGHT

    def __call__(self, value: float) -> float:
        plot_h = self.height - MARGIN_TOP - MARGIN_BOTTOM
        if self.log:
            low, high = math.log10(self.ticks[0]), math.log10(self.ticks[-1])
            share = (math.log10(max(value, self.ticks[0])) - low) / (high - low)
        else:
            share = value / self.ticks[-1]
        return MARGIN_TOP + plot_h * (1 - share)

    @property
    def floor(self) -> float:
        """Where bars start and what a zero is drawn at: 0, or the log axis's lowest tick."""
        return self.ticks[0] if self.log else 0.0


def y_scale(values: Sequence[float | None], height: int = HEIGHT, log: bool | None = False) -> YScale:
    """`log`: True, False, or None to choose it when the positive values span more than LOG_SPAN."""
    present = [v for v in values if v is not None]
    positive = [v for v in present if v > 0]
    if log is None:
        log = wants_log(present)
    if log and positive:
        return YScale(log_ticks(min(positive), max(positive)), True, height)
    return YScale(nice_ticks(max(present, default=1.0)), False, height)


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """0 and round steps (1, 2 or 5 x 10^n) up to at least `top`."""
    if top <= 0 or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < top - 1e-12 * top:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


@dataclass
class Bars:
    """One series of a grouped bar chart: a value per category, optional error bars and markers."""

    name: str
    colour: str
    values: list[float | None]
    errors: list[float | None] | None = None
    markers: list[float | None] | None = None
    marker_label: str = ""
    high_markers: list[float | None] | None = None  # a second marker (e.g. p99 above p95), drawn as a bar cap
    high_marker_label: str = ""
    faded: list[str | None] | None = None  # why a bar is not a full measurement (e.g. clamped), or None


@dataclass
class Line:
    name: str
    colour: str
    points: list[tuple[float, float]]
    dash: str | None = None
    dots: bool = True
    css: str = "series"
    labels: list[str] = field(default_factory=list)


def _open(chart_id: str, css: str, title: str, height: int) -> list[str]:
    return [
        f'<svg id="{escape(chart_id)}" class="chart {escape(css)}" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMidYMid meet">',
        f"<title>{escape(title)}</title>",
    ]


def _y_axis(scale: YScale, label: str) -> list[str]:
    out = []
    label = f"{label}, log scale" if scale.log else label
    for tick in scale.ticks:
        y = scale(tick)
        out.append(f'<line class="grid" x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick y" x="{MARGIN_LEFT - 6}" y="{y:.1f}" text-anchor="end">{compact(tick)}</text>')
    # Above the plot, right of the axis (level: read without turning the head, and clear of the tick labels)
    out.append(f'<text class="axis-label y" x="{MARGIN_LEFT + 6}" y="{MARGIN_TOP - 6}">{escape(label)}</text>')
    return out


def _markers(s: Bars, c: int, cx: float, scale: YScale, unit: str) -> list[str]:
    """A bar's markers: the high one (p99) as a cap on a stem from the bar's top, the other (p95) as a diamond."""
    out = []
    high = s.high_markers[c] if s.high_markers else None
    value = s.values[c]
    if high is not None and value is not None:
        hy, top_y = scale(high), scale(value)
        out.append(
            f'<path class="marker high" d="M{cx - 7:.1f} {hy:.1f}h14M{cx:.1f} {hy:.1f}V{top_y:.1f}" '
            f'style="stroke: {s.colour}"><title>{escape(s.name)} {escape(s.high_marker_label)}: {high:,.2f} {escape(unit)}'
            "</title></path>"
        )
    marker = s.markers[c] if s.markers else None
    if marker is not None:
        my = scale(marker)
        out.append(
            f'<path class="marker" d="M{cx:.1f} {my - 5:.1f}l5 5l-5 5l-5 -5z" fill="{s.colour}">'
            f"<title>{escape(s.name)} {escape(s.marker_label)}: {marker:,.2f} {escape(unit)}"
            "</title></path>"
        )
    return out


def bar_chart(  # noqa: PLR0913  # a chart's labels and styling, mostly defaulted
    chart_id: str,
    title: str,
    categories: list[str],
    series: list[Bars],
    y_label: str,
    unit: str = "",
    css: str = "bars",
    log: bool | None = False,
) -> Markup:
    """Grouped vertical bars: a group per category, a bar per series; hover titles give exact values.
    `log`: a log axis (None: when the values span more than LOG_SPAN)."""
    shown: list[float | None] = []
    for s in series:
        for i, v in enumerate(s.values):
            if v is None:
                continue
            err = (s.errors[i] or 0.0) if s.errors else 0.0
            shown += [v, v + err, s.markers[i] if s.markers else None, s.high_markers[i] if s.high_markers else None]
    scale = y_scale(shown, HEIGHT, log)
    out = _open(chart_id, css, title, HEIGHT) + _y_axis(scale, y_label)
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    group_w = plot_w / max(len(categories), 1)
    bar_w = min(56.0, group_w * 0.8 / max(len(series), 1))
    base = scale(scale.floor)
    for c, category in enumerate(categories):
        x0 = MARGIN_LEFT + c * group_w + (group_w - bar_w * len(series)) / 2
        for k, s in enumerate(series):
            value = s.values[c]
            if value is None:
                continue
            x = x0 + k * bar_w
            y = scale(value)
            tip = f"{s.name} · {category}: {value:,.2f}{(' ' + unit) if unit else ''}"
            faded = s.faded[c] if s.faded else None
            if faded:
                tip += f" ({faded})"
            out.append(
                f'<rect class="bar{" faded" if faded else ""}" data-series="{escape(s.name)}" '
                f'x="{x + 1:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{base - y:.1f}" '
                f'fill="{s.colour}"><title>{escape(tip)}</title></rect>'
            )
            cx = x + bar_w / 2
            error = s.errors[c] if s.errors else None
            if error:
                lo, hi = scale(max(value - error, scale.floor)), scale(value + error)
                out.append(
                    f'<path class="error-bar" d="M{cx:.1f} {lo:.1f}V{hi:.1f}'
                    f"M{cx - 5:.1f} {hi:.1f}h10M{cx - 5:.1f} "
                    f'{lo:.1f}h10"><title>± {error:,.2f} (stddev over repetitions)</title></path>'
                )
            out += _markers(s, c, cx, scale, unit)
        label_x = MARGIN_LEFT + (c + 0.5) * group_w
        out.append(
            f'<text class="category" x="{label_x:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 6}" text-anchor="middle">'
            f"{escape(category)}</text>"
        )
    out.append(f'<line class="axis" x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{base:.1f}" y2="{base:.1f}"/>')
    out.append("</svg>")
    return Markup("\n".join(out))


def line_chart(  # noqa: PLR0913  # a chart's labels and styling, mostly defaulted
    chart_id: str,
    title: str,
    lines: list[Line],
    x_label: str,
    y_label: str,
    css: str = "lines",
    height: int = HEIGHT,
    events: Sequence[tuple[float, str]] | None = None,
    log: bool | None = False,
    x_ticks: Sequence[tuple[float, str]] | None = None,
) -> Markup:
    """Lines over a shared x axis from its smallest x (or 0) to its largest; y from 0, or on a log axis
    (`log`; None: when the values span more than LOG_SPAN). `events` are (x, text) pairs drawn as
    vertical marks, e.g. where tps collapsed. `x_ticks`: (x, label) pairs whose first and last are the x
    axis's ends (a label may be empty), for an axis that is not continuous from 0 (run numbers, percentile_chart's nines)."""
    xs = [x for line in lines for x, _ in line.points]
    ys = [y for line in lines for _, y in line.points]
    x_lo = min(0.0, min(xs, default=0.0))
    ticks = list(x_ticks) if x_ticks else [(t, compact(t)) for t in nice_ticks(max(xs, default=1.0))]
    if x_ticks:
        x_lo = ticks[0][0]
    x_hi = ticks[-1][0] if ticks[-1][0] > x_lo else x_lo + 1
    scale = y_scale(ys, height, log)
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    out = _open(chart_id, css, title, height) + _y_axis(scale, y_label)

    def sx(x: float) -> float:
        return MARGIN_LEFT + plot_w * (x - x_lo) / (x_hi - x_lo)

    sy = scale
    base = sy(scale.floor)
    for tick, text in ticks:
        out.append(f'<text class="tick x" x="{sx(tick):.1f}" y="{base + 6:.1f}" text-anchor="middle">{escape(text)}</text>')
    out.append(
        f'<text class="axis-label" x="{MARGIN_LEFT + plot_w / 2:.1f}" y="{height - 10}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    out.append(f'<line class="axis" x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{base:.1f}" y2="{base:.1f}"/>')
    for line in lines:
        if not line.points:
            continue
        path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f} {sy(y):.1f}" for i, (x, y) in enumerate(line.points))
        dash = f' stroke-dasharray="{line.dash}"' if line.dash else ""
        out.append(
            f'<path class="{escape(line.css)}" data-series="{escape(line.name)}" d="{path}" fill="none" '
            f'stroke="{line.colour}" stroke-width="2"{dash}><title>{escape(line.name)}</title></path>'
        )
        if line.dots:
            for i, (x, y) in enumerate(line.points):
                label = line.labels[i] if i < len(line.labels) else f"{x:g}: {y:,.1f}"
                out.append(
                    f'<circle class="dot" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{line.colour}">'
                    f"<title>{escape(line.name)} · {escape(label)}</title></circle>"
                )
    for x, text in events or []:
        # Its text on the side with more room: a mark near the right edge is labelled to its left
        right = sx(x) > MARGIN_LEFT + plot_w / 2
        anchor = f'x="{sx(x) - 4:.1f}" text-anchor="end"' if right else f'x="{sx(x) + 4:.1f}"'
        out.append(
            f'<g class="event"><line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{MARGIN_TOP}" y2="{base:.1f}"/>'
            f'<text {anchor} y="{MARGIN_TOP + 4}">{escape(text)}</text>'
            f"<title>{escape(text)}</title></g>"
        )
    out.append("</svg>")
    return Markup("\n".join(out))


# The percentile distribution's x axis (the HdrHistogram plot's): 1 / (1 - p) on a log scale, so each "nine"
# (90%, 99%, 99.9%...) takes the same width and the tail, where targets differ, is not squeezed into the edge.
PERCENTILE_TICKS = (0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)


def nines(percentile: float) -> float:
    """log10(1 / (1 - p)): 0 at 0%, 1 at 90%, 2 at 99%, 3 at 99.9%."""
    return -math.log10(1 - percentile / 100)


def percentile_label(percentile: float) -> str:
    return f"{percentile:g}%"


def percentile_chart(  # noqa: PLR0913  # a chart's labels and styling, mostly defaulted
    chart_id: str,
    title: str,
    lines: list[Line],
    y_label: str,
    css: str = "lines distribution",
    height: int = HEIGHT,
) -> Markup:
    """Latency against percentile, a line per series: `lines`' points are (percentile in [0, 100), ms). The x
    axis is log-scaled in 1 / (1 - p), ticked at PERCENTILE_TICKS up to the first one past every point; y from
    0, or on a log axis when the values span more than LOG_SPAN."""
    top = max((p for line in lines for p, _ in line.points), default=99.0)
    shown = [t for t in PERCENTILE_TICKS if t <= top]
    shown += [t for t in PERCENTILE_TICKS if t > top][:1]
    placed = [
        Line(
            line.name,
            line.colour,
            [(nines(p), v) for p, v in line.points],
            dash=line.dash,
            dots=line.dots,
            css=line.css,
            labels=line.labels or [f"{percentile_label(p)}: {v:,.2f}" for p, v in line.points],
        )
        for line in lines
    ]
    return line_chart(
        chart_id,
        title,
        placed,
        "percentile (log scale of 1 / (1 - p))",
        y_label,
        css=css,
        height=height,
        log=None,
        # A quarter of a nine past the last tick, unlabelled: its label is not cut by the chart's right edge.
        x_ticks=[*((nines(t), percentile_label(t)) for t in shown), (nines(shown[-1]) + 0.25, "")],
    )
