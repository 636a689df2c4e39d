"""`pgarena run --aws` end to end, with moto's server standing in for AWS.

The local runtime is the stand-in: its moto server holds the state machine (statemachines/campaign.asl.json),
the results bucket and table, and a CloudFormation stack whose outputs name them; its Lambda endpoint runs
the real handlers and its ECS endpoint the real workers, against a real PostgreSQL server. The CLI runs as
a separate process, as a user runs it, pointed at the moto server with --endpoint-url.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import boto3
import pytest

from pgarena.aws.deployment import (
    OUTPUT_RESULTS_BUCKET,
    OUTPUT_RESULTS_TABLE,
    OUTPUT_STATE_MACHINE_ARN,
    OUTPUT_WORKER_CLUSTER_ARN,
    STACK_NAME,
)
from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.endpoints import REGION
from pgarena.local.runtime import BUCKET, CLUSTER_ARN, TABLE, LocalRuntime
from pgarena.model.cli_output import ErrorDocument, RunOutput
from pgarena.model.results import CampaignResults
from pgarena.report import REPORT_FILES

pytestmark = pytest.mark.integration

FAST = {"fsync": "off", "synchronous_commit": "off", "shared_buffers": "16MB"}
# Generous bounds for a loaded machine; each wait ends as soon as its condition holds.
CLI_TIMEOUT_S = 240
WAIT_FOR_RUN_S = 180


@pytest.fixture(scope="module")
def server():
    pg = EmbeddedProcess("aws-run", FAST)
    pg.start()
    yield pg
    pg.stop()


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    """The local runtime's moto server with a deployed-looking stack; finalize_stopped behind the status change rule."""
    with LocalRuntime(tmp_path_factory.mktemp("aws-stand-in")) as runtime, runtime.status_change_rule():
        outputs = {
            OUTPUT_STATE_MACHINE_ARN: runtime.machine_arn,
            OUTPUT_RESULTS_BUCKET: BUCKET,
            OUTPUT_RESULTS_TABLE: TABLE,
            OUTPUT_WORKER_CLUSTER_ARN: CLUSTER_ARN,
        }
        template = {
            "Resources": {
                "Marker": {
                    "Type": "AWS::SSM::Parameter",
                    "Properties": {"Name": "pgarena-stand-in", "Type": "String", "Value": "pgarena"},
                }
            },
            "Outputs": {name: {"Value": value} for name, value in outputs.items()},
        }
        boto3.client("cloudformation", region_name=REGION).create_stack(StackName=STACK_NAME, TemplateBody=json.dumps(template))
        yield runtime


def matrix_file(tmp_path, server, name, duration_s):
    matrix = {
        "campaign": name,
        "targets": [
            {
                "name": "only",
                "provider": "self-hosted",
                "endpoint": {"host": "127.0.0.1", "port": server.port, "user": "postgres", "sslmode": "disable"},
            }
        ],
        "workloads": [
            {
                "name": "tpcb",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": 2, "jobs": 1, "duration_s": duration_s, "progress_s": 1},
            }
        ],
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(matrix))
    return path


def cli(stand_in, matrix, out, *extra):
    """The command a user runs; the moto server given as --endpoint-url, ECS as the runtime's endpoint
    (its service variable, which the CLI leaves in place)."""
    env = {key: value for key, value in os.environ.items() if key != "AWS_ENDPOINT_URL"}
    args = [sys.executable, "-m", "pgarena.cli", "run", "--aws", "--matrix", str(matrix), "--out", str(out)]
    args += ["--endpoint-url", stand_in.endpoint_urls["AWS_ENDPOINT_URL"], "--region", REGION, *extra]
    return args, {**env, "COLUMNS": "200"}


def execution_status(stand_in, arn):
    return stand_in.sfn.describe_execution(executionArn=arn)["status"]


def started_arn(stand_in, name):
    executions = stand_in.sfn.list_executions(stateMachineArn=stand_in.machine_arn)["executions"]
    return next(e["executionArn"] for e in executions if e["name"].startswith(name))


def uploaded(stand_in, key):
    try:
        return stand_in.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except stand_in.s3.exceptions.NoSuchKey:
        return b""


