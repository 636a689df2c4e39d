"""A damaged or odd input file gets one clean line naming it and what is wrong: no traceback, no library URL, no hang."""

import os

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from tests.conftest import FIXTURES

WEEK1 = FIXTURES / "results" / "week1"


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})


@pytest.mark.parametrize("content", ["garbage", '{"campaign_id": 1}'])
def test_resume_of_a_folder_with_a_damaged_results_json_says_what_is_wrong(tmp_path, content):
    # Given a campaign folder whose results.json is not one
    (tmp_path / "results.json").write_text(content)
    # When it is resumed
    result = _invoke("resume", str(tmp_path))
    # Then one line names the file, no traceback
    assert result.exit_code == 1, result.output
    assert f"{tmp_path / 'results.json'}: not a pgarena results.json" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["report", "compare"])
def test_report_and_compare_name_the_problem_without_the_librarys_text(tmp_path, command):
    # Given a results.json missing its fields
    (tmp_path / "results.json").write_text('{"campaign_id": "c1"}')
    # When it is reported or compared
    result = _invoke(command, str(tmp_path), *([str(WEEK1)] if command == "compare" else []))
    # Then one line names the file and the first missing field, without pydantic's URL
    assert result.exit_code == 1, result.output
    assert "not a pgarena results.json" in result.output and "$.campaign" in result.output
    assert "errors.pydantic.dev" not in result.output and "For further information" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.timeout(20)
def test_validate_refuses_a_fifo_instead_of_waiting_for_a_writer(tmp_path):
    # Given a FIFO nothing writes to
    fifo = tmp_path / "matrix.json"
    os.mkfifo(fifo)
    # When it is validated (opening it would wait for a writer for ever: the timeout fails the test)
    result = _invoke("validate", str(fifo))
    # Then it is refused without being opened
    assert result.exit_code == 1, result.output
    assert "not a regular file" in result.output
