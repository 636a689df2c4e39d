"""The trend page as a new user reads it: an x axis of whole run numbers spanning the runs, the metric's
readable name and unit, no claim of "no change" where none could be looked for, a local run's cost said as
what it would have cost in AWS, and timestamps to the second in UTC."""

import re

import pytest
from typer.testing import CliRunner

from pgarena.analysis.history.schema import Detector, History, RunEntry, Series, TrendPoint
from pgarena.analysis.significance import MIN_RUNS
from pgarena.cli import app
from pgarena.model.results import CampaignResults
from pgarena.report import build_reports
from pgarena.report.charts import MARGIN_LEFT, MARGIN_RIGHT, WIDTH
from pgarena.report.timestamps import utc_second
from pgarena.report.trends import render_trends_html, run_ticks
from tests.conftest import FIXTURES
from tests.unit.history_runs import Night, write_nights

runner = CliRunner()
DETECTOR = Detector(library="ruptures", method="PELT", min_runs=MIN_RUNS, threshold=0.05, alpha=0.05)
STARTED = "2026-11-27T21:15:08.344708+00:00"


def _history(runs: int, detector: Detector | None = DETECTOR, priced_as_aws: bool = True) -> History:
    """`runs` runs of one target, a tps and a p95 series measured at each."""
    entries = [
        RunEntry(
            run=r,
            campaign_id=f"nightly-{r}",
            folder=f"nightly-{r}",
            started_at=STARTED,
            finished_at=STARTED,
            status="completed",
            targets=["a"],
            headline="a ranks first.",
            cost_usd=0.0123,
            priced_as_aws=priced_as_aws,
        )
        for r in range(1, runs + 1)
    ]

    def points(value: float) -> list[TrendPoint]:
        return [TrendPoint(run=r, campaign_id=f"nightly-{r}", started_at=STARTED, value=value, n=3) for r in range(1, runs + 1)]

    series = [
        Series(target="a", workload="tpcb", clients=4, metric="tps", unit="tps", points=points(500.0)),
        Series(target="a", workload="tpcb", clients=4, metric="p95_ms", unit="ms", points=points(8.0)),
    ]
    return History(campaign="nightly", root="results", runs=entries, series=series, detector=detector)


def _x_labels(svg: str) -> list[str]:
    return [t for t in re.findall(r'<text class="tick x"[^>]*>([^<]*)</text>', svg) if t]


# 1. The x axis: whole run numbers over the runs


def test_run_ticks_are_whole_runs_with_half_a_run_of_room_each_side():
    assert run_ticks(1, 1) == [(0.5, ""), (1.0, "1"), (1.5, "")]
    assert run_ticks(1, 2) == [(0.5, ""), (1.0, "1"), (2.0, "2"), (2.5, "")]


def test_many_runs_are_labelled_every_round_number_of_runs():
    ticks = run_ticks(1, 40)
    labels = [label for _, label in ticks if label]
    assert labels == ["5", "10", "15", "20", "25", "30", "35", "40"]
    assert (ticks[0][0], ticks[-1][0]) == (0.5, 40.5)
    assert all(len([t for t in run_ticks(1, n) if t[1]]) <= 10 for n in range(1, 500))


@pytest.mark.parametrize("runs", [1, 2])
def test_the_axis_spans_the_runs_not_zero_to_them(runs):
    html = render_trends_html(_history(runs))
    svg = html[html.index("<svg") : html.index("</svg>")]
    # Then only whole run numbers are labelled: no 0, no 0.2 or 1.5
    assert _x_labels(svg) == [str(r) for r in range(1, runs + 1)]
    dots = [float(x) for x in re.findall(r'<circle class="dot" cx="([\d.]+)"', svg)]
    plot = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    if runs == 1:  # a single run is a point in the middle
        assert dots == [pytest.approx(MARGIN_LEFT + plot / 2, abs=0.1)]
    else:  # the first run a quarter in, the last three quarters: no empty half
        assert dots == [pytest.approx(MARGIN_LEFT + plot / 4, abs=0.1), pytest.approx(MARGIN_LEFT + 3 * plot / 4, abs=0.1)]


# 2. The y axis says the metric's name and its unit once


