"""The worker's SQL task process: a tool's function run over connections from libpq's environment."""

import subprocess

import pytest

from pgarena.tools.runner import python_module_command
from pgarena.worker import sql_task


def test_the_endpoint_is_libpqs_environment_and_the_password_stays_there():
    env = {"PGHOST": "db", "PGPORT": "6432", "PGUSER": "bench", "PGDATABASE": "app", "PGSSLMODE": "require", "PGPASSWORD": "s"}
    endpoint = sql_task.endpoint_of(env)
    assert (endpoint.host, endpoint.port, endpoint.user, endpoint.dbname, endpoint.sslmode) == (
        "db",
        6432,
        "bench",
        "app",
        "require",
    )
    assert endpoint.password_env == "PGPASSWORD"
    assert sql_task.endpoint_of({"PGHOST": "db", "PGUSER": "bench"}).password_env is None


@pytest.mark.parametrize("reference", ["os:system", "pgarena.tools.registry", "subprocess:run"])
def test_only_a_function_of_a_tools_package_runs(reference):
    with pytest.raises(ValueError, match="not a task of a tool's package"):
        sql_task.task_of(reference)


def test_a_task_that_fails_exits_1_saying_why(capsys):
    # Given a server nobody listens on: the task's first connection fails
    env = {"PGHOST": "127.0.0.1", "PGPORT": "1", "PGUSER": "bench", "PGSSLMODE": "disable"}
    code = sql_task.main(["pgarena.tools.pgbench.tpcc.load:load", "--warehouses=1"], env)
    assert code == 1
    assert "error: " in capsys.readouterr().err


def test_the_module_runs_in_an_isolated_interpreter_with_this_processs_import_path(tmp_path):
    # Given an environment with nothing of this process's (no PYTHONPATH, no virtualenv on PATH), and another folder
    command = python_module_command("pgarena.worker.sql_task", "os:system")
    # When the command runs there
    done = subprocess.run(command, env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, capture_output=True, text=True, check=False)
    # Then pgarena's module is found and runs (refusing the task: it is not a tool's)
    assert "not a task of a tool's package" in done.stderr, done.stderr
