import csv
import io
import re
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.model.errors import ErrorInfo
from pgarena.model.results import CampaignResults, TargetResult, WorkloadResult
from pgarena.report import CONTENT_TYPES, REPORT_FILES, build_reports, write_reports, write_to_folder
from tests.conftest import FIXTURES

WEEK1 = FIXTURES / "results" / "week1"
# Elements that never have an end tag; self-closed SVG elements (<line/>) come through handle_startendtag.
VOID = {"meta", "link", "br", "img", "input", "hr", "col", "area", "base", "wbr", "source"}


class Document(HTMLParser):
    """Collects ids, tags and links, and checks that every element is closed in order."""

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.ids: set[str] = set()
        self.tags: list[str] = []
        self.links: list[str] = []
        self.classes: dict[str, set[str]] = {}

    def handle_starttag(self, tag, attrs):
        self._seen(tag, dict(attrs))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self._seen(tag, dict(attrs))

    def _seen(self, tag, attrs):
        self.tags.append(tag)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name):
                self.links.append(attrs[name])
        for css in (attrs.get("class") or "").split():
            self.classes.setdefault(tag, set()).add(css)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()


def parse(html: str) -> Document:
    doc = Document()
    doc.feed(html)
    doc.close()
    return doc


@pytest.fixture(scope="module")
def results() -> CampaignResults:
    return CampaignResults.model_validate_json((WEEK1 / "results.json").read_text())


@pytest.fixture(scope="module")
def files(results) -> dict[str, bytes]:
    return build_reports(results)


def table(files, name):
    return list(csv.DictReader(io.StringIO(files[name].decode())))


def test_writer_receives_every_report_with_its_content_type(results):
    # Given a writer that records what it is handed
    written = {}
    # When the reports are written
    names = write_reports(results, lambda name, data, content_type: written.update({name: (data, content_type)}))
    # Then every report arrives once, non-empty, with its content type
    assert names == list(REPORT_FILES) == list(written)
    assert written["report.html"][1] == "text/html; charset=utf-8"
    assert written["targets.csv"][1] == "text/csv; charset=utf-8"
    assert all(data for data, _ in written.values())


def test_ranking_csv_lists_ranked_and_unranked_targets(files):
    rows = table(files, "ranking.csv")
    assert [(r["rank"], r["target"]) for r in rows] == [("1", "rds"), ("2", "aurora"), ("3", "azure"), ("", "cloudsql")]
    assert rows[3]["reason"].startswith("failed: too_many_clients")
    assert rows[0]["flags"] == "tpcb at 8 clients ran with 6 (clamped): not compared"
    assert float(rows[1]["throughput_score"]) == pytest.approx(0.9471)


def test_workloads_csv_has_one_row_per_run(files, results):
    rows = table(files, "workloads.csv")
    assert len(rows) == sum(len(t.workloads) for t in results.targets)
    clamped = [r for r in rows if r["clamped"] == "true"]
    assert {(r["target"], r["clients"], r["requested_clients"]) for r in clamped} == {("rds", "6", "8")}
    assert all(r["campaign_id"] == "providers-20240506" for r in rows)


def test_progress_csv_has_one_row_per_interval(files, results):
    rows = table(files, "progress.csv")
    assert len(rows) == sum(len(w.progress) for t in results.targets for w in t.workloads)
    assert {"elapsed_s", "tps", "latency_avg_ms", "repetition"} <= set(rows[0])


def test_metrics_csv_carries_scaling_efficiency(files):
    rows = {(r["target"], r["clients"]): r for r in table(files, "metrics.csv")}
    assert float(rows[("aurora", "8")]["scaling_efficiency"]) == pytest.approx(5172.4 / 7200, rel=1e-4)
    assert rows[("azure", "8")]["collapsed"] == "true"


def test_targets_csv_has_server_and_cost(files):
    rows = {r["target"]: r for r in table(files, "targets.csv")}
    assert rows["rds"]["max_connections"] == "200" and rows["rds"]["hourly_cost_usd"] == "0.712"
    assert rows["cloudsql"]["error_kind"] == "too_many_clients"


