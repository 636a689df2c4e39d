"""What `make deploy` checks before it starts the CDK CLI: credentials (STS), the account's CDK bootstrap
(its version parameter in SSM), and a given VPC's subnets' route out (pgarena.aws.routes). Each problem is
one line with its fix, in seconds; without the check, the CLI spends most of a minute synthesizing before
it says "Unable to resolve AWS account", and subnets without a way out fail every step, slowly."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from pgarena.aws.routes import subnet_route_problems

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient
    from mypy_boto3_sts import STSClient

# The default synthesizer's qualifier and the oldest bootstrap stack its assets and roles work with.
BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
MIN_BOOTSTRAP_VERSION = 6
BOOTSTRAP_FIX = "run `make bootstrap` (npx aws-cdk@2 bootstrap) once for this account and region"
CREDENTIALS_FIX = "run `aws configure`, or set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
REGION_FIX = "set AWS_REGION, or `aws configure set region <region>`"
# The app's settings: cdk.json's context, then `-c key=value` (CDK_ARGS), as the CDK CLI merges them.
CDK_JSON = Path("cdk.json")
CONTEXT_VPC_ID = "pgarena:vpcId"
CONTEXT_SUBNET_IDS = "pgarena:subnetIds"


class DeployCheckError(Exception):
    """Deploying would fail: the message says why and what to do."""


@dataclass(frozen=True)
class Ready:
    account: str
    region: str
    bootstrap_version: int | None  # None: the parameter could not be read (deploying goes on)

    def describe(self) -> str:
        version = f"bootstrap version {self.bootstrap_version}" if self.bootstrap_version else "bootstrap not readable"
        return f"deploying to account {self.account}, region {self.region} ({version})"


def caller_account(sts: STSClient) -> str:
    try:
        return sts.get_caller_identity()["Account"]
    except NoCredentialsError:
        raise DeployCheckError(f"no AWS credentials found: {CREDENTIALS_FIX}") from None
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", "")
        raise DeployCheckError(f"the AWS credentials were refused ({code}: {message}): {CREDENTIALS_FIX}") from None


def bootstrap_version(ssm: SSMClient, account: str, region: str) -> int | None:
    try:
        value = ssm.get_parameter(Name=BOOTSTRAP_PARAMETER)["Parameter"].get("Value", "0")
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ParameterNotFound":
            raise DeployCheckError(f"account {account} is not CDK-bootstrapped in {region}: {BOOTSTRAP_FIX}") from None
        if code in ("AccessDeniedException", "AccessDenied"):
            return None  # the role may deploy without reading SSM: CloudFormation will say if the bootstrap is missing
        raise
    version = int(value) if value.isdigit() else 0
    if version < MIN_BOOTSTRAP_VERSION:
        raise DeployCheckError(
            f"account {account}'s CDK bootstrap in {region} is version {version}, this app needs "
            f"{MIN_BOOTSTRAP_VERSION} or later: {BOOTSTRAP_FIX}"
        )
    return version


def given_subnets(context: dict[str, Any]) -> list[str]:
    """The given VPC's subnet ids (a list, or a comma-separated string from `-c`); none without pgarena:vpcId."""
    if not context.get(CONTEXT_VPC_ID):
        return []
    value = context.get(CONTEXT_SUBNET_IDS) or []
    items = value.split(",") if isinstance(value, str) else value
    return [str(item).strip() for item in items if str(item).strip()]


def deploy_context(cdk_json: Path, overrides: Sequence[str]) -> dict[str, Any]:
    """cdk.json's context with each `key=value` of `-c` over it."""
    context: dict[str, Any] = json.loads(cdk_json.read_text()).get("context", {}) if cdk_json.is_file() else {}
    for item in overrides:
        key, _, value = item.partition("=")
        context[key] = value
    return context


def check(session: boto3.Session, subnet_ids: Sequence[str] = ()) -> Ready:
    region = session.region_name
    if not region:
        raise DeployCheckError(f"no AWS region: {REGION_FIX}")
    account = caller_account(session.client("sts", region_name=region))
    version = bootstrap_version(session.client("ssm", region_name=region), account, region)
    try:
        problems = subnet_route_problems(session.client("ec2", region_name=region), subnet_ids)
    except ClientError as error:  # the deploying role may not describe the VPC: CloudFormation goes on
        problems = []
        print(f"make deploy: the given subnets' routes could not be read ({error}): not checked", file=sys.stderr)
    if problems:
        raise DeployCheckError("\n".join(problems))
    return Ready(account, region, version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--region", help="the stack's region (default: AWS_REGION, else the profile's)")
    parser.add_argument("--profile", help="an AWS profile (default: AWS_PROFILE, else the default one)")
    parser.add_argument("-c", "--context", action="append", default=[], help="key=value, as given to `cdk deploy`")
    # The rest of CDK_ARGS (stack names, --require-approval ...) is the CDK CLI's, not this check's.
    args, _ = parser.parse_known_args(argv)
    try:
        # AWS_REGION, as the CDK CLI and `pgarena run --aws` read it; boto3's Session reads only AWS_DEFAULT_REGION.
        region = args.region or os.environ.get("AWS_REGION") or None
        subnets = given_subnets(deploy_context(CDK_JSON, args.context))
        ready = check(boto3.Session(region_name=region, profile_name=args.profile), subnets)
    except DeployCheckError as error:
        print(f"make deploy: {error}", file=sys.stderr)
        return 1
    except BotoCoreError as error:  # a profile that does not exist, an unreachable endpoint
        print(f"make deploy: {error}: {CREDENTIALS_FIX}", file=sys.stderr)
        return 1
    print(ready.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
