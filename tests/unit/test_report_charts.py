import re

from pgarena.report.charts import Bars, Line, bar_chart, compact, line_chart, nice_ticks


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
