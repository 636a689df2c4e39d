"""Results storage: raw output in S3, step summaries in DynamoDB."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError
from pydantic import TypeAdapter

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.model import layout
from pgarena.model.results import ProgressSample, StepSummary, StoredObject

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

RAW_TAG = f"{layout.RAW_OUTPUT_TAG_KEY}={layout.RAW_OUTPUT_TAG_VALUE}"


class ConflictingSummary(RuntimeError):
    """A different summary already exists for this step: a retried write must never replace a result."""


def create_results_table(dynamodb: DynamoDBClient, table: str) -> None:
    """The results table's shape (summaries, leases, barriers, ledger share it): pk/sk strings.
    The CDK stack declares the same keys; the local runtime and tests create it with this."""
    dynamodb.create_table(
        TableName=table,
        KeySchema=[
            {"AttributeName": access.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": access.SORT_KEY, "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": access.PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": access.SORT_KEY, "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


class ResultStore:
    def __init__(self, bucket: str, table: str, s3: S3Client | None = None, dynamodb: DynamoDBClient | None = None):
        self.bucket = bucket
        self.table = table
        self.s3 = s3 or boto3.client("s3")
        self.dynamodb = dynamodb or boto3.client("dynamodb")
        # Progress series read by key: a step's is written once, and a follower reads the summaries every poll.
        self._progress: dict[str, list[ProgressSample]] = {}

    def put_file(self, key: str, path: Path, content_type: str = "text/plain") -> str:
        # Raw output is tagged: the bucket's lifecycle rule expires it by tag (keys start with the campaign id).
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=path.read_bytes(), ContentType=content_type, Tagging=RAW_TAG)
        return key

    def put_bytes(self, key: str, data: bytes, content_type: str) -> str:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)
        return key

    def put_json(self, key: str, data: dict[str, Any]) -> str:
        body = json.dumps(data, indent=2).encode()
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")
        return key

    def get_json(self, key: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        return document

    def get_bytes(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def _put_progress(self, summary: StepSummary) -> StepSummary:
        """The progress series goes to the bucket and the item keeps a pointer: a long run's series (one
        sample per progress_s) would pass DynamoDB's 400 KB item limit after the run had finished."""
        if not summary.progress:
            return summary
        body = TypeAdapter(list[ProgressSample]).dump_json(summary.progress)
        key = self.put_bytes(layout.progress_key(summary.campaign_id, summary.step_id), body, "application/json")
        ref = StoredObject(key=key, size_bytes=len(body), sha256=hashlib.sha256(body).hexdigest())
        return summary.model_copy(update={"progress": [], "progress_ref": ref})

    def _with_progress(self, summary: StepSummary) -> StepSummary:
        """The summary as its worker made it: the pointer followed, what it points to checked."""
        ref = summary.progress_ref
        if ref is None:
            return summary
        if ref.key not in self._progress:
            body = self.get_bytes(ref.key)
            if hashlib.sha256(body).hexdigest() != ref.sha256:
                raise RuntimeError(f"{self.url(ref.key)} is not the progress series step {summary.step_id} recorded")
            self._progress[ref.key] = TypeAdapter(list[ProgressSample]).validate_json(body)
        return summary.model_copy(update={"progress": self._progress[ref.key], "progress_ref": None})

    def put_summary(self, summary: StepSummary) -> None:
        """Write once; an identical retry succeeds, a different result for the same step is refused."""
        document = self._put_progress(summary).model_dump_json()
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item={
                    **access.summary_key(summary.campaign_id, summary.step_id),
                    **marshal({"status": summary.status, "summary": document}),
                },
                ConditionExpression="attribute_not_exists(pk) OR #doc = :doc",
                ExpressionAttributeNames={"#doc": "summary"},
                ExpressionAttributeValues=marshal({":doc": document}),
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConflictingSummary(f"step {summary.step_id} already has a different summary") from None
            raise

    def summaries(self, campaign_id: str) -> list[StepSummary]:
        paginator = self.dynamodb.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :step)",
            ExpressionAttributeValues=marshal({":pk": access.SUMMARIES.pk(campaign_id), ":step": access.STEP_SK_PREFIX}),
        )
        return [
            self._with_progress(StepSummary.model_validate_json(unmarshal(item)["summary"]))
            for page in pages
            for item in page["Items"]
        ]

    def campaign_traces(self, campaign_id: str) -> list[str]:
        """What the campaign id already has: an object under its prefix (results, plan, raw output), or an
        item of its partitions (the workers' summaries, start barriers). Empty: the id is free."""
        found = []
        listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=layout.campaign_prefix(campaign_id), MaxKeys=1)
        found += [self.url(item["Key"]) for item in listed.get("Contents", [])]
        for kind in access.CAMPAIGN_ITEM_KINDS:
            items = self.dynamodb.query(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues=marshal({":pk": kind.pk(campaign_id)}),
                Limit=1,
            )["Items"]
            found += [f"{kind.name} ({kind.pk(campaign_id)})" for _ in items]
        return found

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def keys(self, prefix: str) -> list[str]:
        """Every object key under `prefix` (e.g. a campaign's raw output, to find what a lost worker left)."""
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]


class BucketDocuments:
    """JSON documents of the results bucket alone (the Documents port): what a function with the bucket and
    no table reads (start_campaign: a schedule's matrix)."""

    def __init__(self, s3: S3Client, bucket: str):
        self.s3 = s3
        self.bucket = bucket

    def get_json(self, key: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        return document