def test_summary_opens_with_the_verdict_and_ranking(files):
    md = files["summary.md"].decode()
    assert md.startswith("# pgarena · providers\n")
    # (a results.json written before pairwise comparisons were stored: the verdict says it rests on scores alone)
    assert "rds ranks first with a composite score of 0.979; then aurora" in md
    assert "(this results.json stores no pairwise comparisons: scores alone)." in md
    # (no site, round trip or worker size stored either: the footing column says '-')
    assert "| 1 | rds | rds | - | 0.979 |" in md
    assert "| – | cloudsql | cloudsql | - | – |" in md


def test_summary_lists_incidents_with_raw_links(files):
    md = files["summary.md"].decode()
    assert "`tps_collapse`: tps fell from 457.0 to 15.2" in md
    assert "[raw/cloudsql/tpcb/c8-r1/pgbench.log](raw/cloudsql/tpcb/c8-r1/pgbench.log)" in md


def test_html_report_parses_with_every_element_closed(files):
    doc = parse(files["report.html"].decode())
    assert doc.errors == [] and doc.stack == []
    assert doc.tags[0] == "html"


def test_html_report_has_every_section(files):
    doc = parse(files["report.html"].decode())
    assert {
        "verdict",
        "ranking",
        "throughput",
        "latency",
        "stability",
        "scaling",
        "cost",
        "loads",
        "incidents",
        "servers",
        "files",
    } <= doc.ids


def test_html_report_has_its_charts_as_inline_svg(files):
    doc = parse(files["report.html"].decode())
    assert {
        "chart-throughput",
        "chart-latency",
        "chart-progress-tpcb-c1",
        "chart-progress-tpcb-c8",
        "chart-scaling-tpcb",
        "chart-cost",
    } <= doc.ids
    assert {"chart", "throughput", "timeseries", "scaling", "cost"} <= doc.classes["svg"]
    assert doc.tags.count("svg") == 8  # throughput, latency, a time series per client count (4), scaling, cost
    assert {"bar", "faded"} <= doc.classes["rect"]  # rds's clamped 8-client bar is drawn faded


def test_html_report_needs_no_script_and_no_network(files):
    html = files["report.html"].decode()
    doc = parse(html)
    assert "script" not in doc.tags and "link" not in doc.tags
    external = [link for link in doc.links if re.match(r"^[a-z]+:", link) and not link.startswith("#")]
    assert external == []
    assert "@import" not in html and "url(" not in html


def test_html_incidents_link_to_raw_files(files):
    doc = parse(files["report.html"].decode())
    assert "raw/azure/tpcb/c8-r1/monitor.jsonl" in doc.links
    assert "raw/cloudsql/tpcb/c8-r2/pgbench.log" in doc.links


def test_html_escapes_names_and_messages(results):
    # Given a failure message holding markup
    hostile = results.model_copy(deep=True)
    hostile.targets[3].error = ErrorInfo(kind="tool_failed", message="<script>alert(1)</script>")
    hostile.targets[3].workloads[-1].error = hostile.targets[3].error
    # When the report is built
    html = build_reports(hostile)["report.html"].decode()
    # Then it is shown as text
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def _hostile(results: CampaignResults, provider: str, message: str) -> CampaignResults:
    hostile = results.model_copy(deep=True)
    for target in hostile.targets:
        target.provider = provider
    hostile.targets[3].error = ErrorInfo(kind="tool_failed", message=message)
    hostile.targets[3].workloads[-1].error = hostile.targets[3].error
    return hostile


