"""The HTML report of a real local campaign, opened in headless Chromium (Debian's chromium package)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pgarena.report import REPORT_FILES

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium")
# Headless, offline, no profile left behind: the report must render from the file alone.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]
BROWSER_TIMEOUT_S = 120
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    # `make install` (run by `make test`) installs Debian's chromium as root: its absence is a failure.
    assert CHROMIUM is not None, "chromium is not installed: run `make install` as root (apt-get install chromium)"
    profile = tmp_path / "profile"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module")
def report(demo_campaign) -> Path:
    return demo_campaign.results_dir / "report.html"


@pytest.fixture(scope="module")
def rendered(report, tmp_path_factory) -> subprocess.CompletedProcess:
    # When Chromium loads the report and prints the DOM it rendered
    return chromium(tmp_path_factory.mktemp("dom"), "--dump-dom", report.as_uri())


def test_aggregate_wrote_every_report_next_to_results_json(demo_campaign):
    # Given the campaign ran through the state machine, whose aggregate Lambda writes the reports to S3
    # Then the local runtime brought them back with results.json
    for name in REPORT_FILES:
        assert (demo_campaign.results_dir / name).stat().st_size > 0, name


def test_report_renders_its_charts_in_chromium(rendered):
    # Then the DOM holds every chart the campaign calls for, drawn
    assert rendered.returncode == 0, rendered.stderr[-2000:]
    dom = rendered.stdout
    for chart in (
        "chart-throughput",
        "chart-latency",
        "chart-progress-tpcb-c1",
        "chart-progress-tpcb-c4",
        "chart-scaling-tpcb",
        "chart-cost",
    ):
        assert re.search(rf'<svg id="{chart}" class="chart', dom), chart
    assert len(re.findall(r'<rect class="bar', dom)) >= 12  # 2 targets x 3 client counts, tps and cost
    assert len(re.findall(r'<circle class="dot"', dom)) >= 6


def test_report_has_no_script_and_logs_no_error(rendered):
    assert "<script" not in rendered.stdout
    assert not re.search(r"Uncaught|CONSOLE\(\d+\).*error", rendered.stderr, flags=re.IGNORECASE)


def test_report_ranks_the_embedded_targets_and_lists_the_unreachable_one(rendered):
    dom = rendered.stdout
    assert re.search(r'<section id="ranking">.*durable.*tuned|<section id="ranking">.*tuned.*durable', dom, flags=re.S)
    incidents = dom[dom.index('<section id="incidents">') :]
    assert "unreachable" in incidents and "connection_refused" in incidents


def test_screenshot_is_a_png(report, tmp_path):
    # When Chromium takes a screenshot of the report
    png = tmp_path / "report.png"
    result = chromium(tmp_path, f"--screenshot={png}", "--window-size=1280,6400", report.as_uri())
    # Then it is a real image of some size; keep a copy for people to look at
    assert result.returncode == 0, result.stderr[-2000:]
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 50_000
    shutil.copy(png, report.parent / "report.png")
