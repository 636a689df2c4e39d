import math
import re

import pytest

from pgarena.report.charts import Bars, Line, bar_chart, compact, line_chart, log_ticks, nice_ticks, nines, percentile_chart


def test_ticks_are_round_steps_that_cover_the_top():
    assert nice_ticks(457) == [0, 100, 200, 300, 400, 500]
    assert nice_ticks(2194) == [0, 500, 1000, 1500, 2000, 2500]


def test_ticks_of_an_empty_chart_still_make_an_axis():
    assert nice_ticks(0) == [0.0, 1.0]


def test_axis_labels_are_compact():
    assert [compact(v) for v in (0, 15, 2500, 1_250_000, 0.25)] == ["0", "15", "2.5k", "1.25M", "0.25"]


def test_bar_chart_draws_a_bar_per_value_with_exact_figures_on_hover():
    # Given two series over two categories, one value missing
    svg = bar_chart(
        "chart-x",
        "t",
        ["1 client", "2 clients"],
        [Bars("a", "#000", [100.0, 180.0]), Bars("b", "#111", [90.0, None])],
        "tps",
        unit="tps",
    )
    # Then three bars are drawn, each with its value in a title
    assert svg.count('<rect class="bar"') == 3
    assert "<title>a · 2 clients: 180.00 tps</title>" in svg


def test_bar_heights_are_proportional_to_values():
    svg = bar_chart("c", "t", ["x"], [Bars("a", "#000", [100.0]), Bars("b", "#000", [50.0])], "tps")
    heights = [float(h) for h in re.findall(r'<rect class="bar"[^>]* height="([\d.]+)"', svg)]
    assert heights[0] == 2 * heights[1]


def test_line_chart_marks_events():
    svg = line_chart(
        "c", "t", [Line("a", "#000", [(60, 457.0), (120, 15.0)])], "s", "tps", events=[(120.0, "tps_collapse: a r1")]
    )
    assert svg.count('<circle class="dot"') == 2
    assert '<g class="event">' in svg and "tps_collapse: a r1" in svg


def test_chart_text_is_escaped():
    svg = bar_chart("c", "<b>", ["<i>"], [Bars("<s>", "#000", [1.0])], "y")
    assert "<s>" not in svg and "&lt;s&gt;" in svg and "&lt;i&gt;" in svg


def _objective_height(svg: str) -> float:
    """How far above the x axis (as a share of the plot's height) the objective's dashed line is drawn."""
    y = float(re.search(r'class="series objective"[^>]* d="M[\d.]+ ([\d.]+)', svg).group(1))
    base = float(re.search(r'<line class="axis"[^>]* y1="([\d.]+)"', svg).group(1))
    top = min(float(v) for v in re.findall(r'<line class="grid"[^>]* y1="([\d.]+)"', svg))
    return (base - y) / (base - top)


def _slo_lines(top_ms: float) -> list[Line]:
    probes = Line("a", "#000", [(100.0, 4.0), (200.0, 9.0), (300.0, top_ms)], css="series slo")
    return [probes, Line("objective", "#888", [(0.0, 20.0), (300.0, 20.0)], dash="6 4", dots=False, css="series objective")]


def test_values_spanning_more_than_ten_times_get_a_log_axis():
    # Given SLO probes from 4 ms to 3,000 ms and a 20 ms objective
    svg = line_chart("s", "t", _slo_lines(3000.0), "rate", "p99 (ms)", log=None)
    # Then the axis is logarithmic and says so, and the objective sits well clear of the x axis
    assert "p99 (ms), log scale" in svg
    assert _objective_height(svg) > 0.25
    # where a linear axis to 3,000 ms would draw it within 1% of the plot's height from the x axis
    assert _objective_height(line_chart("s", "t", _slo_lines(3000.0), "rate", "p99 (ms)")) < 0.01


def test_values_within_ten_times_keep_a_linear_axis_from_zero():
    svg = line_chart("s", "t", _slo_lines(30.0), "rate", "p99 (ms)", log=None)
    assert "log scale" not in svg
    assert ">0</text>" in svg


