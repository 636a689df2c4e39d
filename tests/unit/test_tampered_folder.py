"""A results folder is data: every path read from it stays inside it, whatever its files say."""

import json

import pytest
from typer.testing import CliRunner

from pgarena.analysis.rerun import copy_raw
from pgarena.cli import app
from pgarena.local.progress import EXECUTION_FILE, SUMMARY_FILE, kept_steps, salvage
from pgarena.local.resume import load_folder
from pgarena.model.layout import UnsafePath
from pgarena.model.results import CampaignResults, StepSummary, TargetResult, WorkloadResult
from tests.conftest import FIXTURES


def test_a_summary_pointing_outside_the_folder_is_refused(tmp_path):
    # Given a campaign folder whose kept step summary names a series file outside it
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    folder = tmp_path / "results" / "c1"
    matrix = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    matrix["targets"] = matrix["targets"][:1]  # the execution kept: its servers all have endpoints
    execution = {"campaign_id": "c1", "started_at": "2026-01-01T00:00:00Z", "matrix": matrix}
    (folder / "raw" / "x").mkdir(parents=True)
    (folder / EXECUTION_FILE).write_text(json.dumps(execution))
    summary = StepSummary(
        campaign_id="c1", step_id="x", target="t", workload="w", kind="run", tool="pgbench", status="succeeded",
        started_at="", finished_at="", wall_s=1.0, series="c1/../../secret.json",
    )  # fmt: skip
    (folder / "raw" / "x" / SUMMARY_FILE).write_text(summary.model_dump_json())
    # When resume rebuilds its results, then it refuses, naming the path and the folder
    with pytest.raises(UnsafePath, match=r"c1/\.\./\.\./secret\.json.*outside.*c1"):
        salvage(folder, matrix)
    # And the command says so in one line, without a traceback
    (folder / "matrix.json").write_text(json.dumps(matrix))
    result = CliRunner().invoke(app, ["resume", str(folder)], env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    assert "leads outside the results folder" in result.output and "Traceback" not in result.output


def test_a_target_name_leading_outside_the_folder_copies_nothing(tmp_path):
    # Given results whose target name climbs out of the folder, and a tree there to steal
    (tmp_path / "stolen" / "w").mkdir(parents=True)
    (tmp_path / "stolen" / "w" / "key").write_text("secret")
    original_dir, out = tmp_path / "c1", tmp_path / "c2"
    (original_dir / "raw").mkdir(parents=True)
    run = WorkloadResult(name="w", tool="pgbench", clients=1, repetition=1, status="succeeded")
    target = TargetResult(name="../../stolen", provider="p", status="failed", workloads=[run])
    original = CampaignResults(campaign_id="c1", campaign="c", started_at="", finished_at="", targets=[target], ranking=[])
    # When its raw output is brought into the combined folder, then it is refused
    with pytest.raises(UnsafePath, match="outside"):
        copy_raw(original_dir, [], out, original)
    # And nothing was copied
    assert not list(tmp_path.rglob("c2/**/key"))


@pytest.mark.parametrize("name", ["raw/x/summary.json", "execution.json", "results.json", "matrix.json"])
def test_a_folder_file_that_links_outside_is_refused(tmp_path, name):
    # Given a campaign folder where one of the files resume reads is a symlink to a file outside it
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    folder = tmp_path / "results" / "c1"
    (folder / name).parent.mkdir(parents=True)
    (folder / name).symlink_to(outside)
    if name != "matrix.json":
        (folder / "matrix.json").write_text("{}")
    # When resume reads the folder (its kept steps, for a summary), then it refuses before reading the file
    with pytest.raises(UnsafePath, match="outside"):
        kept_steps(folder) if name.endswith(SUMMARY_FILE) else load_folder(folder)
