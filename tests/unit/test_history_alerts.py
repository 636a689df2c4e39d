"""Which change points a run found first (pgarena.analysis.history.alerts), what finalize does with them
(pgarena.campaign.alerting), and how they are published (pgarena.aws.alerts: EventBridge, SNS, in moto)."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from pgarena.analysis.history import alerts, detect, index
from pgarena.analysis.history.schema import Change, ChangeAlert, IndexedRun, Series, Split, TrendPoint
from pgarena.aws.alerts import DETAIL_TYPE, SOURCE, EventAlerts
from pgarena.campaign.alerting import alert_new_changes
from pgarena.cli import app
from pgarena.model import layout
from pgarena.report.links import trend_link
from pgarena.report.trends import write_trend_page
from tests.unit.history_runs import Night, write_nights

SLOWER = 0.75


def _series(runs: int, changes: list[Change], splits: list[Split] | None = None, target: str = "b") -> Series:
    points = [TrendPoint(run=r, campaign_id=f"c{r}", started_at=f"2026-12-{r:02d}", value=100.0, n=1) for r in range(1, runs + 1)]
    return Series(
        target=target, workload="tpcb", clients=2, metric="tps", unit="tps", points=points, splits=splits or [], changes=changes
    )


def _change(run: int, direction: str = "worse") -> Change:
    ratio = 0.75 if direction == "worse" else 1.25
    return Change(
        run=run,
        started_at=f"2026-12-{run:02d}",
        ratio=ratio,
        ci95_low=ratio - 0.05,
        ci95_high=ratio + 0.05,
        p=0.001,
        direction=direction,
        before_runs=4,
        after_runs=3,
        message=f"b tpcb 2 clients: tps since run {run}",
    )


# The pure decision: a change is new at a run when the history through it has it and the one before did not.


def test_a_change_the_run_before_did_not_find_is_new():
    (found,) = alerts.new_changes([_series(6, [])], [_series(7, [_change(5)])], 7)
    assert found[1].run == 5


def test_a_change_found_before_is_not_new_again():
    assert alerts.new_changes([_series(7, [_change(5)])], [_series(8, [_change(5)])], 8) == []


def test_a_change_that_moved_by_less_than_min_runs_is_the_same_change():
    # PELT placed it at run 5 with seven runs, at run 6 with eight: one change, told once
    assert alerts.new_changes([_series(7, [_change(5)])], [_series(8, [_change(6)])], 8) == []


def test_a_change_in_the_other_direction_at_the_same_run_is_new():
    (found,) = alerts.new_changes([_series(7, [_change(5, "worse")])], [_series(8, [_change(5, "better")])], 8)
    assert found[1].direction == "better"


def test_a_later_change_of_the_same_direction_is_new():
    (found,) = alerts.new_changes([_series(10, [_change(5)])], [_series(11, [_change(5), _change(9)])], 11)
    assert found[1].run == 9


def test_a_series_not_measured_at_the_run_alerts_nothing():
    # the target failed at run 8: its series ends at run 7, whatever its changes
    assert alerts.new_changes([], [_series(7, [_change(5)])], 8) == []


def test_a_change_before_the_latest_split_is_not_news():
    split = Split(run=6, started_at="2026-12-06", changed=["setting shared_buffers: 128MB -> 256MB"])
    assert alerts.new_changes([], [_series(8, [_change(4)], [split])], 8) == []


def test_a_series_new_to_the_campaign_can_alert():
    # a target added to the matrix: no series before, its change is new
    (found,) = alerts.new_changes([_series(7, [], target="a")], [_series(7, [_change(4)])], 7)
    assert found[0].target == "b"


# On the runs history reads (seeded noise, b 25% slower from run 5 on): each change is told once, by one run.


@pytest.fixture
def nights(tmp_path):
    write_nights(tmp_path, [Night() for _ in range(4)] + [Night(speed={"b": SLOWER}) for _ in range(6)])
    return index.read_runs(tmp_path).runs


def test_walking_the_runs_b_slower_is_told_once_and_a_never(nights):
    told = []
    for i in range(1, len(nights) + 1):
        run, found = alerts.first_found(nights[:i], nights[i - 1][1].campaign_id)
        assert run == i
        told += [(run, s.target, s.metric, c.run, c.direction) for s, c in found]

    # Then b's tps and p95 change at run 5 are told once each, by the same run (no earlier than run 7: three
    # runs at the new level), and nothing of a's
    assert sorted((t[1], t[2], t[3], t[4]) for t in told) == [("b", "p95_ms", 5, "worse"), ("b", "tps", 5, "worse")]
    assert len({t[0] for t in told}) == 1 and told[0][0] >= 7


def test_first_found_numbers_runs_from_the_window(nights):
    # Given the window's runs only (the campaign's first two not read)
    run, found = alerts.first_found(nights[2:8], nights[7][1].campaign_id, first_run=3)
    assert run == 8
    assert {c.run for _, c in found} <= {5} and all(f"since run {c.run} " in c.message for _, c in found)


# finalize's use case, through its ports.


class _Index:
    def __init__(self, runs):
        self.items = [IndexedRun(campaign=r.campaign, campaign_id=r.campaign_id, started_at=r.started_at, finished_at=r.finished_at,
                                 status=r.status, targets=[t.name for t in r.targets], headline="", results_key=layout.results_key(r.campaign_id))
                      for _, r in runs]  # fmt: skip

    def runs(self, campaign):
        return [i for i in self.items if i.campaign == campaign]


class _Documents:
    def __init__(self, runs, missing=()):
        self.docs = {layout.results_key(r.campaign_id): json.loads(r.model_dump_json()) for _, r in runs}
        self.missing = set(missing)

    def get_json(self, key):
        if key in self.missing:
            raise KeyError(f"NoSuchKey {key}")
        return self.docs[key]


class _Publisher:
    def __init__(self, problems=()):
        self.published, self.problems = [], list(problems)

    def publish(self, found):
        self.published += found
        return self.problems


def test_the_run_that_finds_the_change_publishes_it_with_its_keys(nights):
    # Given the index and bucket through the run that first finds b's change (walked as above)
    for i in range(6, len(nights) + 1):
        runs = nights[:i]
        publisher = _Publisher()
        results = runs[-1][1]
        alerted = alert_new_changes(results, ["report.html", "summary.md"], _Index(runs), _Documents(runs), publisher)
        if alerted.alerts:
            break
    assert alerted.alerts == publisher.published and alerted.problems == []
    alert = alerted.alerts[0]
    assert (alert.campaign, alert.campaign_id, alert.run, alert.target, alert.since_run) == (
        "nightly",
        results.campaign_id,
        i,
        "b",
        5,
    )
    assert alert.since_campaign_id == nights[4][1].campaign_id and alert.direction == "worse"
    assert alert.results_key == layout.results_key(results.campaign_id)
    assert alert.report_keys == [
        layout.report_key(results.campaign_id, "report.html"),
        layout.report_key(results.campaign_id, "summary.md"),
    ]


def test_fewer_runs_than_a_change_needs_read_nothing(nights):
    runs = nights[:5]
    documents = _Documents(runs, missing=[layout.results_key(r.campaign_id) for _, r in runs])  # any read would fail
    alerted = alert_new_changes(runs[-1][1], [], _Index(runs), documents, _Publisher())
    assert (alerted.alerts, alerted.problems) == ([], [])


def test_an_unreadable_run_is_left_out_and_said(nights):
    runs = nights[:10]
    lost = layout.results_key(runs[1][1].campaign_id)
    alerted = alert_new_changes(runs[-1][1], [], _Index(runs), _Documents(runs, missing=[lost]), _Publisher())
    assert len(alerted.problems) == 1 and lost in alerted.problems[0]


def test_without_the_library_finalize_says_how_to_install_it(nights, monkeypatch):
    monkeypatch.setattr(detect, "available", lambda: False)
    runs = nights[:8]
    alerted = alert_new_changes(runs[-1][1], [], _Index(runs), _Documents(runs), _Publisher())
    assert (alerted.alerts, alerted.problems) == ([], [detect.INSTALL_HINT])


# Publishing: EventBridge's default bus to an SQS queue through a rule, and an SNS topic to another queue.


def _alert(direction: str = "worse") -> ChangeAlert:
    return ChangeAlert(
        campaign="nightly", campaign_id="nightly-20261208T020000Z", run=8, target="aurora", workload="tpcb", clients=64,
        metric="tps", unit="tps", direction=direction, since_run=5, since_campaign_id="nightly-20261205T020000Z",
        since_started_at="2026-12-05T02:00:00+00:00", ratio=0.82, ci95_low=0.76, ci95_high=0.88, p=0.001,
        message="aurora tpcb 64 clients: tps 18% lower [12%, 24%] since run 5 (2026-12-05)",
        results_key=layout.results_key("nightly-20261208T020000Z"), report_keys=[],
    )  # fmt: skip


def _queue(sqs, name: str) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def _received(sqs, url: str) -> list[dict]:
    return [json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])]


@mock_aws
def test_each_alert_is_an_event_on_the_bus_and_a_message_on_the_topic():
    # Given a rule on pgarena's events to a queue, and a topic with a queue subscribed
    events, sqs, sns = (boto3.client(s, region_name="us-east-1") for s in ("events", "sqs", "sns"))
    events_url, events_arn = _queue(sqs, "events")
    events.put_rule(Name="changes", EventPattern=json.dumps({"source": [SOURCE], "detail-type": [DETAIL_TYPE]}))
    events.put_targets(Rule="changes", Targets=[{"Id": "q", "Arn": events_arn}])
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    topic_url, topic_queue = _queue(sqs, "topic")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=topic_queue)

    # When two alerts are published
    problems = EventAlerts(events, "default", "results-bucket", sns, topic).publish([_alert(), _alert("better")])

    # Then each is an event whose detail is the alert, located in the bucket, and a message with its direction
    assert problems == []
    delivered = _received(sqs, events_url)
    assert [(e["source"], e["detail-type"]) for e in delivered] == [(SOURCE, DETAIL_TYPE)] * 2
    details = [ChangeAlert.model_validate(e["detail"]) for e in delivered]
    assert [d.direction for d in details] == ["worse", "better"] and {d.results_bucket for d in details} == {"results-bucket"}
    messages = _received(sqs, topic_url)
    assert [m["MessageAttributes"]["direction"]["Value"] for m in messages] == ["worse", "better"]
    assert messages[0]["Message"].startswith("aurora tpcb 64 clients: tps 18% lower [12%, 24%] since run 5 (2026-12-05)")
    assert "s3://results-bucket/" in messages[0]["Message"]


@mock_aws
def test_an_alert_that_cannot_be_published_is_said_not_raised():
    events = boto3.client("events", region_name="us-east-1")
    sns = boto3.client("sns", region_name="us-east-1")
    missing = "arn:aws:sns:us-east-1:123456789012:not-there"
    problems = EventAlerts(events, "no-such-bus", "b", sns, missing).publish([_alert()])
    assert len(problems) == 2 and all("aurora tpcb 64 clients" in p for p in problems)


# The trend page each report links to (../history/<name>.html from its folder).


def test_the_trend_page_is_written_where_the_reports_link(tmp_path):
    # Given two campaign names' runs under one root
    write_nights(tmp_path, [Night() for _ in range(3)])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "results.json").write_text("{not json")  # unreadable: peeked as maybe this name's, said

    # When the end of a campaign refreshes its name's page
    page = write_trend_page(tmp_path, "nightly")

    # Then it is <root>/history/<name>.html, what a report in <root>/<id>/ links to, with its CSV, of that name's runs
    assert page == tmp_path / "history" / "nightly.html"
    folder = next(p for p in tmp_path.iterdir() if p.name.startswith("nightly-"))
    assert (folder / trend_link("nightly")).resolve() == page.resolve()
    assert page.with_suffix(".csv").read_text().count("\nnightly,") == 3 * 4  # 3 runs x 2 targets x 2 metrics
    assert write_trend_page(tmp_path, "absent") is None and write_trend_page(tmp_path, "../x") is None


def test_history_name_refreshes_the_linked_page(tmp_path):
    write_nights(tmp_path, [Night() for _ in range(2)])
    result = CliRunner().invoke(app, ["history", "nightly", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "history" / "nightly.html").is_file()
    # and the listing still finds the one campaign (the page's folder holds no results.json)
    listed = CliRunner().invoke(app, ["history", "--out", str(tmp_path), "--json"])
    assert [c["campaign"] for c in json.loads(listed.output)["campaigns"]] == ["nightly"]


def test_what_finalize_keeps_of_a_run_finds_what_the_whole_run_does(nights):
    # Given the runs as finalize holds them (metrics, facts, one run per point) and as read in full
    slim = [(folder, alerts.series_only(r)) for folder, r in nights]
    assert all(len(s.model_dump_json()) < len(r.model_dump_json()) for (_, s), (_, r) in zip(slim, nights))

    # When walking them / Then each run finds the same changes
    for i in range(6, len(nights) + 1):
        full = alerts.first_found(nights[:i], nights[i - 1][1].campaign_id)
        kept = alerts.first_found(slim[:i], slim[i - 1][1].campaign_id)
        assert kept[0] == full[0] and [(s, c) for s, c in kept[1]] == [(s, c) for s, c in full[1]]


def test_reading_one_names_runs_skips_the_others_by_their_head(tmp_path):
    # Given a name's runs and another name's folder whose results.json is broken past its first keys
    write_nights(tmp_path, [Night() for _ in range(2)])
    (tmp_path / "other-1").mkdir()
    (tmp_path / "other-1" / "results.json").write_text(
        '{\n  "campaign_id": "other-1",\n  "campaign": "other",\n  "targets": [oops'
    )

    # When reading the first name's runs / Then the other is skipped unread; read whole, it is said unreadable
    one = index.read_runs(tmp_path, "nightly")
    assert (len(one.runs), one.unreadable) == (2, [])
    everything = index.read_runs(tmp_path)
    assert len(everything.runs) == 2 and len(everything.unreadable) == 1
