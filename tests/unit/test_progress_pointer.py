"""Issue 26.8: a step's progress series goes to the bucket and its summary's DynamoDB item keeps a pointer
(key, size, sha256), so a long run's series never passes the 400 KB item limit; readers follow the pointer."""

import boto3
import pytest
from moto import mock_aws

from pgarena.aws.items import unmarshal
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.model import layout
from pgarena.model.results import ProgressSample, StepSummary

# A day's run at progress_s 1: 86,400 samples, ~5 MB of JSON, past DynamoDB's 400 KB item limit.
DAY = [ProgressSample(elapsed_s=float(s), tps=1234.5, latency_avg_ms=3.25) for s in range(1, 86_401)]


@pytest.fixture
def store(aws_credentials):
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="results")
        create_results_table(boto3.client("dynamodb"), "table")
        yield ResultStore("results", "table")


def summary(progress) -> StepSummary:
    return StepSummary(
        campaign_id="c1", step_id="t/tpcb/c4-r1", target="t", workload="tpcb", kind="run", tool="pgbench",
        status="succeeded", started_at="s", finished_at="f", wall_s=86_400.0, progress=progress,
    )  # fmt: skip


def test_a_day_long_series_is_kept_in_the_bucket_and_read_back_whole(store):
    # When a day-long run's summary is written
    store.put_summary(summary(DAY))
    # Then its item holds a pointer, far under 400 KB, and the bucket the series
    (item,) = store.dynamodb.scan(TableName="table")["Items"]
    assert sum(len(str(v)) for v in item.values()) < 4_000
    kept = StepSummary.model_validate_json(unmarshal(item)["summary"])
    assert kept.progress == [] and kept.progress_ref.key == layout.progress_key("c1", "t/tpcb/c4-r1")
    assert kept.progress_ref.size_bytes > 400_000
    # And a reader gets the summary as the worker made it
    (read,) = store.summaries("c1")
    assert read == summary(DAY)


def test_a_retried_write_of_the_same_summary_succeeds(store):
    store.put_summary(summary(DAY[:10]))
    store.put_summary(summary(DAY[:10]))
    assert store.summaries("c1") == [summary(DAY[:10])]


def test_a_series_that_is_not_the_one_recorded_is_refused(store):
    # Given a summary whose series was replaced in the bucket after it was written
    store.put_summary(summary(DAY[:10]))
    store.put_bytes(layout.progress_key("c1", "t/tpcb/c4-r1"), b"[]", "application/json")
    # When read / Then the reader refuses it, naming the object and the step
    with pytest.raises(RuntimeError, match=r"progress/t/tpcb/c4-r1\.json is not the progress series step t/tpcb/c4-r1"):
        ResultStore("results", "table").summaries("c1")
