"""The index of finished runs in the results table: finalize adds each run, `history --stack` reads it."""

import boto3
import pytest
from moto import mock_aws

from pgarena.analysis.history.schema import IndexedRun
from pgarena.aws.history_index import HistoryIndex
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.campaign.finalize import CampaignEnd, finalize
from pgarena.campaign.ports import EndPorts
from tests.unit.test_finalize import plan


@pytest.fixture
def aws(aws_credentials):
    with mock_aws():
        dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
        create_results_table(dynamodb, "t")
        s3.create_bucket(Bucket="results")
        yield HistoryIndex(dynamodb, "t"), ResultStore("results", "t", s3=s3, dynamodb=dynamodb)


def _run(campaign: str, day: int) -> IndexedRun:
    return IndexedRun(
        campaign=campaign,
        campaign_id=f"{campaign}-{day}",
        started_at=f"2026-12-{day:02d}T02:00:00.000+00:00",
        finished_at=f"2026-12-{day:02d}T02:30:00.000+00:00",
        status="completed",
        targets=["a", "b"],
        headline="a ranks first.",
        cost_usd=0.5,
        results_key=f"{campaign}-{day}/results.json",
    )


def test_runs_are_read_back_by_campaign_oldest_first(aws):
    index, _ = aws
    for run in (_run("nightly", 3), _run("weekly", 1), _run("nightly", 1), _run("nightly", 2)):
        index.record(run)
    index.record(_run("nightly", 2))  # a finalize delivered twice: the same item
    assert [r.campaign_id for r in index.runs("nightly")] == ["nightly-1", "nightly-2", "nightly-3"]
    assert index.runs("nightly")[0] == _run("nightly", 1)
    assert index.campaigns() == ["nightly", "weekly"] and index.runs("monthly") == []


def test_finalize_indexes_the_run_after_its_results(aws):
    index, store = aws
    # When a campaign ends through finalize with the index among its ports
    finalized = finalize(CampaignEnd(plan(), [], "2026-12-01T02:00:00.000+00:00"), EndPorts(store, index=index))
    # Then its run is indexed under its name, pointing at the results.json it wrote
    (run,) = index.runs(finalized.results.campaign)
    assert run.campaign_id == finalized.results.campaign_id and run.results_key == finalized.results_key
    assert run.status == "completed" and store.get_json(run.results_key)["campaign_id"] == run.campaign_id
