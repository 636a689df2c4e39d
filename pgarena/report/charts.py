"""Charts as inline SVG, drawn here: the report needs no script and no network to be read."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

WIDTH = 760
HEIGHT = 300
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 16, 16, 52
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


def _y_axis(ticks: list[float], label: str, height: int) -> list[str]:
    plot_h = height - MARGIN_TOP - MARGIN_BOTTOM
    out = []
    for tick in ticks:
        y = _scale_y(tick, ticks[-1], height)
        out.append(f'<line class="grid" x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{compact(tick)}</text>')
    mid = MARGIN_TOP + plot_h / 2
    out.append(
        f'<text class="axis-label" transform="translate(14 {mid:.1f}) rotate(-90)" text-anchor="middle">{escape(label)}</text>'
    )
    return out


def _scale_y(value: float, top: float, height: int = HEIGHT) -> float:
    plot_h = height - MARGIN_TOP - MARGIN_BOTTOM
    return MARGIN_TOP + plot_h * (1 - value / top)


def bar_chart(  # noqa: PLR0913  # a chart's labels and styling, mostly defaulted
    chart_id: str, title: str, categories: list[str], series: list[Bars], y_label: str, unit: str = "", css: str = "bars"
) -> Markup:
    """Grouped vertical bars: a group per category, a bar per series; hover titles give exact values."""
    highest = 0.0
    for s in series:
        for i, v in enumerate(s.values):
            if v is None:
                continue
            err = (s.errors[i] or 0.0) if s.errors else 0.0
            mark = (s.markers[i] or 0.0) if s.markers else 0.0
            highest = max(highest, v + err, mark)
    ticks = nice_ticks(highest)
    top = ticks[-1]
    out = _open(chart_id, css, title, HEIGHT) + _y_axis(ticks, y_label, HEIGHT)
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    group_w = plot_w / max(len(categories), 1)
    bar_w = min(56.0, group_w * 0.8 / max(len(series), 1))
    base = _scale_y(0, top)
    for c, category in enumerate(categories):
        x0 = MARGIN_LEFT + c * group_w + (group_w - bar_w * len(series)) / 2
        for k, s in enumerate(series):
            value = s.values[c]
            if value is None:
                continue
            x = x0 + k * bar_w
            y = _scale_y(value, top)
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
                lo, hi = _scale_y(max(value - error, 0), top), _scale_y(value + error, top)
                out.append(
                    f'<path class="error-bar" d="M{cx:.1f} {lo:.1f}V{hi:.1f}'
                    f"M{cx - 5:.1f} {hi:.1f}h10M{cx - 5:.1f} "
                    f'{lo:.1f}h10"><title>± {error:,.2f} (stddev over repetitions)</title></path>'
                )
            marker = s.markers[c] if s.markers else None
            if marker is not None:
                my = _scale_y(marker, top)
                out.append(
                    f'<path class="marker" d="M{cx:.1f} {my - 5:.1f}l5 5l-5 5l-5 -5z" fill="{s.colour}">'
                    f"<title>{escape(s.name)} {escape(s.marker_label)}: {marker:,.2f} {escape(unit)}"
                    "</title></path>"
                )
        label_x = MARGIN_LEFT + (c + 0.5) * group_w
        out.append(
            f'<text class="category" x="{label_x:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 18}" text-anchor="middle">'
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
) -> Markup:
    """Lines over a shared x axis from its smallest x (or 0) to its largest; y from 0. `events` are
    (x, text) pairs drawn as vertical marks, e.g. where tps collapsed."""
    xs = [x for line in lines for x, _ in line.points]
    ys = [y for line in lines for _, y in line.points]
    x_lo = min(0.0, min(xs, default=0.0))
    x_ticks = nice_ticks(max(xs, default=1.0))
    x_hi = x_ticks[-1] if x_ticks[-1] > x_lo else x_lo + 1
    ticks = nice_ticks(max(ys, default=1.0))
    top = ticks[-1]
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    out = _open(chart_id, css, title, height) + _y_axis(ticks, y_label, height)

    def sx(x: float) -> float:
        return MARGIN_LEFT + plot_w * (x - x_lo) / (x_hi - x_lo)

    def sy(y: float) -> float:
        return _scale_y(y, top, height)

    base = sy(0)
    for tick in x_ticks:
        out.append(f'<text class="tick" x="{sx(tick):.1f}" y="{base + 16:.1f}" text-anchor="middle">{compact(tick)}</text>')
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
        out.append(
            f'<g class="event"><line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{MARGIN_TOP}" y2="{base:.1f}"/>'
            f'<text x="{sx(x) + 4:.1f}" y="{MARGIN_TOP + 12}">{escape(text)}</text>'
            f"<title>{escape(text)}</title></g>"
        )
    out.append("</svg>")
    return Markup("\n".join(out))
