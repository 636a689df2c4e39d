"""Issue 15.1: a matrix cannot start a process on the worker, and a tool never sees the worker's secrets."""

import copy
import json

import pytest

from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.campaign import parse_campaign
from pgarena.tools.runner import tool_environment
from tests.conftest import FIXTURES

VALID = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())


def _with_run(**run) -> dict:
    matrix = copy.deepcopy(VALID)
    matrix["workloads"][0]["run"].update(run)
    return matrix


def _problems(matrix: dict) -> dict[str, str]:
    with pytest.raises(MatrixError) as caught:
        parse_campaign(matrix)
    return {p.path: p.message for p in caught.value.problems}


@pytest.mark.parametrize(
    "sql",
    [
        "\\shell sh -c 'id; env'\nSELECT 1;",
        "\\setshell who printenv PGPASSWORD\nSELECT 1;",
        "SELECT 1; \\SHELL id",
        "\\ shell id\n",
        "\\set aid 1\n\\SetShell x id\n",
    ],
)
def test_a_script_that_runs_a_program_is_refused(sql):
    # Given a custom pgbench script holding \shell or \setshell, in any spelling pgbench reads
    matrix = _with_run(scripts=[{"sql": sql}])
    # When the matrix is validated
    problems = _problems(matrix)
    # Then it is refused at the script's field, saying why and what to do instead
    message = problems["$.workloads[0].run.scripts[0].sql"]
    assert "\\shell" in message and "credentials" in message and "\\set" in message


def test_a_script_with_ordinary_meta_commands_is_accepted():
    # Given a script using \set and a variable whose name holds "shell"
    matrix = _with_run(scripts=[{"sql": "\\set shell_id random(1, 10)\nSELECT :shell_id;"}])
    # When it is validated / Then it is accepted
    assert parse_campaign(matrix).workloads[0].run.scripts[0].sql.startswith("\\set")


def _sysbench(extra_args: list[str]) -> dict:
    matrix = copy.deepcopy(VALID)
    matrix["workloads"] = [{"name": "sb", "tool": "sysbench", "run": {"duration_s": 5, "extra_args": extra_args}}]
    return matrix


@pytest.mark.parametrize("arg", ["--luajit-cmd=-jdump=/tmp/x", "--mysql_storage_engine=x", "--file-test-mode=seqwr"])
def test_a_sysbench_option_outside_the_allowed_list_is_refused(arg):
    # Given a sysbench option pgarena has not vetted (one that could load code or write files)
    problems = _problems(_sysbench([arg]))
    # Then the refusal names the field and lists what is allowed
    message = problems["$.workloads[0].run.extra_args"]
    assert arg.split("=")[0] in message and "--rand-seed" in message


def test_vetted_sysbench_options_are_accepted():
    campaign = parse_campaign(_sysbench(["--rand-seed=1", "--create_secondary=off", "--range_size=10"]))
    assert campaign.workloads[0].run.extra_args == ("--rand-seed=1", "--create_secondary=off", "--range_size=10")


def test_a_tool_environment_holds_no_secret_of_the_worker():
    # Given a worker environment with the task token, AWS credentials and other targets' passwords
    worker_env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PGARENA_TASK_TOKEN": "token-secret",
        "PGARENA_STEP": "{}",
        "AWS_ACCESS_KEY_ID": "AKIA",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_SESSION_TOKEN": "session",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x",
        "PGARENA_PW_OTHER": "another-target's password",
        "PGPASSWORD": "inherited",
    }
    # When a tool's environment is built with the step's own libpq settings
    env = tool_environment({"PGHOST": "db", "PGPASSWORD": "the step's own"}, worker_env)
    # Then it holds PATH, LANG and the step's settings, and nothing else of the worker's
    assert env == {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PGHOST": "db", "PGPASSWORD": "the step's own"}


def test_a_tool_environment_has_a_path_even_when_the_worker_has_none():
    assert tool_environment({}, {})["PATH"]
