"""Validate And Plan's input: a bare matrix or {"campaign_id", "matrix"}; the id from the execution's name
unless given; a campaign id that already has files or items refused before anything runs."""

import json

import boto3
import pytest
from moto import mock_aws

from pgarena.aws import access
from pgarena.aws.items import marshal
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.local.endpoints import LambdaContext
from pgarena.model.errors import CampaignExists, InvalidMatrix
from pgarena.model.execution import execution_request
from tests.conftest import FIXTURES

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture
def store(aws_credentials, monkeypatch):
    for name, value in {
        "RESULTS_BUCKET": "results",
        "RESULTS_TABLE": "results",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "CRITICAL",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        s3, dynamodb = boto3.client("s3"), boto3.client("dynamodb")
        s3.create_bucket(Bucket="results")
        create_results_table(dynamodb, "results")
        yield ResultStore("results", "results", s3=s3, dynamodb=dynamodb)


def matrix() -> dict:
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    return data


def validate(execution_input, execution_name: str = "exec-1") -> dict:
    from functions.validate.handler import handler

    return handler({"input": execution_input, "execution_name": execution_name}, LambdaContext("pgarena-validate"))


def test_a_bare_matrix_is_planned_under_the_executions_name(store):
    ref = validate(matrix(), "nightly-run-42")
    assert ref == {
        "campaign_id": "nightly-run-42",
        "phases": [{"phase": 1, "concurrency": 1, "last_target": 0, "on_site": []}],
        "through": 1,
        "adaptive": False,
    }
    assert store.get_json("nightly-run-42/state/plan.json")["campaign"] == matrix()["campaign"]


def test_a_given_campaign_id_wins_over_the_execution_name(store):
    assert validate({"campaign_id": "chosen-1", "matrix": matrix()}, "exec-9")["campaign_id"] == "chosen-1"
    assert validate({"matrix": matrix()}, "exec-9")["campaign_id"] == "exec-9"


def test_an_execution_name_unfit_for_keys_is_refused_naming_it():
    with pytest.raises(InvalidMatrix, match="the execution name 'a/b' is not a valid campaign id"):
        execution_request(matrix(), "a/b")


@pytest.mark.parametrize("trace", ["results.json", "raw object", "summary item", "barrier item"])
def test_a_campaign_id_in_use_is_refused_with_what_uses_it(store, trace):
    # Given a campaign id that already has results, raw output, a worker's summary or a start barrier
    if trace == "results.json":
        store.put_json("used-1/results.json", {})
    elif trace == "raw object":
        store.put_bytes("used-1/raw/pg/tpcb/init/pgbench.log", b"x", "text/plain")
    else:
        kind = access.SUMMARIES if trace == "summary item" else access.BARRIERS
        store.dynamodb.put_item(TableName="results", Item=marshal({"pk": kind.pk("used-1"), "sk": "x"}))

    # When an execution asks for it, by its input or by its name
    with pytest.raises(CampaignExists) as given:
        validate({"campaign_id": "used-1", "matrix": matrix()})
    with pytest.raises(CampaignExists) as named:
        validate(matrix(), "used-1")

    # Then Validate refuses it (the state machine's Catch names CampaignExists), saying what holds it and the fix
    assert "campaign id 'used-1' is already used" in str(given.value) and "give another campaign_id" in str(given.value)
    assert "start the execution under another name" in str(named.value)
    assert given.value.info().kind == "campaign_exists"


def test_another_campaigns_files_do_not_make_an_id_in_use(store):
    store.put_json("used-10/results.json", {})  # a prefix of the id is not the id's prefix
    assert validate(matrix(), "used-1")["campaign_id"] == "used-1"


def test_the_cli_checks_an_execution_input_file_as_the_state_machine_reads_it(tmp_path):
    from typer.testing import CliRunner

    from pgarena.cli import app

    # Given the two execution inputs the docs name: a bare matrix, and {"campaign_id", "matrix"}
    bare, wrapped = tmp_path / "bare.json", tmp_path / "wrapped.json"
    bare.write_text(json.dumps(matrix()))
    wrapped.write_text(json.dumps({"campaign_id": "nightly-2026-11-23", "matrix": matrix()}))

    # Then validate and estimate accept both
    for path in (bare, wrapped):
        checked = CliRunner().invoke(app, ["validate", str(path)])
        assert checked.exit_code == 0 and ": ok (1 target x 1 workload)" in " ".join(checked.output.split()), checked.output
        assert CliRunner().invoke(app, ["estimate", "--matrix", str(path)]).exit_code == 0

    # And a problem inside the wrapped matrix, or in its id, is named by its path in the file
    broken = matrix()
    broken["workloads"][0]["run"]["clients"] = 0
    wrapped.write_text(json.dumps({"campaign_id": "bad id", "matrix": broken}))
    assert "$.campaign_id:" in CliRunner().invoke(app, ["validate", str(wrapped)]).output
    wrapped.write_text(json.dumps({"matrix": broken}))
    refused = CliRunner().invoke(app, ["validate", str(wrapped)])
    assert refused.exit_code == 1 and "$.matrix.workloads[0].run.clients:" in refused.output, refused.output