@pytest.mark.parametrize("formula", ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"])
def test_csv_text_cells_that_a_spreadsheet_would_run_are_quoted(results, formula):
    # Given a provider and an error message a spreadsheet would read as a formula
    files = build_reports(_hostile(results, formula, formula))
    # When targets.csv and ranking.csv are read back
    targets, ranking = table(files, "targets.csv"), table(files, "ranking.csv")
    # Then each such cell starts with a single quote (OWASP), its text otherwise kept
    assert {row["provider"] for row in targets} == {"'" + formula}
    assert {row["provider"] for row in ranking} == {"'" + formula}
    assert targets[3]["error_message"] == "'" + formula


def test_csv_numbers_stay_numbers(results):
    # Given a campaign whose figures include a negative one
    hostile = results.model_copy(deep=True)
    hostile.targets[0].hourly_cost_usd = -1.5
    # When targets.csv is written
    rows = table(build_reports(hostile), "targets.csv")
    # Then the number is written as a number, not quoted as text
    assert rows[0]["hourly_cost_usd"] == "-1.5"
    assert float(rows[0]["score"]) == pytest.approx(float(table(build_reports(results), "targets.csv")[0]["score"]))


def test_summary_escapes_html_in_names_and_messages(results):
    # Given a provider, a target and a failure message holding HTML
    hostile = _hostile(results, "<img src=x onerror=alert(1)>", "<script>alert(1)</script>")
    hostile.targets[3].name = "<b>cloudsql</b>"
    # When the Markdown summary is built (Markdown renders inline HTML)
    summary = build_reports(hostile)["summary.md"].decode()
    # Then no tag of theirs survives, the text is still there
    assert "<img" not in summary and "<script>" not in summary and "<b>" not in summary
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in summary and "&lt;b&gt;cloudsql&lt;/b&gt;" in summary


def test_campaign_without_sweep_or_prices_leaves_those_sections_out():
    # Given one target, one client count, no price
    results = CampaignResults(
        campaign_id="c-1",
        campaign="c",
        started_at="2024-01-01T00:00:00+00:00",
        finished_at="2024-01-01T00:01:00+00:00",
        targets=[
            TargetResult(
                name="a",
                provider="p",
                status="succeeded",
                workloads=[WorkloadResult(name="tpcb", tool="pgbench", clients=4, repetition=1, status="succeeded", tps=100.0)],
            )
        ],
        ranking=[],
    )
    doc = parse(build_reports(results)["report.html"].decode())
    assert "chart-throughput" in doc.ids
    assert not {"scaling", "cost", "chart-cost"} & doc.ids


def test_campaign_where_everything_failed_still_reports():
    results = CampaignResults(
        campaign_id="c-1",
        campaign="c",
        started_at="s",
        finished_at="f",
        ranking=[],
        targets=[
            TargetResult(
                name="a",
                provider="p",
                status="failed",
                error=ErrorInfo(kind="dns_failure", message="could not translate host name"),
            )
        ],
    )
    files = build_reports(results)
    assert "No target could be ranked" in files["summary.md"].decode()
    assert "could not translate host name" in files["report.html"].decode()


def test_report_files_land_in_the_folder(results, tmp_path):
    paths = write_to_folder(results, tmp_path)
    assert sorted(p.name for p in paths) == sorted(CONTENT_TYPES)
    assert all(p.stat().st_size > 0 for p in paths)


def test_cli_rebuilds_the_reports_from_results_json(tmp_path):
    # Given a campaign folder with only results.json
    (tmp_path / "results.json").write_bytes((WEEK1 / "results.json").read_bytes())
    # When `pgarena report DIR` runs
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    # Then the reports are written next to it
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report.html").read_text().startswith("<!doctype html>")
    assert (tmp_path / "summary.md").exists() and (tmp_path / "ranking.csv").exists()


def test_cli_report_without_results_json_says_so(tmp_path):
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2


def test_a_shared_server_is_said_so_in_the_report_and_the_summary(results):
    # Given a target whose campaign shared its server (connections.share_server) and one that did not
    shared = results.model_copy(deep=True)
    first = shared.targets[0]
    assert first.server is not None
    first.server = first.server.model_copy(update={"share_server": True})
    files = build_reports(shared)
    # Then both reports flag that one, and only it
    assert files["summary.md"].decode().count("(server shared with other campaigns)") == 1
    assert files["report.html"].decode().count("server shared with other campaigns</span>") == 1
    assert "server shared with other campaigns" not in build_reports(results)["summary.md"].decode()


def test_the_stability_table_says_its_cv_is_the_noisiest_runs(files):
    # The ranking's stability metric averages 1 - CV over a point's runs; the table shows the worst run:
    # its heading says so, so the two figures are not read as one
    html = files["report.html"].decode()
    assert '<th class="num">CV (noisiest run)</th>' in html and "mean of 1 − CV over the point's runs" in html
