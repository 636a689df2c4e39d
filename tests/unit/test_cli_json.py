"""`--json` and `--quiet` on validate, estimate, run and compare: one document on stdout following its schema, the
error document with the same exit code as without --json, and nothing but errors under --quiet."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgarena.analysis.compare import compare_campaigns, load_results
from pgarena.cli import EXIT_CANCELLED, EXIT_ERROR, EXIT_FAILED_TARGETS, EXIT_USAGE, app
from pgarena.local.runtime import LocalRun
from pgarena.model.cli_output import CompareOutput, ErrorDocument, EstimateOutput, RunOutput, ValidateOutput
from pgarena.planning.campaign import load_execution_input
from pgarena.planning.cost import endpoint_plan, estimate_campaign
from tests.conftest import FIXTURES, ROOT
from tests.unit.history_runs import Night, write_nights

MINIMAL = ROOT / "examples" / "minimal.json"
WEEK1, WEEK2 = FIXTURES / "results" / "week1", FIXTURES / "results" / "week2"


def invoke(*args: str):
    """The command as a script runs it: stdout and stderr apart (a JSON consumer reads stdout only)."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def _matrix(tmp_path: Path, **changes) -> Path:
    data = json.loads(MINIMAL.read_text())
    data.update(changes)
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(data))
    return path


def test_validate_json_is_the_documented_model_with_its_warnings():
    result = invoke("validate", str(MINIMAL), "--json")
    assert result.exit_code == 0, result.output
    document = ValidateOutput.model_validate_json(result.stdout)
    assert (document.campaign, document.targets, document.workloads) == ("minimal", ["a", "b"], ["tpcb"])
    # examples/minimal.json's embedded target cannot run in AWS: said, not refused
    assert [w for w in document.warnings if "embedded target b" in w and "run --local" in w]


def test_an_invalid_matrix_under_json_is_the_error_document_naming_each_field(tmp_path):
    # Given a matrix with two problems
    data = json.loads(MINIMAL.read_text())
    data["workloads"][0]["run"]["durration_s"] = 5
    data["repetitions"] = 0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    # When validated with and without --json
    plain, as_json = invoke("validate", str(path)), invoke("validate", str(path), "--json")
    # Then the exit code is the same, and stdout holds the error document alone, one error per field
    assert plain.exit_code == as_json.exit_code == EXIT_ERROR
    document = ErrorDocument.model_validate_json(as_json.stdout)
    assert document.exit_code == EXIT_ERROR and document.error == document.errors[0]
    fields = {e.field: e.message for e in document.errors}
    assert "did you mean duration_s?" in fields["$.workloads[0].run.durration_s"]
    assert "$.repetitions" in fields


def test_a_missing_file_under_json_exits_2_with_the_error_document(tmp_path):
    result = invoke("estimate", str(tmp_path / "none.json"), "--json")
    assert result.exit_code == EXIT_USAGE
    document = ErrorDocument.model_validate_json(result.stdout)
    assert document.exit_code == EXIT_USAGE and "no such file" in document.error.message


def test_estimate_json_has_the_plans_steps_duration_and_the_guards_cost():
    result = invoke("estimate", str(MINIMAL), "--json")
    assert result.exit_code == 0, result.output
    document = EstimateOutput.model_validate_json(result.stdout)
    campaign, _ = load_execution_input(MINIMAL)
    plan = endpoint_plan(campaign)
    expected = estimate_campaign(campaign, 1024, 2048)
    # every worker step of the plan, each with its expected times
    assert [s.step_id for s in document.steps] == [s.step_id for p in plan.phases for t in p.targets for s in t.steps]
    assert all(s.expected_aws_s > s.expected_local_s > 0 for s in document.steps if s.kind == "run")
    # the cost the guard computes, line by line, and the durations the text prints
    assert document.cost == expected
    assert document.duration.aws_s == pytest.approx(expected.wall_s) and document.duration.local_s > 0
    assert document.fixed_monthly_usd > 0 and document.aws_limits.history_events > 0


