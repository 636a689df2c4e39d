"""Issue 34.14: a wrong password in a local run names the environment variable the user set, not the
Secrets Manager secret the local runtime copied it into."""

import copy
import json

import pytest
from moto import mock_aws

from pgarena.local.runtime import LocalRuntime
from pgarena.model.matrix import Endpoint
from pgarena.planning.campaign import parse_campaign
from pgarena.server.credentials import resolve_password, variable_of
from pgarena.server.postgres import credential_of
from tests.conftest import FIXTURES

MINIMAL = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())


@pytest.fixture
def aws(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield


def test_a_local_runs_secret_names_the_variable_the_user_exported(aws, tmp_path, monkeypatch):
    # Given a matrix whose target's password is in PGARENA_PW_A, as the user exported it
    monkeypatch.setenv("PGARENA_PW_A", "s3cret")
    campaign = parse_campaign(copy.deepcopy(MINIMAL))
    # When the local runtime hands it to the functions and workers as a secret (as in AWS)
    resolved = LocalRuntime(tmp_path)._with_secret_passwords(campaign)
    endpoint = resolved.targets[0].endpoint
    assert endpoint.password_env is None and endpoint.password_secret_arn
    assert resolve_password(endpoint) == "s3cret"
    # Then a failed login points at the variable, not at the placeholder secret
    assert credential_of(endpoint) == "environment variable PGARENA_PW_A"
    assert "arn:" not in credential_of(endpoint)


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:pgarena/local-env-X-nothex00-AbCdEf",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:pgarena/local-env-BAD-NAME-0123abcd-AbCdEf",
    ],
)
def test_any_other_secret_is_named_by_its_arn(arn):
    endpoint = Endpoint(host="h", user="u", password_secret_arn=arn)
    assert variable_of(arn) is None
    assert credential_of(endpoint) == f"secret {arn}"