def test_run_aws_starts_follows_and_downloads(stand_in, server, tmp_path):
    # Given the deployed stack (found by its name) and a matrix of one real server
    matrix = matrix_file(tmp_path, server, "aws-run", duration_s=2)

    # When the user runs it in AWS, its outcome as JSON (as a CI job reads it)
    args, env = cli(stand_in, matrix, tmp_path / "results", "--verbose", "--json")
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)

    # Then it started an execution of the stack's state machine, which succeeded
    assert done.returncode == 0, done.stdout + done.stderr
    arn = started_arn(stand_in, "aws-run")
    assert execution_status(stand_in, arn) == "SUCCEEDED"
    # and followed it: the states entered (--verbose) and each step's result on its own line, as they happened,
    # on stderr beside the JSON
    assert f"started {arn}" in done.stderr
    for line in ("Validate And Plan", "Preflight Target only", "Run Worker Task", "Aggregate And Rank"):
        assert line in done.stderr, done.stderr
    assert re.search(r"succeeded target only · tpcb · 2 clients — step 2 of 2: [\d,]+\.\d tps", done.stderr), done.stderr
    # and downloaded results.json, which parses into the results model, and the reports
    (folder,) = (tmp_path / "results").iterdir()
    results = CampaignResults.model_validate_json((folder / "results.json").read_text())
    assert results.campaign_id == folder.name and arn.endswith(folder.name)
    assert results.status == "completed"
    assert [t.status for t in results.targets] == ["succeeded"]
    assert {name for name in REPORT_FILES} <= {p.name for p in folder.iterdir()}
    assert "only" in (folder / "report.html").read_text()
    # and stdout is the run's document alone, its figures results.json's, its keys those of the bucket
    document = RunOutput.model_validate_json(done.stdout)
    assert (document.campaign_id, document.where, document.execution_arn) == (results.campaign_id, "aws", arn)
    assert (document.status, document.exit_code) == ("completed", 0)
    assert document.ranking == results.ranking and document.cost == results.cost
    ranks = {r.target: r.rank for r in results.ranking}
    assert [(t.name, t.status, t.rank) for t in document.targets] == [("only", "succeeded", ranks.get("only"))]
    assert document.results.results_json == str(folder / "results.json")
    assert document.results.s3_results_json == f"s3://{BUCKET}/{results.campaign_id}/results.json"
    assert uploaded(stand_in, f"{results.campaign_id}/results.json")


def test_run_aws_ctrl_c_stops_the_execution_and_its_workers(stand_in, server, tmp_path):
    # Given a campaign running in AWS, its run step under way
    matrix = matrix_file(tmp_path, server, "aws-stop", duration_s=60)
    args, env = cli(stand_in, matrix, tmp_path / "results", "--results-wait-s", "120", "--verbose")
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    seen = []
    try:
        deadline = time.monotonic() + WAIT_FOR_RUN_S
        while sum("Run Worker Task" in line for line in seen) < 2:  # the load's worker, then the run's
            assert time.monotonic() < deadline, "".join(seen)
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                assert process.poll() is None, "".join(seen)
        arn = started_arn(stand_in, "aws-stop")
        # pgbench measuring (its uploaded output shows progress), not a fixed time after the start
        log_key = f"{arn.rsplit(':', 1)[1]}/raw/only/tpcb/c2-r1/pgbench.log"
        while b"progress:" not in uploaded(stand_in, log_key):
            assert time.monotonic() < deadline and process.poll() is None, "".join(seen)
            time.sleep(0.2)

        # When the user presses Ctrl-C
        process.send_signal(signal.SIGINT)
        process.wait(timeout=CLI_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
    while not lines.empty():
        seen.append(lines.get())
    output = "".join(seen)

    # Then the execution is stopped (ABORTED) and so are its workers
    assert execution_status(stand_in, arn) == "ABORTED", output
    assert "execution stopped" in output and re.search(r"stopped [1-9]\d* worker task\(s\)", output), output
    assert not stand_in.workers.list_tasks(CLUSTER_ARN, "pgarena")["taskArns"]
    # and the CLI exits as a cancelled run does, with finalize_stopped's results.json downloaded
    assert process.returncode == 130, output
    (folder,) = (tmp_path / "results").iterdir()
    results = CampaignResults.model_validate_json((folder / "results.json").read_text())
    assert results.status == "cancelled"
    (target,) = results.targets
    assert [w.error.kind for w in target.workloads if w.error] == ["cancelled"], output


def test_run_aws_exits_non_zero_naming_the_failure(stand_in, server, tmp_path):
    # Given a state machine that fails (named by --state-machine-arn instead of the stack's)
    failing = {"StartAt": "Refuse", "States": {"Refuse": {"Type": "Fail", "Error": "MatrixInvalid", "Cause": "a cause to read"}}}
    arn = stand_in.sfn.create_state_machine(
        name="pgarena-failing", definition=json.dumps(failing), roleArn="arn:aws:iam::123456789012:role/pgarena-local"
    )["stateMachineArn"]
    matrix = matrix_file(tmp_path, server, "aws-fail", duration_s=1)

    # When the user runs the campaign on it
    args, env = cli(stand_in, matrix, tmp_path / "results", "--state-machine-arn", arn, "--results-wait-s", "0", "--json")
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)

    # Then the command fails, saying how the execution ended and why: on stderr, and as the error document on stdout
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ended FAILED" in done.stderr and "MatrixInvalid: a cause to read" in done.stderr, done.stderr
    document = ErrorDocument.model_validate_json(done.stdout)
    assert document.exit_code == 1 and "MatrixInvalid: a cause to read" in document.error.message
