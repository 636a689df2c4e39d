"""The HTML report of a real local campaign, opened in headless Chromium (Debian's chromium package)."""

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pgarena.analysis.latency_intervals import point_latency
from pgarena.analysis.merge import run_intervals
from pgarena.model.metrics import RunHistograms
from pgarena.model.results import CampaignResults, StepSummary
from pgarena.model.series import ShardSeries
from pgarena.report import REPORT_FILES, write_to_folder

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
        "chart-latency-time-tpcb-c4",
        "chart-distribution-tpcb-c4",
        "chart-latency-clients-tpcb",
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


# What a DBA's targets are called: a role, a region, an instance class, a volume and a major.
LONG = "-primary-eu-west-1-r6g-2xlarge-gp3-16000iops-pg18"
# Injected into a copy of the report (the report itself has no script): measures the page, as laid out at
# the window's width, and every card and section, once everything has loaded.
MEASURE = """<script>
window.addEventListener('load', () => {
  const page = document.scrollingElement;
  const wide = [...document.querySelectorAll('header, section, .card, figure')]
    .filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => `${e.id || e.className}: ${e.scrollWidth} > ${e.clientWidth}`);
  const out = document.createElement('pre');
  out.id = 'measured';
  out.textContent = JSON.stringify({scrollWidth: page.scrollWidth, clientWidth: page.clientWidth, wide});
  document.body.appendChild(out);
});
</script>"""


CSP = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>')


def laid_out(page: Path, tmp_path: Path) -> tuple[dict, str]:
    """The page as Chromium lays it out in a 1,280 px window: MEASURE's figures and the DOM. The page forbids
    every script (its Content-Security-Policy, asserted here): the probe, a copy made to measure it, drops
    the policy so that the measuring script runs; the layout is the page's."""
    text = page.read_text()
    assert len(CSP.findall(text)) == 1 and "default-src 'none'" in CSP.findall(text)[0]
    probe = page.parent / f"measured-{page.name}"
    probe.write_text(CSP.sub("", text).replace("</body>", MEASURE + "</body>"))
    result = chromium(tmp_path, "--window-size=1280,2000", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'<pre id="measured">(.*?)</pre>', result.stdout, flags=re.S)
    assert found, result.stdout[-2000:]
    return json.loads(html.unescape(found.group(1))), result.stdout


@pytest.fixture(scope="module")
def long_names_report(demo_campaign, tmp_path_factory) -> Path:
    # Given the real campaign's results with every target's name 50 characters longer, rendered again
    # (the servers' version strings are PostgreSQL's own: "PostgreSQL 18.6 on x86_64-pc-linux-gnu, compiled by ...")
    text = (demo_campaign.results_dir / "results.json").read_text()
    for name in ("durable", "tuned", "unreachable"):
        text = text.replace(f'"{name}', f'"{name}{LONG}')
    out = tmp_path_factory.mktemp("long-names")
    write_to_folder(CampaignResults.model_validate_json(text), out)
    return out / "report.html"


def test_report_has_no_horizontal_overflow_at_1280_px(long_names_report, tmp_path):
    page = long_names_report.read_text()
    assert f"durable{LONG}" in page and " on x86_64" in page  # the long strings are there to be laid out
    # When Chromium lays it out in a 1,280 px window
    measured, _ = laid_out(long_names_report, tmp_path)
    # Then the page is no wider than the window, and no card or section scrolls sideways within it
    assert measured["clientWidth"] == 1280, measured
    assert measured["scrollWidth"] <= measured["clientWidth"], measured
    assert measured["wide"] == [], measured
    # and a screenshot at that width is kept for people to look at
    png = long_names_report.parent / "report-1280.png"
    shot = chromium(tmp_path, f"--screenshot={png}", "--window-size=1280,6400", long_names_report.as_uri())
    assert shot.returncode == 0 and png.read_bytes().startswith(PNG_MAGIC)


def test_latency_chart_shows_p99_and_the_version_is_folded(rendered):
    dom = rendered.stdout
    latency = dom[dom.index('<svg id="chart-latency"') :]
    latency = latency[: latency.index("</svg>")]
    assert re.search(r"<title>durable p99: [\d,.]+ ms</title>", latency)
    # the full version string is kept, folded under its first words
    assert re.search(r"<summary>PostgreSQL \d+\.\d+</summary>", dom)


def test_latency_per_interval_and_by_percentile_is_recomputed_from_the_runs_raw_files(demo_campaign, rendered):
    # Given the campaign's results.json, and each run's raw series.json (per-second histograms) and summary.json
    folder = demo_campaign.results_dir
    results = CampaignResults.model_validate_json((folder / "results.json").read_text())
    checked = 0
    for target, metrics in zip(results.targets, results.metrics, strict=True):
        for point in metrics.points:
            if point.runs == 0:
                continue
            merged = point.merged_latency
            assert merged is not None and merged.intervals and merged.distribution, (target.name, point.clients)
            runs = [w for w in target.workloads if w.clients == point.clients and w.status == "succeeded"]
            kept = []
            for run in runs:
                (series,) = [p for p in run.raw if p.endswith("/series.json")]
                summary = (folder / series).parent / "summary.json"  # the step's summary, beside its raw output
                histogram = StepSummary.model_validate_json(summary.read_text()).latency_histogram
                intervals = run_intervals([ShardSeries.model_validate_json((folder / series).read_text())], merged.interval_s)
                kept.append(RunHistograms(histogram=histogram, interval_s=merged.interval_s, intervals=intervals))
            # When the point's latency is computed again from them, Then it is what results.json holds
            assert point_latency(kept) == merged
            # and the run's own p99 is the merged one's (one run per point here)
            assert merged.latency_ms.p99 == runs[0].latency_ms.p99
            checked += 1
    assert checked == 6  # 2 targets x 3 client counts
    # And the report draws the distribution ticked up the nines, the latency per interval with each percentile
    dom = rendered.stdout
    distribution = dom[dom.index('<svg id="chart-distribution-tpcb-c4"') :]
    distribution = distribution[: distribution.index("</svg>")]
    assert ">50%</text>" in distribution and ">99%</text>" in distribution
    over_time = dom[dom.index('<svg id="chart-latency-time-tpcb-c4"') :]
    assert re.search(r'data-series="durable p99"', over_time[: over_time.index("</svg>")])
