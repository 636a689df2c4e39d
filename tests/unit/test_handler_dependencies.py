"""Every handler reads as environment -> Dependencies -> use case -> answer: its adapters and their AWS
clients come from functions/dependencies.py (cached per Lambda container), none makes its own."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted((ROOT / "functions").glob("*/handler.py"))
# boto3 or botocore imported, or a client made (`client(...)`, boto3's or dependencies.py's own)
OWN_CLIENT = re.compile(r"^\s*(import boto3|from boto3|from botocore|import botocore)|(?<![.\w])client\(", re.MULTILINE)


def test_every_function_has_a_handler():
    assert [path.parent.name for path in HANDLERS] == [
        "aggregate",
        "cost_guard",
        "decide",
        "finalize_stopped",
        "launch_worker",
        "preflight",
        "release_lease",
        "start_campaign",
        "task_stopped",
        "validate",
    ]


def test_no_handler_makes_its_own_aws_client():
    own = [path.parent.name for path in HANDLERS if OWN_CLIENT.search(path.read_text())]
    assert own == []


def test_every_handler_builds_its_adapters_through_dependencies():
    without = [path.parent.name for path in HANDLERS if "Dependencies.of(" not in path.read_text()]
    assert without == []


def test_the_guard_sees_a_client_made_in_a_handler():
    # The pattern finds what it is meant to (a handler as three of them were written before issue 33)
    assert OWN_CLIENT.search('import boto3\n\ndef handler(event, context):\n    sfn = boto3.client("stepfunctions")\n')
    assert OWN_CLIENT.search('    launcher = EcsLauncher(client("ecs"), env)\n')
    assert not OWN_CLIENT.search("    deps.executions().history(arn)\n")


def test_task_stopped_loads_nothing_of_the_results():
    # Given a fresh interpreter (the function is deliberately small: no settings, SendTaskFailure only)
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, functions.task_stopped.handler; print(' '.join(sys.modules))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()

    # When importing its handler / Then the executions are there, and no results adapter nor use case of them
    assert "pgarena.aws.executions" in loaded
    results = ("pgarena.aws.store", "pgarena.aws.campaign_state", "pgarena.campaign.finalize", "pgarena.analysis")
    assert [name for name in loaded if name.startswith(results)] == []
