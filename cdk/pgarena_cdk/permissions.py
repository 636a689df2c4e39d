"""IAM pieces shared by the worker and the functions."""

from __future__ import annotations

from aws_cdk import ArnFormat, CfnElement, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from pgarena.aws.access import ACCESS, BUCKET_ACTIONS, BucketGrant, Component, TableGrant
from pgarena_cdk import constants
from pgarena_cdk.nag import acknowledge

SECRETS_REASON = (
    "Target passwords are secrets named pgarena/<name>; the trailing wildcard also covers the random "
    "suffix Secrets Manager adds to every secret ARN, the region wildcard the region of each target's secret."
)


def grant_read_pgarena_secrets(role: iam.IRole, scope: Construct) -> None:
    """secretsmanager:GetSecretValue on the account's secrets named `pgarena/...`, and nothing else, in
    every region: a target's secret is read in its ARN's region (pgarena.server.credentials), which may
    be its database's, away from the stack's and from any worker site's."""
    secrets = Stack.of(scope).format_arn(
        service="secretsmanager",
        region="*",
        resource="secret",
        resource_name=f"{constants.SECRET_NAME_PREFIX}*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    role.add_to_principal_policy(iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[secrets]))
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        SECRETS_REASON,
        finding=f"Resource::arn:<AWS::Partition>:secretsmanager:*:<AWS::AccountId>:secret:{constants.SECRET_NAME_PREFIX}*",
    )


def object_finding(bucket: s3.IBucket, key_pattern: str) -> str:
    """How cdk-nag names a wildcard object resource (`key_pattern`) of a bucket defined in this stack."""
    resource = bucket.node.default_child
    if not isinstance(resource, CfnElement):  # an imported bucket has no CloudFormation resource here
        raise ValueError(f"{bucket.node.path} is not a bucket defined in this stack")
    logical_id = Stack.of(bucket).get_logical_id(resource)
    return f"Resource::<{logical_id}.Arn>/{key_pattern}"


def leading_keys(pattern: str) -> dict[str, dict[str, list[str]]]:
    """An IAM condition limiting DynamoDB item access to partition keys matching `pattern`."""
    return {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [pattern]}}


def grant_access(role: iam.IRole, component: Component, table: dynamodb.ITable, bucket: s3.IBucket) -> None:
    """Every grant the access map (pgarena.aws.access) gives `component` on the results table and bucket.

    One statement per kind of item (the table's ARN, a `dynamodb:LeadingKeys` condition on its
    partition prefix) and per kind of object (its key patterns; bucket-level actions such as
    ListBucket on the bucket's ARN with an `s3:prefix` condition on the same patterns).
    """
    for grant in ACCESS[component]:
        actions = [str(action) for action in grant.actions]
        if isinstance(grant, TableGrant):
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=actions, resources=[table.table_arn], conditions=leading_keys(grant.items.leading_keys)
                )
            )
            continue
        _grant_objects(role, component, grant, bucket)


def _grant_objects(role: iam.IRole, component: Component, grant: BucketGrant, bucket: s3.IBucket) -> None:
    patterns = list(grant.objects.patterns)
    on_objects = [str(action) for action in grant.actions if action not in BUCKET_ACTIONS]
    on_bucket = [str(action) for action in grant.actions if action in BUCKET_ACTIONS]
    if on_objects:
        resources = [bucket.arn_for_objects(pattern) for pattern in patterns]
        role.add_to_principal_policy(iam.PolicyStatement(actions=on_objects, resources=resources))
        for pattern in patterns:
            acknowledge(
                role,
                "AwsSolutions-IAM5",
                f"{component} may {', '.join(on_objects)} {grant.objects.name} only, keys {pattern} "
                "(pgarena.aws.access); campaign, step and target names are chosen at run time.",
                finding=object_finding(bucket, pattern),
            )
    if on_bucket:
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=on_bucket, resources=[bucket.bucket_arn], conditions={"StringLike": {"s3:prefix": patterns}}
            )
        )
