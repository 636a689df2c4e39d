"""`pgarena history` on real output: the index reads a real local campaign's folder, and the trend page of
eight runs (built from a real results.json, tests/unit/history_runs.py) opens in headless Chromium at
1,280 px without horizontal overflow, its charts drawn and its change marked."""

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgarena.analysis.history import index, trends
from pgarena.cli import app
from tests.integration.test_report_browser import LONG, PHONE, PNG_MAGIC, chromium, laid_out
from tests.unit.history_runs import Night, write_nights

pytestmark = pytest.mark.integration
runner = CliRunner()


def test_the_index_reads_a_real_campaign(demo_campaign):
    # Given the session's real local campaign, in the --out root it was written to (beside its logs/)
    root = demo_campaign.results_dir.parent
    found = index.read_runs(root)
    # Then history finds it, one run, as results.json says
    assert found.unreadable == []
    (entry,) = index.campaigns(found)
    assert entry.campaign == demo_campaign.results.campaign and entry.runs == 1
    told = trends.history(found, entry.campaign, str(root))
    (run,) = told.runs
    assert run.campaign_id == demo_campaign.campaign_id and run.status == "completed"
    assert run.failed_targets == ["unreachable"] and run.headline and run.cost_usd
    # and every complete point of the measured targets is a series of one run, tps and p95
    series = {(s.target, s.workload, s.clients, s.metric) for s in told.series}
    assert {("durable", "tpcb", 4, "tps"), ("tuned", "tpcb", 4, "p95_ms")} <= series
    assert all(len(s.points) == 1 and not s.splits and not s.changes for s in told.series)
    result = runner.invoke(app, ["history", "--out", str(root)])
    assert result.exit_code == 0 and entry.campaign in result.output


@pytest.fixture(scope="module")
def trend_page(tmp_path_factory) -> Path:
    # Given eight runs whose targets have long names, b 25% slower from run 5 on, and a's settings changed at 7
    root = tmp_path_factory.mktemp("nights")
    nights = [Night() for _ in range(4)] + [Night(speed={"b": 0.75}) for _ in range(2)]
    nights += [Night(speed={"b": 0.75}, settings={"a": {"shared_buffers": "32768"}}) for _ in range(2)]
    write_nights(root, nights, suffix=LONG)
    page = tmp_path_factory.mktemp("page") / "trends.html"
    result = runner.invoke(app, ["history", "nightly", "--out", str(root), "--html", str(page)])
    assert result.exit_code == 0, result.output
    return page


def test_trend_page_has_no_horizontal_overflow_at_1280_px(trend_page, tmp_path):
    page = trend_page.read_text()
    assert f"b{LONG}" in page and "split at run 7" in page and "since run 5" in page
    # When Chromium lays it out in a 1,280 px window
    measured, dom = laid_out(trend_page, tmp_path)
    # Then the page is no wider than the window, and no section or chart scrolls sideways within it
    assert measured["clientWidth"] == 1280, measured
    assert measured["scrollWidth"] <= measured["clientWidth"], measured
    assert measured["wide"] == [], measured
    # and the DOM holds a chart per series, with the change and the split marked where they are
    assert len(re.findall(r'<svg id="trend-\d+-', dom)) == 4
    assert len(re.findall(r'<g class="event">', dom)) == 4  # b's change (tps, p95), a's split (tps, p95)
    # and every chart's x axis is labelled at whole run numbers over the eight runs, in the metric's words
    x_labels = [t for t in re.findall(r'<text class="tick x"[^>]*>([^<]*)</text>', dom) if t]
    assert x_labels == [str(run) for run in range(1, 9)] * 4
    assert "p95 latency (ms)" in dom and "p95_ms" not in dom
    assert "<script" not in page
    png = trend_page.parent / "trends-1280.png"
    shot = chromium(tmp_path, f"--screenshot={png}", "--window-size=1280,4000", trend_page.as_uri())
    assert shot.returncode == 0 and png.read_bytes().startswith(PNG_MAGIC)


def test_trend_page_reads_on_a_phone(trend_page, tmp_path):
    # When Chromium lays the trend page out 390 px wide (a phone)
    names = (f"a{LONG}", f"b{LONG}")
    measured, _ = laid_out(trend_page, tmp_path, PHONE, names)
    # Then nothing is wider than the screen, no name is broken inside a word, no chart text is under 10 px
    assert measured["clientWidth"] == PHONE and measured["scrollWidth"] <= PHONE, measured
    assert measured["wide"] == [] and measured["broken"] == [] and set(measured["lines"]) == set(names), measured
    assert measured["small"] == [], measured["small"][:10]
