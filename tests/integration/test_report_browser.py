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
DESKTOP, PHONE = 1280, 390  # an iPhone 12 to 15 is 390 CSS px wide
FIRST_SCREEN_PX = 800
MIN_TEXT_PX = 10
# Injected into a copy of the report (the report itself has no script): measures the page, as laid out at
# the window's width, once everything has loaded. `wide`: every card, section, figure or table that scrolls
# sideways within itself; `small`: SVG text drawn under MIN_TEXT_PX (its font size, in user units, times its
# scale on screen); `broken`: a target's name whose line breaks fall anywhere but after a hyphen or a space
# (character by character: where the next character starts a new line); `boxes`: where the answer lies.
# Framed (the phone's width, below), it hands its figures to the frame's page.
MEASURE = """<script>
window.addEventListener('load', () => {
  const page = document.scrollingElement;
  const wide = [...document.querySelectorAll('header, section, .card, figure, table')]
    .filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => `${e.id || e.className || e.tagName}: ${e.scrollWidth} > ${e.clientWidth}`);
  const small = [...document.querySelectorAll('svg text')].filter(t => t.getClientRects().length).map(t => {
    const m = t.getScreenCTM();
    const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    return {chart: t.closest('svg').id, text: t.textContent, px: Math.round(px * 100) / 100};
  }).filter(t => t.px < MIN_TEXT_PX);
  const broken = [], lines = {};
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    for (const name of NAMES) {
      for (let at = node.data.indexOf(name); at >= 0; at = node.data.indexOf(name, at + 1)) {
        const range = document.createRange();
        let top = null, count = 0;
        for (let i = at; i < at + name.length; i++) {
          range.setStart(node, i); range.setEnd(node, i + 1);
          const rect = range.getClientRects()[0];
          if (!rect) { top = null; continue; }  // not drawn (a title, a closed details)
          if (top === null) count = Math.max(count, 1);
          else if (Math.abs(rect.top - top) > 1) {
            count++;
            if (!/[-\\s]/.test(node.data[i - 1])) broken.push(`${name} before "${node.data.slice(i, i + 8)}" in <${node.parentElement.tagName.toLowerCase()} class="${node.parentElement.className.baseVal ?? node.parentElement.className}">`);
          }
          top = rect.top;
        }
        if (count) lines[name] = Math.max(lines[name] || 0, count);
      }
    }
  }
  const box = selector => { const e = document.querySelector(selector); if (!e) return null; const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
  const boxes = {verdict: box('#verdict .lead'), ranking: box('#ranking table')};
  const out = {scrollWidth: page.scrollWidth, clientWidth: page.clientWidth, wide, small, broken, lines, boxes};
  if (window.parent !== window) { window.parent.postMessage(JSON.stringify(out), '*'); return; }
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""
# Headless Chromium will not make its window narrower than 500 px (--window-size=390,... gives a 500 px page,
# with or without --force-device-scale-factor, --screen-info or --ozone-override-screen-size): the phone's
# width is a 390 px frame instead, whose page lays out, and answers media queries, at the frame's width. This
# page holds the frame and writes down what the framed MEASURE hands it.
FRAME = """<!doctype html><html><body style="margin: 0">
<iframe src="{src}" style="width: {width}px; height: {height}px; border: 0; display: block"></iframe>
<script>
window.addEventListener('message', e => {{
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = e.data;
  document.body.appendChild(pre);
}});
</script></body></html>"""


CSP = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>')


def laid_out(page: Path, tmp_path: Path, width: int = DESKTOP, names: tuple[str, ...] = ()) -> tuple[dict, str]:
    """The page as Chromium lays it out `width` px wide: MEASURE's figures (`names`: the target names whose
    line breaks it checks) and the DOM. The page forbids every script (its Content-Security-Policy, asserted
    here): the probe, a copy made to measure it, drops the policy so that the measuring script runs; the
    layout is the page's. Under 500 px the probe is framed (FRAME)."""
    text = page.read_text()
    assert len(CSP.findall(text)) == 1 and "default-src 'none'" in CSP.findall(text)[0]
    probe = page.parent / f"measured-{page.name}"
    script = MEASURE.replace("MIN_TEXT_PX", str(MIN_TEXT_PX)).replace("NAMES", json.dumps(list(names)))
    probe.write_text(CSP.sub("", text).replace("</body>", script + "</body>"))
    opened = probe
    if width < 500:
        opened = page.parent / f"framed-{width}-{page.name}"
        opened.write_text(FRAME.format(src=probe.name, width=width, height=FIRST_SCREEN_PX))
    window = f"--window-size={max(width, 500)},{FIRST_SCREEN_PX if width < 500 else 2000}"
    result = chromium(tmp_path, window, "--virtual-time-budget=5000", "--dump-dom", opened.as_uri())
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


