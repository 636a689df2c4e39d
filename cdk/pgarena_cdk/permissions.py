"""IAM pieces shared by the worker and the functions."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from pgarena_cdk import constants
from pgarena_cdk.nag import acknowledge

SECRETS_REASON = (
    "Target passwords are secrets named pgarena/<name>; the trailing wildcard also covers the random "
    "suffix Secrets Manager adds to every secret ARN."
)


def grant_read_pgarena_secrets(role: iam.IRole, scope: Construct) -> None:
    """secretsmanager:GetSecretValue on the secrets named `pgarena/...`, and nothing else."""
    secrets = Stack.of(scope).format_arn(
        service="secretsmanager",
        resource="secret",
        resource_name=f"{constants.SECRET_NAME_PREFIX}*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    role.add_to_principal_policy(iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[secrets]))
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        SECRETS_REASON,
        finding="Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:"
        f"{constants.SECRET_NAME_PREFIX}*",
    )


def object_finding(bucket: s3.IBucket, key_pattern: str) -> str:
    """How cdk-nag names a wildcard object resource (`key_pattern`) of a bucket defined in this stack."""
    logical_id = Stack.of(bucket).get_logical_id(bucket.node.default_child)
    return f"Resource::<{logical_id}.Arn>/{key_pattern}"


def leading_keys(pattern: str) -> dict:
    """An IAM condition limiting DynamoDB item access to partition keys matching `pattern`."""
    return {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [pattern]}}
