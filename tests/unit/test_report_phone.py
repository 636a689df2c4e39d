"""What lets the HTML report read on a phone, short of a browser (tests/integration/test_report_browser.py lays
it out in Chromium at 390 px): each body cell labelled with its column, chart text sized by the stylesheet
only, failures and versions folded to one line."""

import re

import pytest

from pgarena.model.results import CampaignResults, TargetResult, WorkerFacts, WorkloadResult
from pgarena.report import build_reports
from pgarena.report.stacked import column_labels, label_cells
from pgarena.report.view import RankRow, short_version, tool_versions
from tests.conftest import FIXTURES

WEEK1 = FIXTURES / "results" / "week1"


@pytest.fixture(scope="module")
def page() -> str:
    return build_reports(CampaignResults.model_validate_json((WEEK1 / "results.json").read_text()))["report.html"].decode()


def test_each_body_cell_is_labelled_with_its_column():
    table = (
        '<table class="t"><thead><tr><th>target</th><th class="num" title="x">tps <span>(mean)</span></th>'
        "<th>a &amp; b</th></tr></thead>"
        '<tbody><tr><td>x</td><td class="num">1</td><td>2</td></tr><tr><td>y</td><td colspan="2">none</td></tr></tbody></table>'
    )
    labelled = label_cells(table)
    assert (
        '<td data-label="target">x</td><td class="num" data-label="tps (mean)">1</td><td data-label="a &amp; b">2</td>'
        in labelled
    )
    # a cell spanning columns is no one column's: left unlabelled, and the row's next cells still counted
    assert '<td data-label="target">y</td><td colspan="2">none</td>' in labelled


def test_a_row_header_takes_its_column_and_a_table_without_header_is_left_alone():
    matrix = "<table><thead><tr><th></th><th>a</th><th>b</th></tr></thead><tbody><tr><th>a</th><td>–</td><td>1x</td></tr></tbody></table>"
    assert '<tr><th>a</th><td data-label="a">–</td><td data-label="b">1x</td></tr>' in label_cells(matrix)
    bare = "<table><tr><td>1</td></tr></table>"
    assert label_cells(bare) == bare


def test_a_header_spanning_columns_labels_each_and_a_word_break_is_no_space():
    assert column_labels('<tr><th colspan="2">p95</th><th>max_<wbr>connections</th></tr>') == ["p95", "p95", "max_connections"]


def test_every_body_cell_of_the_report_is_labelled(page):
    # Then every table the template writes (now or later) stacks on a phone with its labels
    unlabelled = [
        cell
        for table in re.findall(r"<table\b.*?</table>", page, flags=re.S)
        if "<thead" in table
        for cell in re.findall(r"<td\b[^>]*>", table[table.index("</thead>") :])
        if "data-label=" not in cell and "colspan=" not in cell
    ]
    assert unlabelled == []


def test_chart_text_takes_its_size_from_the_stylesheet(page):
    # A chart's text is sized by report.css, larger on a narrow screen: an inline style would override it
    texts = re.findall(r"<text\b[^>]*>", page)
    assert len(texts) > 50
    assert [t for t in texts if re.search(r'style="[^"]*font-size', t)] == []


def test_a_failure_is_folded_to_its_kind():
    row = RankRow("t", "p", "failed", reason="failed: connection_refused: could not connect: to host")
    assert (row.reason_head, row.reason_detail) == ("failed: connection_refused", "could not connect: to host")
    plain = RankRow("t", "p", "succeeded", reason="clamped: not compared")
    assert (plain.reason_head, plain.reason_detail) == ("clamped: not compared", "")


@pytest.mark.parametrize(
    ("printed", "short"),
    [
        ("pgbench (PostgreSQL) 18.6", "pgbench 18.6"),
        ("pgbench (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)\nmore", "pgbench 15.20"),
        ("sysbench 1.0.20", "sysbench 1.0.20"),
        ("1.2.3", "tool 1.2.3"),
    ],
)
def test_a_tool_version_is_shortened_to_its_name_and_number(printed, short):
    tool = "tool" if printed == "1.2.3" else printed.split()[0]
    assert short_version(tool, printed) == short


def test_a_target_shows_each_client_version_its_runs_reported_once():
    def run(tool: str, version: str | None) -> WorkloadResult:
        worker = WorkerFacts(tools={tool: version}) if version else None
        return WorkloadResult(name="w", tool=tool, clients=1, repetition=1, status="succeeded", worker=worker)

    target = TargetResult(
        name="t",
        provider="p",
        status="succeeded",
        workloads=[
            run("pgbench", "pgbench (PostgreSQL) 18.6"),
            run("pgbench", None),
            run("pgbench", "pgbench (PostgreSQL) 18.6"),
        ],
    )
    assert tool_versions(target) == [("pgbench 18.6", "pgbench (PostgreSQL) 18.6")]


def test_both_reports_show_the_client_beside_the_server():
    # Given a real local campaign's results (its workers reported the tool's version, preflight the server's)
    results = CampaignResults.model_validate_json((FIXTURES / "results" / "nightly" / "results.json").read_text())
    files = build_reports(results)
    html, md = files["report.html"].decode(), files["summary.md"].decode()
    # Then each target's row says both, side by side, the full strings folded under them in the page
    side_by_side = '<summary><span class="versions">pgbench 18.6 →</span> <span class="versions">PostgreSQL 18.6</span></summary>'
    assert html.count(side_by_side) == 2
    assert "client: pgbench (PostgreSQL) 18.6; server: PostgreSQL 18.6 on x86_64-pc-linux-gnu" in html
    assert md.count("| pgbench 18.6 → PostgreSQL 18.6 on x86_64-pc-linux-gnu") == 2
