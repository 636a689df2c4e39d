"""Where results live: raw tool output and results.json in S3, step summaries in DynamoDB."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from pgarena.aws import access
from pgarena.model import layout
from pgarena_cdk import constants
from pgarena_cdk.nag import acknowledge
from pgarena_cdk.settings import DeploySettings


class ResultsConstruct(Construct):
    def __init__(self, scope: Construct, id_: str, settings: DeploySettings) -> None:
        super().__init__(scope, id_)
        self.access_log_bucket = self._build_access_log_bucket()
        self.bucket = self._build_results_bucket(settings)
        self.table = self._build_table()

    def _build_access_log_bucket(self) -> s3.Bucket:
        bucket = s3.Bucket(
            self,
            "AccessLogBucket",
            # Server access logging only delivers to SSE-S3 buckets.
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(constants.ACCESS_LOG_EXPIRATION_DAYS))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            bucket,
            "AwsSolutions-S1",
            "This bucket receives the results bucket's access logs and the VPC flow logs; logging its own "
            "access would need yet another bucket.",
        )
        return bucket

    def _build_results_bucket(self, settings: DeploySettings) -> s3.Bucket:
        expire_raw_output = s3.LifecycleRule(
            id="ExpireRawOutput",
            tag_filters={layout.RAW_OUTPUT_TAG_KEY: layout.RAW_OUTPUT_TAG_VALUE},
            expiration=Duration.days(settings.raw_output_expiration_days),
            noncurrent_version_expiration=Duration.days(settings.raw_output_expiration_days),
        )
        abort_uploads = s3.LifecycleRule(
            id="AbortIncompleteUploads",
            abort_incomplete_multipart_upload_after=Duration.days(constants.ABORT_INCOMPLETE_UPLOAD_DAYS),
        )
        return s3.Bucket(
            self,
            "ResultsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            lifecycle_rules=[expire_raw_output, abort_uploads],
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix=constants.ACCESS_LOG_PREFIX_RESULTS,
            # Results are the product of hours of benchmarking: deleting the stack keeps them.
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _build_table(self) -> dynamodb.Table:
        return dynamodb.Table(
            self,
            "ResultsTable",
            partition_key=dynamodb.Attribute(name=access.PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=access.SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=RemovalPolicy.RETAIN,
        )