def test_over_the_cap_under_json_is_the_error_document_naming_the_field(tmp_path):
    path = _matrix(tmp_path, cost={"cap_usd": 0.0001})
    plain, as_json = invoke("estimate", str(path)), invoke("estimate", str(path), "--json")
    assert plain.exit_code == as_json.exit_code == EXIT_ERROR
    document = ErrorDocument.model_validate_json(as_json.stdout)
    assert document.error.field == "$.cost.cap_usd"
    assert "over the campaign cap" in document.error.message and document.error.fix


def test_compare_json_has_each_figures_interval_and_the_gate(tmp_path):
    # Given two runs of 3 repetitions each (the real fixture's noise), b 60% slower in the second
    before, after = write_nights(tmp_path, [Night(), Night(speed={"b": 0.4})])
    result = invoke("compare", str(before), str(after), "--json")
    assert result.exit_code == 0, result.output
    document = CompareOutput.model_validate_json(result.stdout)
    assert document.comparison == compare_campaigns(load_results(before), load_results(after))
    # Then b's tps interval excludes no change, below zero; a's includes none; the gate not asked for passes
    changes = {c.target: c for c in document.comparison.changes}
    (tps_b,) = [t for t in changes["b"].tests if t.figure == "tps"]
    assert changes["b"].verdict == "regression" and tps_b.outcome == "different"
    assert tps_b.ci_low is not None and tps_b.ci_high is not None and tps_b.ci_low <= tps_b.change <= tps_b.ci_high < 0
    assert tps_b.confidence is not None and 0.95 <= tps_b.confidence < 1
    (tps_a,) = [t for t in changes["a"].tests if t.figure == "tps"]
    assert tps_a.ci_low is not None and tps_a.ci_high is not None and tps_a.outcome != "different"
    assert document.gate.enabled is False and document.gate.passed and document.gate.regressions == ["b/tpcb/c2"]


def test_compare_json_gate_fails_with_the_same_exit_code():
    plain = invoke("compare", str(WEEK1), str(WEEK2), "--fail-on-regression")
    as_json = invoke("compare", str(WEEK1), str(WEEK2), "--fail-on-regression", "--json")
    assert plain.exit_code == as_json.exit_code == EXIT_ERROR
    document = CompareOutput.model_validate_json(as_json.stdout)
    assert document.gate.enabled and not document.gate.passed and document.exit_code == EXIT_ERROR


@pytest.mark.parametrize(
    "args",
    [
        ("validate", str(MINIMAL)),
        ("estimate", str(MINIMAL)),
        ("compare", str(WEEK1), str(WEEK2)),
        ("compare", str(WEEK2), str(WEEK2), "--fail-on-regression"),
    ],
)
def test_quiet_prints_nothing_on_success(args):
    result = invoke(*args, "--quiet")
    assert result.exit_code == 0
    assert result.output == ""


def test_quiet_still_prints_the_error():
    result = invoke("compare", str(WEEK1), str(WEEK2), "--fail-on-regression", "-q")
    assert result.exit_code == EXIT_ERROR
    assert result.stdout == "" and "4 regression(s)" in result.stderr


def test_quiet_with_json_prints_the_document_alone():
    result = invoke("estimate", str(MINIMAL), "--json", "--quiet")
    assert result.exit_code == 0 and result.stderr == ""
    EstimateOutput.model_validate_json(result.stdout)


@pytest.mark.parametrize(
    ("command", "model"),
    [("validate", ValidateOutput), ("estimate", EstimateOutput), ("run", RunOutput), ("compare", CompareOutput)],
)
def test_json_schema_prints_the_documents_schema_without_a_file(command, model):
    result = invoke(command, "--json-schema")
    assert result.exit_code == 0, result.output
    schemas = json.loads(result.stdout)
    assert schemas == {"output": model.model_json_schema(), "error": ErrorDocument.model_json_schema()}


