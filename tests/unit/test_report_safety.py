"""Issue 34.7: a crafted results.json makes no report link outside its folder, the HTML report forbids
scripts and fetches by its own Content-Security-Policy, and a ranking naming a missing target is refused
with a plain message."""

import re

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.model.results import CampaignResults
from pgarena.report import InconsistentResultsError, build_reports
from pgarena.report.links import local_link, trend_link
from tests.conftest import FIXTURES
from tests.unit.test_report import parse

WEEK1 = FIXTURES / "results" / "week1"
HOSTILE = [
    "javascript:alert(document.domain)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "https://evil.example/x",
    "//evil.example/x",
    "/etc/passwd",
    "../../../etc/passwd",
    "raw/../../x",
    "raw\\..\\x",
    " javascript:alert(1)",
]


@pytest.fixture(scope="module")
def results() -> CampaignResults:
    return CampaignResults.model_validate_json((WEEK1 / "results.json").read_text())


def _with_raw(results: CampaignResults, raw: list[str]) -> CampaignResults:
    crafted = results.model_copy(deep=True)
    failed = next(w for t in crafted.targets for w in t.workloads if w.raw and w.status == "failed")
    failed.raw = raw
    return crafted


@pytest.mark.parametrize("path", HOSTILE)
def test_no_path_outside_the_folder_is_a_link(path):
    assert local_link(path) is None


@pytest.mark.parametrize("path", ["raw/cloudsql/tpcb/c8-r2/pgbench.log", "raw/a_b/w-1/c2-r1/monitor.jsonl", "results.json"])
def test_a_raw_file_inside_the_folder_is_a_link(path):
    assert local_link(path) == path


def test_crafted_raw_entries_are_shown_as_text_never_linked(results):
    # Given a results.json whose raw entries were crafted to run a script or leave the folder
    files = build_reports(_with_raw(results, [*HOSTILE, "raw/cloudsql/tpcb/c8-r2/pgbench.log"]))
    html, summary = files["report.html"].decode(), files["summary.md"].decode()
    # Then the HTML report links only the file inside the folder, and shows the others as text
    links = parse(html).links
    assert "raw/cloudsql/tpcb/c8-r2/pgbench.log" in links
    # (the one link out of the folder is its name's trend page, beside the folder: test_the_trend_link_...)
    links.remove(trend_link(results.campaign))
    assert not [link for link in links if ":" in link or link.startswith(("/", "..")) or "/.." in link or "\\" in link]
    assert "javascript:alert(document.domain)" in html  # still shown, as text
    # And the Markdown summary makes no link of them either
    targets = re.findall(r"\]\(([^)]*)\)", summary)
    assert "raw/cloudsql/tpcb/c8-r2/pgbench.log" in targets
    assert not [t for t in targets if ":" in t or t.startswith(("/", "..")) or "/.." in t]


def test_the_html_report_carries_a_content_security_policy(results):
    html = build_reports(results)["report.html"].decode()
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    assert policy is not None
    directives = dict(d.strip().split(" ", 1) for d in policy.group(1).split(";"))
    assert directives["default-src"] == "'none'"  # no script, no fetch, no frame
    assert "script-src" not in directives
    assert directives["base-uri"] == "'none'" and directives["form-action"] == "'none'"


def test_a_ranking_naming_a_missing_target_is_refused_plainly(results, tmp_path):
    # Given a results.json whose ranking names a target it does not hold
    crafted = results.model_copy(deep=True)
    crafted.ranking[0].target = "ghost"
    (tmp_path / "results.json").write_text(crafted.model_dump_json())
    # When the reports are built, from code or with `pgarena report`
    with pytest.raises(InconsistentResultsError, match=r"ranking\[0\].target 'ghost'"):
        build_reports(crafted)
    outcome = CliRunner().invoke(app, ["report", str(tmp_path)])
    # Then it is refused with one plain message, no traceback, and no report written
    assert outcome.exit_code == 1
    assert "ranking[0].target 'ghost'" in outcome.output and "Traceback" not in outcome.output
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit)
    assert not (tmp_path / "report.html").exists()


def test_a_comparison_naming_a_missing_target_is_refused_by_compare(results, tmp_path):
    crafted = results.model_copy(deep=True)
    crafted.ranking[0].tied_with = ["ghost"]
    (tmp_path / "results.json").write_text(crafted.model_dump_json())
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(results.model_dump_json())
    outcome = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path)])
    assert outcome.exit_code == 1 and "tied_with 'ghost'" in outcome.output


def test_the_report_links_its_campaign_names_trend_page_beside_its_folder(results):
    # Given a campaign's report, in <root>/<campaign_id>/report.html
    links = parse(build_reports(results)["report.html"].decode()).links

    # Then it links to <root>/history/<name>.html, where the campaign's end and `pgarena history NAME` write it
    assert f"../history/{results.campaign}.html" in links
    assert trend_link(results.campaign) == f"../history/{results.campaign}.html"


@pytest.mark.parametrize("name", [*HOSTILE, "a/b", "../x", "nightly run", ""])
def test_a_crafted_campaign_name_makes_no_trend_link(results, name):
    # Given a results.json whose campaign name was crafted to leave the root or run a script
    crafted = results.model_copy(update={"campaign": name})

    # Then no trend link is made of it, and the report links nothing out of its folder
    assert trend_link(name) is None
    links = parse(build_reports(crafted)["report.html"].decode()).links
    assert not [link for link in links if ":" in link or link.startswith(("/", "..")) or "\\" in link]
