"""The index of finished runs in the results table: finalize adds each run, `history --stack` reads it."""

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from pgarena.analysis.history.index import indexed_run
from pgarena.analysis.history.schema import IndexedRun
from pgarena.aws.history_index import HistoryIndex
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.campaign.finalize import CampaignEnd, finalize
from pgarena.campaign.ports import EndPorts
from pgarena.cli import EXIT_CHANGED, app
from pgarena.model import layout
from pgarena.model.results import CampaignResults
from tests.unit.history_runs import Night, write_nights
from tests.unit.test_finalize import plan
from tests.unit.test_run_aws import OUTPUTS, deploy

runner = CliRunner()


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


def test_history_stack_copies_the_indexed_runs_and_reads_them(aws, tmp_path):
    # Given a deployed stack whose index holds eight nightly runs, their results.json in the bucket
    index, store = aws
    made = tmp_path / "made"
    for folder in write_nights(made, [Night() for _ in range(4)] + [Night(speed={"b": 0.75}) for _ in range(4)]):
        results = CampaignResults.model_validate_json((folder / "results.json").read_text())
        key = layout.results_key(results.campaign_id)
        store.put_bytes(key, (folder / "results.json").read_bytes(), "application/json")
        index.record(indexed_run(results, key))
    deploy({**OUTPUTS, "ResultsTableName": "t"})
    out = tmp_path / "results"
    # When history reads the stack
    listed = runner.invoke(app, ["history", "--stack", "Pgarena", "--out", str(out), "--json"])
    # Then every indexed run was copied into --out and listed, and b's change found as in a local root
    assert listed.exit_code == 0, listed.output
    assert sorted(p.parent.name for p in out.glob("*/results.json")) == sorted(p.name for p in made.iterdir())
    told = runner.invoke(app, ["history", "nightly", "--stack", "Pgarena", "--out", str(out), "--fail-on-change"])
    assert told.exit_code == EXIT_CHANGED and "copied 0" in told.output and "since run 5" in told.output
