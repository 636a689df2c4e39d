"""Issue 34.8: an embedded server's settings name no path outside its own folder, and placement regions and
site names are AWS names, in the matrix and on the command line."""

import copy
import json

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.campaign import parse_campaign
from tests.conftest import FIXTURES

MINIMAL = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())


def with_embedded(**embedded) -> dict:
    data = copy.deepcopy(MINIMAL)
    data["targets"][1]["embedded"] = embedded
    return data


def with_placement(placement: dict) -> dict:
    data = copy.deepcopy(MINIMAL)
    data["targets"][0]["placement"] = placement
    return data


@pytest.mark.parametrize(
    "setting",
    [
        {"log_directory": "/tmp/x", "log_file_mode": "0666"},
        {"log_directory": "../../../tmp/x"},
        {"LOG_DIRECTORY": "log/../../x"},
        {"log_filename": "../../../../tmp/x.log"},
        {"ssl_cert_file": "/etc/ssl/private/x.pem"},
        {"external_pid_file": "/tmp/pid"},
        {"krb_server_keyfile": "..\\..\\x"},
    ],
)
@pytest.mark.parametrize("allowed", [False, True])
def test_a_path_setting_outside_the_servers_folder_is_refused(setting, allowed):
    # Given an embedded target whose settings write or read outside its own folder (even when unsafe ones are allowed)
    with pytest.raises(MatrixError) as caught:
        parse_campaign(with_embedded(settings=setting, allow_unsafe_settings=allowed))
    # Then the refusal names the settings field, the setting, and the fix
    (problem,) = caught.value.problems
    assert problem.path == "$.targets[1].embedded.settings"
    assert next(iter(setting)) in problem.message and "outside the server's own folder" in problem.message


def test_replica_path_settings_are_checked_too():
    with pytest.raises(MatrixError, match="log_directory"):
        parse_campaign(with_embedded(replicas=1, replica_settings={"log_directory": "/tmp/x"}))


@pytest.mark.parametrize("setting", [{"log_directory": "log"}, {"log_directory": "pg_log/sub", "log_filename": "pg-%a.log"}])
def test_a_path_inside_the_data_directory_is_accepted(setting):
    campaign = parse_campaign(with_embedded(settings=setting))
    assert campaign.targets[1].embedded.settings == setting


@pytest.mark.parametrize("region", ["../../x", "us-east-1/../x", "US-EAST-1", "us-east-1\n", "x"])
def test_a_placement_region_must_be_an_aws_region_name(region):
    with pytest.raises(MatrixError) as caught:
        parse_campaign(with_placement({"region": region}))
    assert [p.path for p in caught.value.problems] == ["$.targets[0].placement.region"]


@pytest.mark.parametrize("region", ["us-east-1", "ap-southeast-2", "us-gov-west-1", "eu-central-2"])
def test_aws_region_names_are_accepted(region):
    assert parse_campaign(with_placement({"region": region})).targets[0].placement.region == region


@pytest.mark.parametrize(
    ("option", "value"), [("--site-region", "../../x"), ("--site-region", "eu-west-1/x"), ("--external-site", "../x")]
)
def test_site_options_must_be_aws_names(tmp_path, option, value):
    # Given a valid matrix and a site option that is no region or site name
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(MINIMAL))
    # When `pgarena run --local` is given it
    outcome = CliRunner().invoke(app, ["run", "--local", "--matrix", str(path), "--out", str(tmp_path / "out"), option, value])
    # Then it is refused before anything starts, naming the option, with no traceback
    assert outcome.exit_code == 2, outcome.output
    assert f"{option} {value!r}" in outcome.output
    assert not (tmp_path / "out").exists()
