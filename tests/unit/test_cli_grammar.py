"""One grammar for every command (pgarena COMMAND FILE [options]), --version, every matrix problem in
one pass with 'did you mean', unknown PostgreSQL settings refused, and piped output at full width."""

import json
import os
import subprocess
import sys
from importlib import metadata

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.model.known_settings import embedded_major, known_settings, shipped_majors, unknown_settings
from pgarena.model.results import CampaignResults, Latency, TargetResult, WorkloadResult
from pgarena.model.suggest import closest
from tests.conftest import ROOT

MINIMAL = ROOT / "examples" / "minimal.json"


def _matrix(tmp_path, **changes):
    data = json.loads(MINIMAL.read_text())
    data["targets"] = [data["targets"][1]]  # the embedded target: settings are checked
    for key, value in changes.items():
        data[key] = value
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(data))
    return path, data


def test_version_prints_the_installed_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"pgarena {metadata.version('pgarena')}"


@pytest.mark.parametrize("command", ["validate", "estimate"])
def test_every_command_takes_its_file_first(command):
    result = CliRunner().invoke(app, [command, str(MINIMAL)])
    assert result.exit_code == 0, result.output
    assert "minimal" in result.output


def test_the_old_matrix_option_still_works_and_is_hidden():
    # Given a script written for `estimate --matrix FILE`
    result = CliRunner().invoke(app, ["estimate", "--matrix", str(MINIMAL)])
    # Then it still runs, and the help shows only the positional spelling
    assert result.exit_code == 0, result.output
    assert "worker tasks" in result.output
    helped = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "--matrix" not in helped.output and "MATRIX" in helped.output


def test_a_missing_matrix_file_argument_says_the_grammar():
    result = CliRunner().invoke(app, ["run", "--local"])
    assert result.exit_code == 2
    assert "pgarena COMMAND FILE" in result.output


def test_two_different_matrix_files_are_refused(tmp_path):
    result = CliRunner().invoke(app, ["estimate", str(MINIMAL), "--matrix", str(tmp_path / "other.json")])
    assert result.exit_code == 2 and "give one" in result.output


def test_a_misspelt_field_gets_the_closest_name(tmp_path):
    # Given a run with 'durration_s' for duration_s
    path, data = _matrix(tmp_path)
    data["workloads"][0]["run"]["durration_s"] = 5
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["validate", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 1
    assert "$.workloads[0].run.durration_s: unknown field (did you mean duration_s?)" in result.output


def test_every_problem_is_reported_in_one_pass(tmp_path):
    # Given a matrix with a bad name, an unknown field in a run and, in that same run, warmup_s == duration_s
    path, data = _matrix(tmp_path, campaign="Bad Name", repetitions=0)
    data["workloads"][0]["run"].update({"duration_s": 10, "warmup_s": 10, "percentiles": True, "clinets": 4})
    path.write_text(json.dumps(data))
    # When it is validated once
    result = CliRunner().invoke(app, ["validate", str(path)], env={"COLUMNS": "400"})
    # Then the warm-up problem, which pydantic hides behind the unknown field, is listed with the others
    assert result.exit_code == 1
    assert "4 problem(s)" in result.output, result.output
    assert "$.campaign:" in result.output and "$.repetitions:" in result.output
    assert "$.workloads[0].run.clinets: unknown field (did you mean clients?)" in result.output
    assert "$.workloads[0].run: warmup_s (10) must be shorter than duration_s (10)" in result.output


def test_an_unknown_postgresql_setting_is_refused_with_the_closest_name(tmp_path):
    path, data = _matrix(tmp_path)
    data["targets"][0]["embedded"]["settings"] = {"shared_bufers": "64MB", "synchronous_commit": "off"}
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["validate", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 1
    major = embedded_major()
    assert f"'shared_bufers' is not a PostgreSQL {major} setting (did you mean shared_buffers?)" in result.output


def test_known_developer_and_extension_settings_pass():
    # Developer settings are in pg_settings though --describe-config leaves them out; a dotted name is an extension's
    assert unknown_settings(["ignore_system_indexes", "Shared_Buffers", "pg_stat_statements.max"], embedded_major()) == []


def test_a_list_ships_for_the_embedded_major_and_debians():
    # The embedded wheel's major is checked; Debian's (the TLS tests' server) has its list too
    assert embedded_major() in shipped_majors()
    assert len(shipped_majors()) >= 2
    for major in shipped_majors():
        names = known_settings(major)
        assert names is not None and {"shared_buffers", "work_mem", "fsync"} <= names


def test_a_major_without_a_list_is_not_checked():
    assert known_settings(9) is None
    assert unknown_settings(["anything_at_all"], 9) == []


def test_closest_offers_nothing_for_a_guess():
    assert closest("duratoin_s", ["duration_s", "warmup_s"]) == "duration_s"
    assert closest("banana", ["duration_s", "warmup_s"]) is None


def _campaign(campaign_id: str, names: list[str]) -> CampaignResults:
    runs = [
        WorkloadResult(name="tpcb-long-workload-name", tool="pgbench", clients=16, repetition=1, status="succeeded",
                       tps=1234.5, latency_ms=Latency(avg=4.0))
    ]  # fmt: skip
    targets = [TargetResult(name=n, provider="embedded", status="succeeded", workloads=runs) for n in names]
    return CampaignResults(campaign_id=campaign_id, campaign="c", started_at="", finished_at="", targets=targets, ranking=[])


def test_compare_is_not_cut_when_piped(tmp_path):
    # Given two campaigns whose targets differ only at the end of a long name
    names = ["a-rather-long-target-name-sync-on", "a-rather-long-target-name-sync-off"]
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "results.json").write_text(_campaign(f"campaign-{folder}", names).model_dump_json())
    # When compare's output goes to a pipe (no terminal, no COLUMNS)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-m", "pgarena.cli", "compare", str(tmp_path / "a"), str(tmp_path / "b")],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    # Then both names are printed whole, on lines wider than 80 columns
    assert done.returncode == 0, done.stderr
    for name in names:
        assert name in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) > 80
