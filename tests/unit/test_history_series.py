"""A campaign's history over eight nightly runs under one --out root, built from one real results.json
(tests/unit/history_runs.py): target b's server gets 25% slower from run 5 on with nothing pgarena can
see changing (its figures scaled, every recorded fact kept), target a's stays; then a's settings change
in the matrix. History reports the change of b at run 5, none for a, and splits a's series where its
settings changed instead of flagging it."""

import json

import pytest
from typer.testing import CliRunner

from pgarena.analysis.history import detect, index, trends
from pgarena.cli import EXIT_CHANGED, app
from tests.unit.history_runs import Night, write_nights

SLOWER = 0.75  # b's speed from run 5 on: tps x 0.75, latency / 0.75
runner = CliRunner()


@pytest.fixture
def b_slower(tmp_path):
    # Given eight runs of one campaign in one root, b 25% slower from run 5 on
    write_nights(tmp_path, [Night() for _ in range(4)] + [Night(speed={"b": SLOWER}) for _ in range(4)])
    return tmp_path


@pytest.fixture
def a_retuned(tmp_path):
    # Given eight runs where a's shared_buffers changes in the matrix at run 6 and a gets 40% faster with it
    tuned = {"a": {"shared_buffers": "32768"}}
    write_nights(tmp_path, [Night() for _ in range(5)] + [Night(speed={"a": 1.4}, settings=tuned) for _ in range(3)])
    return tmp_path


def test_the_index_lists_the_campaign_and_its_runs_in_order(b_slower):
    found = index.read_runs(b_slower)
    (entry,) = index.campaigns(found)
    assert entry.campaign == "nightly" and entry.runs == 8 and entry.last_status == "completed"
    runs = [e for e, _ in index.runs_of(found, "nightly")]
    assert [r.run for r in runs] == list(range(1, 9))
    assert [r.started_at[:10] for r in runs] == [f"2026-12-{d:02d}" for d in range(1, 9)]
    assert all(r.targets == ["a", "b"] and r.cost_usd and r.headline for r in runs)
    # local runs (their workers on this machine): the cost is what AWS would have charged
    assert all(r.priced_as_aws for r in runs)


def test_b_changed_at_run_5_and_a_did_not(b_slower):
    told = trends.history(index.read_runs(b_slower), "nightly", str(b_slower))
    changes = {(s.target, s.metric): s.changes for s in told.series}
    assert set(changes) == {("a", "tps"), ("a", "p95_ms"), ("b", "tps"), ("b", "p95_ms")}
    assert changes["a", "tps"] == [] and changes["a", "p95_ms"] == []
    (tps,) = changes["b", "tps"]
    assert tps.run == 5 and tps.direction == "worse" and tps.before_runs == 4 and tps.after_runs == 4
    assert tps.ci95_low < SLOWER < tps.ci95_high and tps.ci95_high < 1
    assert tps.message.startswith("b tpcb 2 clients: tps 2") and "lower" in tps.message
    assert tps.message.endswith("since run 5 (2026-12-05)")
    (p95,) = changes["b", "p95_ms"]
    assert p95.run == 5 and p95.direction == "worse" and "p95 latency" in p95.message and "higher" in p95.message
    assert not any(s.splits for s in told.series)
    assert len(told.gate) == 2


def test_a_settings_change_splits_its_series_and_is_not_flagged(a_retuned):
    told = trends.history(index.read_runs(a_retuned), "nightly", str(a_retuned))
    for s in told.series:
        assert s.changes == [], s.changes
        if s.target == "a":
            (split,) = s.splits
            assert split.run == 6 and split.changed == ["setting shared_buffers: 128MB -> 256MB"]
        else:
            assert s.splits == []
    assert told.gate == []


def test_the_cli_reports_the_change_and_the_gate_fails(b_slower):
    result = runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "--fail-on-change"])
    assert result.exit_code == EXIT_CHANGED, result.output
    assert "change: b tpcb 2 clients: tps" in result.output and "since run 5 (2026-12-05)" in result.output
    assert "change: a" not in result.output
    # local runs charged nothing: their cost is labelled as what AWS would have charged
    assert "if in AWS" in result.output


def test_the_gate_passes_when_the_change_is_older_than_the_recent_runs(b_slower):
    result = runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "--fail-on-change", "--recent", "3"])
    assert result.exit_code == 0, result.output


def test_json_validates_against_its_schema_and_names_the_detector(b_slower):
    result = runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "--json"])
    assert result.exit_code == 0, result.output
    told = json.loads(result.output)
    assert told["detector"]["library"] == "ruptures" and len(told["runs"]) == 8
    schema = json.loads(runner.invoke(app, ["history", "--json-schema"]).output)
    assert set(schema["history"]["properties"]) == set(told)