def test_y_axis_labels_are_the_readable_metric_and_its_unit_once():
    html = render_trends_html(_history(2))
    assert 'class="axis-label y"' in html
    labels = re.findall(r'<text class="axis-label y"[^>]*>([^<]*)</text>', html)
    assert labels == ["tps", "p95 latency (ms)"]
    assert "p95_ms (ms)" not in html and "tps (tps)" not in html
    assert "a tpcb 4 clients: p95 latency" in html


# 3. No "no change" where no change could be looked for


def test_without_the_library_the_page_does_not_claim_no_change():
    html = render_trends_html(_history(8, detector=None))
    assert "the change-point library is not installed" in html
    assert "No split in any series." in html and "No change" not in html


def test_with_too_few_runs_the_page_says_how_many_a_change_needs():
    html = render_trends_html(_history(2))
    assert "2 runs: a change can be found from 6 runs on (3 at each level), after 4 more" in html
    assert "No change" not in html and "No split in any series." in html


def test_with_enough_runs_and_none_changed_the_page_says_no_change():
    html = render_trends_html(_history(2 * MIN_RUNS))
    assert "No change and no split in any series." in html and "a change can be found from" not in html


def test_the_cli_says_how_many_runs_a_change_needs_not_no_change(tmp_path):
    write_nights(tmp_path, [Night() for _ in range(2)])
    result = runner.invoke(app, ["history", "nightly", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # rich wraps long lines
    assert "2 runs: a change can be found from 6 runs on (3 at each level), after 4 more" in said
    assert "no change in" not in said
    # and its runs, and the listing of campaigns, show when they started to the second in UTC
    assert "2026-12-02 02:00:00 UTC" in said and ".000+00:00" not in said
    listed = runner.invoke(app, ["history", "--out", str(tmp_path)])
    assert "2026-12-01 02:00:00 UTC" in " ".join(listed.output.split()) and ".000+00:00" not in listed.output


def test_a_split_that_leaves_too_few_comparable_runs_is_said_so(tmp_path):
    # Given seven runs whose every series splits at run 4 (the workload's duration changed in the matrix)
    write_nights(tmp_path, [Night() for _ in range(3)] + [Night(run={"duration_s": 4}) for _ in range(4)])
    result = runner.invoke(app, ["history", "nightly", "--out", str(tmp_path)])
    said = " ".join(result.output.split())
    assert "7 runs, at most 4 comparable (a split starts a series anew): a change can be found from 6 runs on" in said


# 4. A local run's cost is what it would have cost in AWS


def test_the_runs_table_shows_a_local_runs_cost_as_if_in_aws():
    html = render_trends_html(_history(1))
    assert '">$0.01 if in AWS</td>' in html and "<th>cost</th>" in html
    assert '">$0.01</td>' in render_trends_html(_history(1, priced_as_aws=False))


# 5. Timestamps to the second, in UTC


def test_timestamps_are_shown_to_the_second_in_utc():
    assert utc_second(STARTED) == "2026-11-27 21:15:08 UTC"
    assert utc_second("2026-11-27T22:15:08.9+01:00") == "2026-11-27 21:15:08 UTC"
    assert utc_second("2026-11-27T21:15:08Z") == utc_second("2026-11-27T21:15:08") == "2026-11-27 21:15:08 UTC"
    assert utc_second("not a time") == "not a time"


def test_the_trend_page_and_the_report_show_their_times_to_the_second():
    html = render_trends_html(_history(2))
    assert "2026-11-27 21:15:08 UTC to 2026-11-27 21:15:08 UTC" in html
    assert 'data-label="started">2026-11-27 21:15:08 UTC</td>' in html and ".344708" not in html
    results = CampaignResults.model_validate_json((FIXTURES / "results" / "week1" / "results.json").read_text())
    files = build_reports(results)
    report, summary = files["report.html"].decode(), files["summary.md"].decode()
    assert "started 2024-05-06 02:00:00 UTC · finished 2024-05-06 02:31:12 UTC" in report
    assert "2024-05-06 02:00:00 UTC to 2024-05-06 02:31:12 UTC" in summary
    assert "02:31:12.500" not in report + summary
