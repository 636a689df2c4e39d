"""make deploy's first step: credentials and the CDK bootstrap checked in seconds, each problem with its fix."""

import boto3
import pytest
from botocore.stub import Stubber

from pgarena.aws.deploy_check import (
    BOOTSTRAP_PARAMETER,
    DeployCheckError,
    bootstrap_version,
    caller_account,
    main,
)

ACCOUNT = "123456789012"
REGION = "eu-west-1"


def client(service):
    return boto3.client(service, region_name=REGION, aws_access_key_id="k", aws_secret_access_key="s")


def test_refused_credentials_name_the_code_and_the_fix():
    # Given STS refusing the caller's token
    sts = client("sts")
    with Stubber(sts) as stub:
        stub.add_client_error(
            "get_caller_identity", "InvalidClientTokenId", "The security token included in the request is invalid."
        )
        # When the account is asked for / Then the error says what was refused and how to fix it
        with pytest.raises(
            DeployCheckError, match=r"refused \(InvalidClientTokenId: The security token .*\): run `aws configure`"
        ):
            caller_account(sts)


def test_the_callers_account_is_read():
    sts = client("sts")
    with Stubber(sts) as stub:
        stub.add_response("get_caller_identity", {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/me", "UserId": "AID"})
        assert caller_account(sts) == ACCOUNT


def test_an_account_never_bootstrapped_is_told_to_run_make_bootstrap():
    # Given no bootstrap version parameter in the region
    ssm = client("ssm")
    with Stubber(ssm) as stub:
        stub.add_client_error("get_parameter", "ParameterNotFound", expected_params={"Name": BOOTSTRAP_PARAMETER})
        with pytest.raises(
            DeployCheckError, match=f"account {ACCOUNT} is not CDK-bootstrapped in {REGION}: run `make bootstrap`"
        ):
            bootstrap_version(ssm, ACCOUNT, REGION)


@pytest.mark.parametrize("value, expected", [("21", 21), ("6", 6)])
def test_a_recent_bootstrap_passes_with_its_version(value, expected):
    ssm = client("ssm")
    with Stubber(ssm) as stub:
        stub.add_response("get_parameter", {"Parameter": {"Name": BOOTSTRAP_PARAMETER, "Value": value}})
        assert bootstrap_version(ssm, ACCOUNT, REGION) == expected


def test_an_old_bootstrap_is_told_to_bootstrap_again():
    ssm = client("ssm")
    with Stubber(ssm) as stub:
        stub.add_response("get_parameter", {"Parameter": {"Name": BOOTSTRAP_PARAMETER, "Value": "3"}})
        with pytest.raises(DeployCheckError, match="version 3, this app needs 6 or later: run `make bootstrap`"):
            bootstrap_version(ssm, ACCOUNT, REGION)


def test_a_role_that_may_not_read_ssm_deploys_anyway():
    ssm = client("ssm")
    with Stubber(ssm) as stub:
        stub.add_client_error("get_parameter", "AccessDeniedException")
        assert bootstrap_version(ssm, ACCOUNT, REGION) is None


def test_no_credentials_at_all_fails_with_the_fix(monkeypatch, tmp_path, capsys):
    # Given no credentials anywhere boto3 looks (no env, no files, no instance metadata)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # When the check runs / Then it exits 1 with the fix
    assert main(["--region", REGION]) == 1
    assert "no AWS credentials found: run `aws configure`" in capsys.readouterr().err


def test_no_region_fails_with_the_fix(monkeypatch, tmp_path, capsys):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    assert main([]) == 1
    assert "no AWS region: set AWS_REGION" in capsys.readouterr().err