def test_the_listing_and_unknown_names(b_slower, tmp_path_factory):
    listed = runner.invoke(app, ["history", "--out", str(b_slower), "--json"])
    assert listed.exit_code == 0 and json.loads(listed.output)["campaigns"][0]["runs"] == 8
    unknown = runner.invoke(app, ["history", "weekly", "--out", str(b_slower)])
    assert unknown.exit_code == 2 and "no run of this campaign" in unknown.output
    missing = runner.invoke(app, ["history", "--out", str(tmp_path_factory.mktemp("x") / "none")])
    assert missing.exit_code == 2


def test_the_trend_page_and_csv(b_slower, tmp_path_factory):
    page = tmp_path_factory.mktemp("page") / "trends.html"
    result = runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "--html", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "Content-Security-Policy" in html and "<script" not in html
    assert html.count('<svg id="trend-') == 4 and html.count('class="event"') == 2
    rows = page.with_suffix(".csv").read_text().splitlines()
    assert len(rows) == 1 + 4 * 8
    assert sum("since run 5" in r for r in rows) == 2


def test_without_ruptures_history_says_how_to_install_it_and_the_gate_cannot_pass(b_slower, monkeypatch):
    # Given the change-point library is not installed (the `history` extra)
    monkeypatch.setattr(detect, "available", lambda: False)
    listed = runner.invoke(app, ["history", "nightly", "--out", str(b_slower)])
    # Then the runs are listed, with no change point and the command that installs the library
    assert listed.exit_code == 0 and "pip install 'pgarena[history]'" in listed.output and "change:" not in listed.output
    assert json.loads(runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "--json"]).output)["detector"] is None
    gated = runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "--fail-on-change"])
    assert gated.exit_code == 2 and "pip install 'pgarena[history]'" in gated.output


def test_a_workload_setting_changed_in_the_matrix_splits_every_series_of_it(tmp_path):
    # Given eight runs whose matrix runs the workload twice as long from run 4 on, both targets faster with it
    write_nights(tmp_path, [Night() for _ in range(3)] + [Night(speed={"a": 1.3, "b": 1.3}, run={"duration_s": 4})] * 5)
    told = trends.history(index.read_runs(tmp_path), "nightly", str(tmp_path))
    # Then every series splits at run 4, saying which setting changed, and none is flagged
    for s in told.series:
        assert [(x.run, x.changed) for x in s.splits] == [(4, ["workload run.duration_s: 2 -> 4"])], s.splits
        assert s.changes == []


def test_adding_a_client_count_to_the_matrix_splits_nothing(tmp_path):
    write_nights(tmp_path, [Night() for _ in range(3)] + [Night(run={"clients": [2, 8]})] * 3)
    told = trends.history(index.read_runs(tmp_path), "nightly", str(tmp_path))
    assert told.series and not any(s.splits for s in told.series)


def test_a_run_without_its_matrix_is_compared_on_what_results_json_records(tmp_path):
    # Given eight runs of which the fourth's folder kept no matrix.json (as a run copied from AWS)
    folders = write_nights(tmp_path, [Night() for _ in range(8)])
    (folders[3] / "matrix.json").unlink()
    told = trends.history(index.read_runs(tmp_path), "nightly", str(tmp_path))
    # Then no series splits: what is unknown did not change
    assert told.series and not any(s.splits for s in told.series)


def test_the_gate_under_json_prints_its_document_and_exits_4_and_quiet_says_only_the_failure(b_slower):
    # --json: the document (its gate listing b's changes) on stdout, and the gate's exit code
    gated = runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "--fail-on-change", "--json"])
    assert gated.exit_code == EXIT_CHANGED
    gate = json.loads(gated.stdout)["gate"]
    assert len(gate) == 2 and all(message.startswith("b tpcb 2 clients:") for message in gate)
    # --quiet: no table, only the failure on stderr
    quiet = runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "--fail-on-change", "-q"])
    assert quiet.exit_code == EXIT_CHANGED and quiet.stdout == ""
    assert "2 series changed for the worse" in quiet.stderr
    # and a quiet run without the gate prints nothing at all
    silent = runner.invoke(app, ["history", "nightly", "--out", str(b_slower), "-q"])
    assert silent.exit_code == 0 and silent.stdout == "" and silent.stderr == ""


def test_history_errors_under_json_are_error_documents(b_slower):
    unknown = runner.invoke(app, ["history", "weekly", "--out", str(b_slower), "--json"])
    assert unknown.exit_code == 2
    document = json.loads(unknown.stdout)
    assert document["exit_code"] == 2 and "no run of this campaign" in document["error"]["message"]
    refused = runner.invoke(app, ["history", "--recent", "0", "--json"])
    assert refused.exit_code == 2 and json.loads(refused.stdout)["exit_code"] == 2