def test_run_usage_errors_under_json_are_error_documents():
    result = invoke("run", str(MINIMAL), "--json")
    assert result.exit_code == EXIT_USAGE
    assert "--local" in ErrorDocument.model_validate_json(result.stdout).error.message


@pytest.mark.parametrize(
    ("results", "status", "code"),
    [("week1", "completed", EXIT_FAILED_TARGETS), ("week1", "cancelled", EXIT_CANCELLED)],
)
def test_run_local_json_is_the_outcome_of_results_json(tmp_path, monkeypatch, results, status, code):
    # Given a local run that ends with week1's results (cloudsql failed), or with them cancelled
    stored = load_results(FIXTURES / "results" / results).model_copy(update={"status": status})
    folder = tmp_path / stored.campaign_id
    folder.mkdir()
    (folder / "results.json").write_text(stored.model_dump_json())

    def run_local(campaign, out, on_event, **where):
        on_event_seen.append(on_event)
        return LocalRun(campaign_id=stored.campaign_id, status="SUCCEEDED", results_dir=folder, results=stored, wall_s=12.5)

    on_event_seen: list = []
    monkeypatch.setattr("pgarena.local.runtime.run_local", run_local)
    # When it is run with --json
    result = invoke("run", str(MINIMAL), "--local", "--out", str(tmp_path), "--json")
    # Then the exit code says the outcome, and stdout is the run's document, its figures results.json's
    assert result.exit_code == code, result.output
    document = RunOutput.model_validate_json(result.stdout)
    assert (document.campaign_id, document.status, document.where, document.exit_code) == (
        stored.campaign_id,
        status,
        "local",
        code,
    )
    assert document.results.results_json == str(folder / "results.json") and document.results.s3_prefix is None
    assert document.ranking == stored.ranking and document.cost == stored.cost
    assert [(v.a, v.b, v.outcome) for v in document.verdicts] == [(c.a, c.b, c.outcome) for c in stored.comparisons]
    (cloudsql,) = [t for t in document.targets if t.name == "cloudsql"]
    assert cloudsql.status == "failed" and cloudsql.rank is None and cloudsql.error
    assert document.headline


def test_run_quiet_prints_no_progress(tmp_path, monkeypatch):
    # Given a run whose runtime reports progress
    stored = load_results(WEEK2).model_copy(update={"targets": [], "ranking": [], "comparisons": [], "metrics": []})
    folder = tmp_path / stored.campaign_id
    folder.mkdir()

    def run_local(campaign, out, on_event, **where):
        from pgarena.remote.follow import Event

        on_event(Event(elapsed_s=1.0, kind="state", text="execution started"))
        return LocalRun(campaign_id=stored.campaign_id, status="SUCCEEDED", results_dir=folder, results=stored, wall_s=1.0)

    monkeypatch.setattr("pgarena.local.runtime.run_local", run_local)
    quiet = invoke("run", str(MINIMAL), "--local", "--out", str(tmp_path), "--quiet")
    as_json = invoke("run", str(MINIMAL), "--local", "--out", str(tmp_path), "--json")
    # Then --quiet prints nothing, and --json prints its progress on stderr, never on stdout
    assert quiet.exit_code == 0 and quiet.output == "", quiet.output
    assert "execution started" in as_json.stderr and "execution started" not in as_json.stdout
    RunOutput.model_validate_json(as_json.stdout)


@pytest.mark.parametrize("args", [("estimate", str(MINIMAL), "--bogus"), ("compare",), ("run", "--local", "--out")])
def test_the_option_parsers_refusals_under_json_are_error_documents(args):
    # When the parser refuses the command line (an unknown option, a missing argument or value) under --json
    result = invoke(*args[:1], "--json", *args[1:])
    # Then its exit code (2) is the document's, and its message is the error
    assert result.exit_code == EXIT_USAGE
    document = ErrorDocument.model_validate_json(result.stdout)
    assert document.exit_code == EXIT_USAGE and document.error.message