def test_log_ticks_start_a_decade_below_and_end_at_or_above_the_values():
    assert log_ticks(2.13, 32.56) == [1, 2, 5, 10, 20, 50]
    ticks = log_ticks(0.5, 3000)
    assert ticks[0] == 0.1 and ticks[-1] == 10_000 and all(b / a == 10 for a, b in zip(ticks, ticks[1:]))


def test_log_bars_keep_their_order_and_start_at_the_lowest_tick():
    svg = bar_chart("c", "t", ["x"], [Bars("a", "#000", [2.0]), Bars("b", "#000", [300.0])], "ms", log=None)
    heights = [float(h) for h in re.findall(r'<rect class="bar"[^>]* height="([\d.]+)"', svg)]
    assert 0 < heights[0] < heights[1]


def test_latency_bars_carry_p99_above_p95():
    bars = Bars("a", "#000", [2.0], markers=[5.0], marker_label="p95", high_markers=[9.0], high_marker_label="p99")
    svg = bar_chart("chart-latency", "t", ["4 clients"], [bars], "latency (ms)", unit="ms")
    assert "<title>a p99: 9.00 ms</title>" in svg and "<title>a p95: 5.00 ms</title>" in svg
    p99_y = float(re.search(r'class="marker high" d="M[\d.]+ ([\d.]+)', svg).group(1))
    p95_y = float(re.search(r'class="marker" d="M[\d.]+ ([\d.]+)', svg).group(1)) + 5  # the diamond's centre
    assert p99_y < p95_y  # higher on the chart


def _x_of_tick(svg: str, label: str) -> float:
    return float(re.search(rf'<text class="tick x" x="([\d.]+)"[^>]*>{re.escape(label)}</text>', svg).group(1))


def test_percentile_chart_spaces_each_nine_alike_and_ticks_up_to_the_tail():
    # Given two targets' distributions to 99.9% (1 in 1,000)
    fast = Line("a", "#000", [(0.0, 1.0), (50.0, 2.0), (90.0, 3.0), (99.0, 5.0), (99.9, 9.0)])
    slow = Line("b", "#111", [(0.0, 1.5), (50.0, 2.5), (90.0, 6.0), (99.0, 40.0), (99.9, 120.0)])
    svg = percentile_chart("d", "t", [fast, slow], "latency (ms)")
    # Then a line per target, a dot per percentile with its exact figure on hover
    assert svg.count('<path class="series"') == 2 and svg.count('<circle class="dot"') == 10
    assert "<title>b · 99.9%: 120.00</title>" in svg
    # And the x axis is ticked at 0%, 50%, 90%, 99%, 99.9% and the next nine, each nine the same width
    ticks = {label: _x_of_tick(svg, label) for label in ("0%", "50%", "90%", "99%", "99.9%", "99.99%")}
    assert "99.999%" not in svg
    nine = ticks["99%"] - ticks["90%"]
    assert nine > 0 and ticks["90%"] - ticks["0%"] == pytest.approx(nine, abs=0.2)
    assert ticks["99.9%"] - ticks["99%"] == pytest.approx(nine, abs=0.2)
    # 50% sits at log10(2) of a nine from 0%
    assert ticks["50%"] - ticks["0%"] == pytest.approx(nine * math.log10(2), abs=0.2)
    # And a tail spanning 1 to 120 ms gets a log latency axis, said in its label
    assert "latency (ms), log scale" in svg and "percentile (log scale of 1 / (1 - p))" in svg


def test_percentile_axis_is_log_of_one_over_one_minus_p():
    assert [round(nines(p), 6) for p in (0.0, 90.0, 99.0, 99.9)] == [0, 1, 2, 3]


def test_line_chart_takes_the_callers_x_ticks():
    svg = line_chart("c", "t", [Line("a", "#000", [(0.7, 10.0), (2.0, 20.0)])], "x", "y", x_ticks=[(0.0, "zero"), (3.0, "three")])
    assert _x_of_tick(svg, "zero") < _x_of_tick(svg, "three")
    assert ">0.7<" not in svg and ">2.5<" not in svg  # no tick of its own
