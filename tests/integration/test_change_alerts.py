"""Issue 37: a campaign whose finalize finds a change point first publishes it. Under `--aws-strict` (the
handlers from their synthesized assets, the aggregate function with its change-point layer, each component
signing as its role in moto), the campaign's earlier runs are in the index with their results.json: five
at four times the speed, one at today's; the first real run is the 7th, the second the 8th, the third run
at the new level, which finds the change at run 6. Its event reaches an SQS queue through an EventBridge
rule, as a deployed stack's would; the first real run's finalize found nothing (the index held it alone). Workers run as processes
(the campaign, not the worker image, is under test)."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from pgarena.analysis.history.index import indexed_run
from pgarena.analysis.history.schema import ChangeAlert
from pgarena.aws.access import Component
from pgarena.aws.alerts import DETAIL_TYPE, SOURCE, event_entry
from pgarena.aws.history_index import HistoryIndex
from pgarena.local.endpoints import REGION
from pgarena.local.runtime import TABLE, LocalRuntime
from pgarena.model import layout
from pgarena.model.results import CampaignResults
from pgarena.planning.campaign import parse_campaign
from tests.unit.test_history_alerts import _alert

pytestmark = pytest.mark.integration

# Paced at 100 tps (--rate): its throughput holds within a few percent however loaded this machine is, where an
# unpaced 2-second run's may triple from one run to the next (no change could be told from that noise).
MATRIX = {
    "campaign": "alerting",
    "repetitions": 1,
    "connections": {"monitor_interval_s": 1},
    "targets": [{"name": "pg", "provider": "embedded", "embedded": {"settings": {"fsync": "off", "synchronous_commit": "off"}}}],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 1, "jobs": 1, "duration_s": 3, "progress_s": 1, "rate_tps": 100},
        }
    ],
}
FASTER, BEFORE = 4.0, 5  # the earlier runs' speed over today's, and how many ran at it


def _scaled(results: CampaignResults, day: int, speed: float) -> CampaignResults:
    """An earlier run: today's figures times `speed` (tps; latency divided), as aggregation stored them."""
    metrics = []
    for target in results.metrics:
        points = []
        for p in target.points:
            tps = p.tps_interval.model_copy(update={"mean": p.tps_interval.mean * speed}) if p.tps_interval else None
            p95 = p.p95_interval.model_copy(update={"mean": p.p95_interval.mean / speed}) if p.p95_interval else None
            points.append(p.model_copy(update={"tps_interval": tps, "p95_interval": p95}))
        metrics.append(target.model_copy(update={"points": points}))
    return results.model_copy(
        update={
            "campaign_id": f"alerting-earlier-{day}",
            "started_at": f"2026-11-{day:02d}T02:00:00.000+00:00",
            "finished_at": f"2026-11-{day:02d}T02:01:00.000+00:00",
            "metrics": metrics,
        }
    )


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    with LocalRuntime(tmp_path_factory.mktemp("alerts-results"), aws_strict=True, container_workers=False) as rt:
        # Given a rule on pgarena's change points to a queue (what a team deploys beside the stack)
        sqs, events = boto3.client("sqs", region_name=REGION), boto3.client("events", region_name=REGION)
        url = sqs.create_queue(QueueName="changes")["QueueUrl"]
        queue = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="changes", EventPattern=json.dumps({"source": [SOURCE], "detail-type": [DETAIL_TYPE]}))
        events.put_targets(Rule="changes", Targets=[{"Id": "queue", "Arn": queue}])

        # And a first real run, then its earlier runs indexed before it: five faster, one as fast
        first = rt.run(parse_campaign(MATRIX))
        assert first.status == "SUCCEEDED", first.error
        after_first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        index = HistoryIndex(rt.dynamodb, TABLE)
        for day in range(1, BEFORE + 2):
            earlier = _scaled(first.results, day, FASTER if day <= BEFORE else 1.0)
            rt.store.put_json(layout.results_key(earlier.campaign_id), json.loads(earlier.model_dump_json()))
            index.record(indexed_run(earlier, layout.results_key(earlier.campaign_id)))

        # When the campaign runs again: the 8th run, the third at today's speed
        second = rt.run(parse_campaign(MATRIX))
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=5).get("Messages", [])
        decide = rt.iam_users.components[Component.DECIDE]
        denied = boto3.client(
            "events", region_name=REGION, aws_access_key_id=decide.access_key_id, aws_secret_access_key=decide.secret_access_key
        )
        try:
            denied.put_events(Entries=[event_entry(_alert(), "default")])
            refused = None
        except ClientError as error:
            refused = error.response["Error"]["Code"]
        yield first, second, after_first, [json.loads(m["Body"]) for m in messages], refused, rt.out_dir


def test_the_run_that_finds_the_change_publishes_it(campaign):
    _, second, after_first, events, _, _ = campaign
    assert second.status == "SUCCEEDED", second.error
    points = [(p.target, p.clients, p.complete) for t in second.results.metrics for p in t.points]
    assert points == [("pg", 1, True)], points  # a point paced by its client is no measure: no series at this run

    # Then the first real run published nothing (the index held it alone), the second one event a metric
    assert after_first == []
    assert [(e["source"], e["detail-type"]) for e in events] == [(SOURCE, DETAIL_TYPE)] * len(events)
    alerts = {(a := ChangeAlert.model_validate(e["detail"])).metric: a for e in events}
    # tps, paced, surely; p95 latency too when this machine's load let its level hold over the last two runs
    assert "tps" in alerts and set(alerts) <= {"tps", "p95_ms"}, events
    for alert in alerts.values():
        # of the change at run 6 (the last earlier run), for the worse, found by run 8 (this campaign's)
        assert (alert.campaign, alert.campaign_id, alert.run) == ("alerting", second.campaign_id, 8)
        assert (alert.target, alert.workload, alert.clients) == ("pg", "tpcb", 1)
        assert (alert.since_run, alert.since_campaign_id, alert.direction) == (6, "alerting-earlier-6", "worse")
        assert alert.message.startswith("pg tpcb 1 clients: ") and alert.message.endswith("since run 6 (2026-11-06)")
        assert alert.results_key == layout.results_key(second.campaign_id)
        assert layout.report_key(second.campaign_id, "report.html") in alert.report_keys
    tps = alerts["tps"]
    assert tps.ratio < 0.5 and tps.message.startswith("pg tpcb 1 clients: tps ") and "lower" in tps.message


def test_a_role_the_map_does_not_let_publish_is_refused(campaign):
    # Given the decide function's role (not in PUBLISHES_ALERTS) / Then moto refuses its PutEvents
    assert campaign[4] == "AccessDeniedException"


def test_each_report_links_its_names_trend_page_which_the_campaigns_end_wrote(campaign):
    first, second, _, _, _, root = campaign
    page = root / "history" / "alerting.html"
    assert page.is_file() and page.with_suffix(".csv").is_file()
    # the page holds the local runs (the earlier ones are the bucket's only): both real runs' ids
    text = page.read_text()
    assert first.campaign_id in text and second.campaign_id in text
    for run in (first, second):
        report = (run.results_dir / "report.html").read_text()
        assert 'href="../history/alerting.html"' in report
        assert (run.results_dir / "../history/alerting.html").resolve() == page.resolve()
