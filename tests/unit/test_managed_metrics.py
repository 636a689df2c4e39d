"""Managed metrics (CloudWatch, AWS/RDS) over each run's window: the matrix field, the queries, the summary of
an answer (recomputed from the kept answer), finalize's read for the targets that name their instance, and a
refused or failed read kept as a named note that never fails the campaign."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from pydantic import ValidationError

from pgarena.aws.cloudwatch import CloudWatchMetrics
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.campaign.finalize import CampaignEnd, finalize
from pgarena.campaign.managed_metrics import by_run, read_managed_metrics, run_window
from pgarena.campaign.ports import EndPorts
from pgarena.model import layout
from pgarena.model.managed_metrics import (
    METRICS,
    STATS,
    CloudWatchSource,
    MetricsNote,
    MetricsReadFailed,
    measured_window,
    metric_queries,
    query_id,
    query_window,
    summarize,
)
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import CampaignResults, StepSummary
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.report.managed import managed_tables
from pgarena.report.render import render_html, render_markdown
from pgarena.report.view import build_report
from tests.conftest import FIXTURES

T0 = datetime(2026, 11, 27, 12, 0, 13, tzinfo=UTC)


def answer(values: dict[str, list[float]]) -> dict:
    """GetMetricData's answer as the adapter gives it: every query, the given metrics' values as every stat."""
    results = []
    for spec in METRICS:
        for stat in STATS:
            found = values.get(spec.name, [])
            shifted = [v - 1 if stat == "Minimum" else v + 1 if stat == "Maximum" else v for v in found]
            stamps = [(T0 + timedelta(minutes=i)).isoformat() for i in range(len(found))]
            results.append({"Id": query_id(spec.name, stat), "StatusCode": "Complete", "Timestamps": stamps, "Values": shifted})
    return {"MetricDataResults": results, "Messages": []}


@pytest.mark.parametrize("instance", ["db1", "a", "pg-15-durable", "Aurora-Writer-1", "x" * 63])
def test_an_rds_instance_identifier_is_accepted(instance):
    assert CloudWatchSource(instance=instance).instance == instance


@pytest.mark.parametrize("instance", ["", "1db", "db--1", "db-", "-db", "db_1", "db.1", "x" * 64])
def test_a_name_rds_would_refuse_is_refused(instance):
    with pytest.raises(ValidationError):
        CloudWatchSource(instance=instance)


def test_the_matrix_field_is_optional_and_validated():
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"][0]["cloudwatch"] = {"instance": "db-1", "region": "eu-west-1"}
    campaign = parse_campaign(data)
    assert campaign.targets[0].cloudwatch == CloudWatchSource(instance="db-1", region="eu-west-1")
    assert campaign.targets[1].cloudwatch is None
    data["targets"][0]["cloudwatch"] = {"instance": "db-1", "region": "Europe"}
    with pytest.raises(Exception, match="region"):
        parse_campaign(data)


def test_the_window_asked_is_widened_to_whole_periods():
    start, end = query_window(T0, T0 + timedelta(seconds=30))
    assert (start, end) == (T0.replace(second=0), T0.replace(second=0) + timedelta(minutes=1))
    start, end = query_window(T0, T0 + timedelta(seconds=100))
    assert (start.second, end - start) == (0, timedelta(minutes=2))
    # A window on a period's edge asks for that period, at least one
    edge = T0.replace(second=0)
    assert query_window(edge, edge) == (edge, edge + timedelta(minutes=1))


def test_the_measured_window_starts_after_the_warm_up():
    start, end = measured_window(T0.isoformat(), (T0 + timedelta(seconds=30)).isoformat(), 5)
    assert (start, end) == (T0 + timedelta(seconds=5), T0 + timedelta(seconds=30))
    assert measured_window(T0.isoformat(), T0.isoformat(), 5) == (T0, T0)  # a warm-up past the end: an empty window


def test_every_metric_is_asked_as_its_minimum_average_and_maximum_of_the_instance():
    queries = metric_queries("db-1")
    assert len(queries) == len(METRICS) * len(STATS) and len({q["Id"] for q in queries}) == len(queries)
    assert all(q["Id"][0].islower() and q["Id"].replace("_", "").isalnum() for q in queries)
    assert {q["MetricStat"]["Metric"]["Namespace"] for q in queries} == {"AWS/RDS"}
    assert {json.dumps(q["MetricStat"]["Metric"]["Dimensions"]) for q in queries} == {
        json.dumps([{"Name": "DBInstanceIdentifier", "Value": "db-1"}])
    }
    assert {q["MetricStat"]["Period"] for q in queries} == {60}


def test_a_summary_is_the_least_minimum_the_mean_average_and_the_greatest_maximum():
    # Given three periods of CPU and write IOPS, and no replica lag (a primary publishes none)
    summaries = summarize(answer({"CPUUtilization": [10.0, 20.0, 60.0], "WriteIOPS": [100.0, 300.0]}))

    # Then each metric with datapoints is summarized, the others left out
    by_name = {s.name: s for s in summaries}
    assert set(by_name) == {"CPUUtilization", "WriteIOPS"}
    cpu = by_name["CPUUtilization"]
    assert (cpu.min, cpu.avg, cpu.max, cpu.datapoints, cpu.unit) == (9.0, 30.0, 61.0, 3, "Percent")
    assert (by_name["WriteIOPS"].avg, by_name["WriteIOPS"].datapoints) == (200.0, 2)


def test_an_answer_in_several_pages_is_summarized_whole():
    whole = answer({"CPUUtilization": [10.0, 20.0, 60.0]})
    first = answer({"CPUUtilization": [10.0]})
    second = answer({"CPUUtilization": [20.0, 60.0]})
    paged = {"MetricDataResults": first["MetricDataResults"] + second["MetricDataResults"]}
    assert summarize(paged) == summarize(whole)


def test_an_answer_without_datapoints_summarizes_nothing():
    assert summarize(answer({})) == [] and summarize({}) == []


# --- finalize's read ---------------------------------------------------------------------------------------


class Reads:
    """The MetricReads port: answers each read with `values`, or refuses it."""

    def __init__(self, values: dict[str, list[float]] | None = None, refuse: MetricsReadFailed | Exception | None = None):
        self.values, self.refuse = values or {}, refuse
        self.asked: list[tuple[str | None, datetime, datetime]] = []

    def metric_data(self, region, queries, start, end):
        self.asked.append((region, start, end))
        if self.refuse is not None:
            raise self.refuse
        return answer(self.values)


@pytest.fixture
def store(aws_credentials):
    with mock_aws():
        dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
        create_results_table(dynamodb, "t")
        s3.create_bucket(Bucket="results")
        yield ResultStore("results", "t", s3=s3, dynamodb=dynamodb)


def plan(cloudwatch: dict | None = None, placement: dict | None = None, clients=(1, 2)):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    other = {**data["targets"][0], "name": "plain"}
    data["targets"] = [data["targets"][0], other]
    if cloudwatch:
        data["targets"][0]["cloudwatch"] = cloudwatch
    if placement:
        data["targets"][0]["placement"] = placement
    data["workloads"][0]["run"]["clients"] = list(clients)
    return plan_campaign(parse_campaign(data), "cid")


def summaries_of(p, warmup_s: int = 2) -> list[StepSummary]:
    found = []
    for target in p.targets:
        for i, step in enumerate(target.steps):
            started = T0 + timedelta(minutes=2 * i)
            found.append(
                StepSummary(
                    campaign_id=p.campaign_id,
                    step_id=step.step_id,
                    target=step.target,
                    workload=step.workload,
                    kind=step.kind,
                    tool=step.tool,
                    status="succeeded",
                    started_at=started.isoformat(),
                    finished_at=(started + timedelta(seconds=70)).isoformat(),
                    wall_s=70.0,
                    warmup_s=warmup_s if step.kind == "run" else None,
                )
            )
    return found


def test_only_the_runs_of_a_target_that_names_its_instance_are_read(store):
    # Given a target naming its instance (placed in eu-west-1) and one that does not
    p = plan({"instance": "db-1"}, {"region": "eu-west-1", "subnets": ["s"], "security_groups": ["g"]})
    reads = Reads({"CPUUtilization": [40.0, 50.0]})

    # When finalize's read runs
    found = read_managed_metrics(p, summaries_of(p), reads, store)

    # Then each run of the first is read once, in its placement's region, over its window as whole minutes
    runs = [s for s in p.targets[0].steps if s.kind == "run"]
    assert set(found) == {s.step_id for s in runs} and len(reads.asked) == len(runs)
    assert {region for region, _, _ in reads.asked} == {"eu-west-1"}
    first = found[runs[0].step_id]
    assert first.window_start == (T0 + timedelta(minutes=2, seconds=2)).isoformat(timespec="milliseconds")
    assert (first.query_start, first.query_end) == (
        (T0.replace(second=0) + timedelta(minutes=2)).isoformat(),
        (T0.replace(second=0) + timedelta(minutes=4)).isoformat(),
    )
    assert [m.name for m in first.metrics] == ["CPUUtilization"] and first.note is None and first.period_s == 60


def test_every_figure_is_recomputed_from_the_kept_answer(store):
    p = plan({"instance": "db-1", "region": "us-west-2"})
    found = read_managed_metrics(p, summaries_of(p), Reads({"CPUUtilization": [10.0, 90.0], "ReadIOPS": [5.0]}), store)

    for step_id, metrics in found.items():
        # The answer is kept beside the step's raw output, with what was asked
        assert metrics.raw == layout.managed_metrics_key("cid", step_id)
        kept = store.get_json(metrics.raw)
        assert kept["request"]["region"] == "us-west-2" and kept["request"]["MetricDataQueries"] == metric_queries("db-1")
        assert (kept["request"]["StartTime"], kept["request"]["EndTime"]) == (metrics.query_start, metrics.query_end)
        # And the summary is what the kept answer gives
        assert summarize(kept["answer"]) == metrics.metrics


def test_a_refused_read_is_a_named_note_and_the_targets_later_runs_are_not_tried(store):
    p = plan({"instance": "db-1"}, clients=(1, 2, 4))
    reads = Reads(refuse=MetricsReadFailed("cloudwatch:GetMetricData in the home region: AccessDenied: no", denied=True))

    found = read_managed_metrics(p, summaries_of(p), reads, store)

    notes = [found[s.step_id].note for s in p.targets[0].steps if s.kind == "run"]
    assert len(reads.asked) == 1
    assert notes[0].kind == "denied" and "AccessDenied" in notes[0].message
    assert [n.kind for n in notes[1:]] == ["not_read", "not_read"] and "AccessDenied" in notes[1].message
    assert all(m.metrics == [] and m.raw is None for m in found.values())


def test_any_failure_of_a_read_is_a_note_too(store):
    p = plan({"instance": "db-1"}, clients=(1,))
    found = read_managed_metrics(p, summaries_of(p), Reads(refuse=TimeoutError("read timed out")), store)
    (metrics,) = found.values()
    assert metrics.note.kind == "failed" and metrics.note.message == "TimeoutError: read timed out"


def test_an_instance_with_no_datapoints_says_so(store):
    p = plan({"instance": "db-typo"}, clients=(1,))
    (metrics,) = read_managed_metrics(p, summaries_of(p), Reads({}), store).values()
    assert metrics.note.kind == "no_datapoints" and "db-typo" in metrics.note.message and metrics.raw is not None


def test_a_sharded_run_is_read_over_its_shards_window():
    p = plan({"instance": "db-1"}, clients=(1,))
    run = next(s for s in p.targets[0].steps if s.kind == "run")
    (summary,) = [s for s in summaries_of(p, warmup_s=3) if s.step_id == run.step_id]
    shards = [
        summary.model_copy(
            update={
                "step_id": f"{run.step_id}/s{i}",
                "started_at": (T0 + timedelta(seconds=i)).isoformat(),
                "finished_at": (T0 + timedelta(seconds=60 + 10 * i)).isoformat(),
            }
        )
        for i in range(2)
    ]
    # From the earliest shard's start past its warm-up to the latest shard's end
    runs = by_run([*shards, *summaries_of(p)[:1]])
    assert set(runs) == {run.step_id, p.targets[0].steps[0].step_id}
    assert run_window(runs[run.step_id]) == (T0 + timedelta(seconds=3), T0 + timedelta(seconds=70))
    assert run_window([]) is None


def _end(p, store):
    for summary in summaries_of(p):
        store.put_summary(summary)
    outcomes = [TargetOutcome(name=t.name) for t in p.targets]
    return CampaignEnd(p, outcomes, T0.isoformat())


def test_finalize_puts_each_runs_metrics_in_results_json(store):
    p = plan({"instance": "db-1"}, clients=(1,))
    finalized = finalize(_end(p, store), EndPorts(store, metrics=Reads({"FreeableMemory": [2.0e9, 1.0e9]})))

    kept = CampaignResults.model_validate(store.get_json(finalized.results_key))
    measured, plain = kept.targets
    (run,) = measured.workloads
    assert run.managed_metrics.instance == "db-1" and [m.name for m in run.managed_metrics.metrics] == ["FreeableMemory"]
    assert run.managed_metrics.raw == layout.relative("cid", layout.managed_metrics_key("cid", p.targets[0].steps[1].step_id))
    assert all(w.managed_metrics is None for w in plain.workloads)


def test_a_denied_read_never_fails_the_campaign_nor_loses_its_results(store):
    p = plan({"instance": "db-1"}, clients=(1,))
    refused = Reads(refuse=MetricsReadFailed("AccessDenied", denied=True))

    finalized = finalize(_end(p, store), EndPorts(store, metrics=refused))

    kept = CampaignResults.model_validate(store.get_json(finalized.results_key))
    assert [t.status for t in kept.targets] == ["succeeded", "succeeded"]
    assert kept.targets[0].workloads[0].managed_metrics.note.kind == "denied"
    assert "report.html" in finalized.reports


# --- the adapter ---------------------------------------------------------------------------------------------


def test_the_adapter_reads_what_cloudwatch_holds_for_the_instance(aws_credentials):
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch")
        minute = T0.replace(second=0)
        for i, value in enumerate([10.0, 30.0]):
            cloudwatch.put_metric_data(
                Namespace="AWS/RDS",
                MetricData=[
                    {
                        "MetricName": "CPUUtilization",
                        "Dimensions": [{"Name": "DBInstanceIdentifier", "Value": "db-1"}],
                        "Timestamp": minute + timedelta(minutes=i, seconds=5),
                        "Value": value,
                        "Unit": "Percent",
                    }
                ],
            )
        reads = CloudWatchMetrics(lambda region: boto3.client("cloudwatch", region_name=region))

        got = reads.metric_data(None, metric_queries("db-1"), minute, minute + timedelta(minutes=2))

    json.dumps(got)  # JSON as it is kept
    (cpu,) = summarize(got)
    assert (cpu.min, cpu.avg, cpu.max, cpu.datapoints) == (10.0, 20.0, 30.0, 2)


class _Refusing:
    def get_paginator(self, name):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not authorized"}}, "GetMetricData")


def test_the_adapter_names_a_refusal():
    with pytest.raises(MetricsReadFailed, match="AccessDenied: not authorized") as refused:
        CloudWatchMetrics(lambda region: _Refusing()).metric_data("eu-west-1", [], T0, T0)
    assert refused.value.denied and "eu-west-1" in str(refused.value)


# --- the report ----------------------------------------------------------------------------------------------


def test_the_report_shows_each_runs_metrics_and_notes_under_servers(store):
    # Given a campaign whose first run's metrics were read and whose second run's read was refused
    p = plan({"instance": "db-1", "region": "eu-west-1"}, clients=(1, 2))
    reads = Reads({"CPUUtilization": [12.0, 55.5], "FreeableMemory": [2 * 2.0**30]})
    results = finalize(_end(p, store), EndPorts(store, metrics=reads)).results
    second = results.targets[0].workloads[1]
    refused = second.managed_metrics.model_copy(
        update={"metrics": [], "raw": None, "note": MetricsNote(kind="denied", message="AccessDenied: not authorized")}
    )
    results.targets[0].workloads[1] = second.model_copy(update={"managed_metrics": refused})

    # When the report's tables are made
    (table,) = managed_tables(results)

    # Then one table for the target that named its instance: a column per metric read, a row per run
    assert (table.target, table.instance, table.region, table.period_s) == ("a", "db-1", "eu-west-1", 60)
    assert table.columns == ["CPUUtilization", "FreeableMemory"]
    first, denied = table.rows
    assert first.cells == {"CPUUtilization": "33.8 % (11.0 % – 56.5 %)", "FreeableMemory": "2.00 GiB"}
    assert first.raw is not None and first.note is None
    assert denied.cells == {} and denied.note == "denied: AccessDenied: not authorized"

    # And the HTML and Markdown reports show them
    html, markdown = render_html(build_report(results)), render_markdown(build_report(results))
    assert "CloudWatch metrics of DB instance <code>db-1</code>" in html and "33.8 % (11.0 % – 56.5 %)" in html
    assert "denied: AccessDenied: not authorized" in html
    assert "| CPUUtilization | FreeableMemory |" in markdown and "| 33.8 % (11.0 % – 56.5 %) |" in markdown


def test_a_target_whose_every_read_was_refused_shows_its_notes_in_a_column_of_their_own(store):
    p = plan({"instance": "db-1"}, clients=(1, 2))
    results = finalize(
        _end(p, store), EndPorts(store, metrics=Reads(refuse=MetricsReadFailed("AccessDenied", denied=True)))
    ).results

    (table,) = managed_tables(results)
    assert table.columns == [] and [r.note.split(":")[0] for r in table.rows] == ["denied", "not_read"]
    markdown = render_markdown(build_report(results))
    assert "| run | note |\n|---|---|\n| tpcb · r1 | denied: AccessDenied |" in markdown
    assert "<th>run</th><th>note</th><th>answer kept</th>" in render_html(build_report(results))


def test_a_report_without_managed_metrics_shows_none(store):
    p = plan(clients=(1,))
    results = finalize(_end(p, store), EndPorts(store)).results
    assert managed_tables(results) == [] and "CloudWatch" not in render_html(build_report(results))
