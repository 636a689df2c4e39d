import json
from pathlib import Path

import pytest

from pgarena.model.matrix import json_schema
from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.campaign import load_campaign, parse_campaign
from tests.conftest import FIXTURES, ROOT


def paths(error: MatrixError) -> list[str]:
    return [p.path for p in error.problems]


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.json")), ids=lambda p: p.name)
def test_examples_validate(example):
    # Given an example matrix users copy / When it is loaded / Then it validates
    campaign = load_campaign(example)
    assert campaign.targets and campaign.workloads


def test_minimal_contract_shapes():
    # Given the minimal matrix from the contract
    campaign = load_campaign(FIXTURES / "matrices" / "minimal.json")
    # Then one target points at a server and the other asks for an embedded one
    a, b = campaign.targets
    assert a.endpoint.password_env == "PGARENA_PW_A" and a.embedded is None
    assert b.embedded.settings == {"shared_buffers": "64MB", "synchronous_commit": "off"} and b.endpoint is None
    assert campaign.workloads[0].run.client_counts == [4]


def test_inline_password_is_rejected_with_the_fix():
    # Given a matrix with a password written inline
    with pytest.raises(MatrixError) as caught:
        load_campaign(FIXTURES / "matrices" / "inline_password.json")
    # Then the problem names the field and says what to do instead
    (problem,) = caught.value.problems
    assert problem.path == "$.targets[0].endpoint.password"
    assert "password_env" in problem.message and "password_secret_arn" in problem.message


def test_inline_password_never_echoed():
    # Given an inline password / When validation fails / Then the secret is not in the message
    with pytest.raises(MatrixError) as caught:
        load_campaign(FIXTURES / "matrices" / "inline_password.json")
    assert "hunter2" not in str(caught.value)


def test_every_problem_is_reported_with_its_json_path():
    # Given a matrix with many problems / When validated / Then each is listed with its path
    with pytest.raises(MatrixError) as caught:
        load_campaign(FIXTURES / "matrices" / "many_problems.json")
    found = paths(caught.value)
    for expected in [
        "$.campaign",
        "$.targets",  # duplicate names
        "$.workloads[1].init.scale",
        "$.workloads[0].run.clients",
        "$.workloads[0].run.duration_s",
        "$.workloads[0].run.protocol",
        "$.repetitions",
    ]:
        assert expected in found, (expected, found)


def test_target_needs_endpoint_or_embedded():
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    del data["targets"][1]["embedded"]
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    (problem,) = caught.value.problems
    assert problem.path == "$.targets[1]" and "exactly one of" in problem.message


def test_unknown_field_is_named():
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["workloads"][0]["run"]["client"] = 8
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    (problem,) = caught.value.problems
    assert problem.path == "$.workloads[0].run.client"
    assert "unknown field" in problem.message


def test_client_sweep_is_accepted():
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["workloads"][0]["run"]["clients"] = [1, 2, 4, 8]
    assert parse_campaign(data).workloads[0].run.client_counts == [1, 2, 4, 8]


def test_both_password_sources_rejected():
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"][0]["endpoint"]["password_secret_arn"] = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:pgarena/a"
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    assert caught.value.problems[0].path == "$.targets[0].endpoint"


def test_invalid_json_is_a_problem_not_a_crash(tmp_path: Path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(MatrixError) as caught:
        load_campaign(path)
    assert caught.value.problems[0].path == "$"


def test_schema_describes_targets_and_workloads():
    schema = json_schema()
    assert {"campaign", "targets", "workloads"} <= set(schema["properties"])
    assert set(schema["required"]) == {"campaign", "targets", "workloads"}