NAMES = ("durable", "tuned", "unreachable")
LONG_NAMES = tuple(f"{name}{LONG}" for name in NAMES)


def test_report_has_no_horizontal_overflow_at_1280_px(long_names_report, tmp_path):
    page = long_names_report.read_text()
    assert f"durable{LONG}" in page and " on x86_64" in page  # the long strings are there to be laid out
    # When Chromium lays it out in a 1,280 px window
    measured, _ = laid_out(long_names_report, tmp_path, DESKTOP, LONG_NAMES)
    # Then the page is no wider than the window, and no card or section scrolls sideways within it
    assert measured["clientWidth"] == DESKTOP, measured
    assert measured["scrollWidth"] <= measured["clientWidth"], measured
    assert measured["wide"] == [], measured
    # and no name is broken inside a word, nor any chart's text drawn under 10 px
    assert set(measured["lines"]) == set(LONG_NAMES) and measured["broken"] == [], measured
    assert measured["small"] == [], measured["small"][:10]
    # and a screenshot at that width is kept for people to look at
    png = long_names_report.parent / "report-1280.png"
    shot = chromium(tmp_path, f"--screenshot={png}", "--window-size=1280,6400", long_names_report.as_uri())
    assert shot.returncode == 0 and png.read_bytes().startswith(PNG_MAGIC)


def test_report_reads_on_a_phone(long_names_report, tmp_path):
    # When Chromium lays the report out 390 px wide (a phone), its targets' names 50 characters longer
    measured, _ = laid_out(long_names_report, tmp_path, PHONE, LONG_NAMES)
    # Then the page is laid out at that width (not at headless Chromium's smallest window, 500 px) and no wider:
    # no table, card or section scrolls sideways (each table's rows are stacked, a cell per line)
    assert measured["clientWidth"] == PHONE, measured
    assert measured["scrollWidth"] <= measured["clientWidth"], measured
    assert measured["wide"] == [], measured
    # every name wraps after a hyphen only, never inside a word; every chart's text is drawn at 10 px or more
    assert set(measured["lines"]) == set(LONG_NAMES) and measured["broken"] == [], measured
    assert measured["small"] == [], measured["small"][:10]


def test_short_names_stay_on_one_line_on_a_phone(report, tmp_path):
    # When the campaign's own report is laid out 390 px wide
    measured, _ = laid_out(report, tmp_path, PHONE, NAMES)
    # Then each target's name, wherever it is drawn (cards, tables, legends, charts), is on one line
    assert measured["clientWidth"] == PHONE and measured["scrollWidth"] <= PHONE, measured
    assert measured["lines"] == dict.fromkeys(NAMES, 1), measured


def test_the_verdict_and_the_ranking_are_on_the_first_screen(report, tmp_path):
    # When the campaign's report is laid out in a 1,280 px window
    measured, _ = laid_out(report, tmp_path, DESKTOP, NAMES)
    # Then the verdict and the whole ranking table are within its first 800 px: the answer is read unscrolled
    boxes = measured["boxes"]
    assert 0 < boxes["verdict"]["top"] < boxes["verdict"]["bottom"] <= FIRST_SCREEN_PX, boxes
    assert boxes["verdict"]["bottom"] < boxes["ranking"]["top"] < boxes["ranking"]["bottom"] <= FIRST_SCREEN_PX, boxes
    assert measured["small"] == [] and measured["broken"] == [], measured


def test_latency_chart_shows_p99_and_the_versions_side_by_side(rendered, demo_campaign):
    dom = rendered.stdout
    latency = dom[dom.index('<svg id="chart-latency"') :]
    latency = latency[: latency.index("</svg>")]
    assert re.search(r"<title>durable p99: [\d,.]+ ms</title>", latency)
    # the client tool's version beside the server's, both full versions folded under them
    tool = json.loads((demo_campaign.results_dir / "results.json").read_text())["targets"][0]["workloads"][0]["tool"]
    side_by_side = (
        rf'<summary><span class="versions">{tool} \d+\.\d+ →</span> <span class="versions">PostgreSQL \d+\.\d+</span></summary>'
    )
    assert len(re.findall(side_by_side, dom)) == 2, dom[dom.index('<section id="servers">') :][:3000]
    assert re.search(rf"client: {tool} \(PostgreSQL\) \d+\.\d+; server: PostgreSQL \d+\.\d+ on ", dom)


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
