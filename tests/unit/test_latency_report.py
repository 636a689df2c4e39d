"""A point's merged latency from aggregation to the report's charts: per interval, by percentile, against clients."""

import json
import random
import re

import pytest

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.latency import encode, new_histogram
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import CampaignResults, ProgressSample, StepSummary, TargetResult, WorkloadResult
from pgarena.model.series import SecondBucket, ShardSeries
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.report import build_reports
from tests.conftest import FIXTURES
from tests.unit.test_latency_intervals import brute_percentile

SECONDS = 6


def histogram_of(latencies_us):
    h = new_histogram()
    for value in latencies_us:
        h.record_value(value)
    return h


@pytest.fixture(scope="module")
def aggregated():
    """Two targets, 1 and 4 clients, two repetitions each: every run with its histogram and per-second series."""
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"][1] = {**data["targets"][0], "name": "b"}
    data["workloads"][0]["run"].update({"clients": [1, 4], "duration_s": SECONDS, "progress_s": 2})
    data["repetitions"] = 2
    plan = plan_campaign(parse_campaign(data), "cid")
    rng = random.Random(5)
    summaries, series, outcomes, raw = [], {}, [], {}
    for target in plan.targets:
        steps = []
        for step in target.steps:
            steps.append({"step_id": step.step_id, "status": "succeeded"})
            common = dict(campaign_id="cid", step_id=step.step_id, target=target.name, workload="tpcb", tool="pgbench")
            if step.kind != "run":
                summaries.append(
                    StepSummary(kind=step.kind, status="succeeded", started_at="t0", finished_at="t1", wall_s=1.0, **common)
                )
                continue
            slow = 3.0 if target.name == "b" else 1.0
            per_second = {
                100 + t: [int(rng.lognormvariate(7 + step.clients / 4, 0.8) * slow) + 1 for _ in range(40)]
                for t in range(SECONDS)
            }
            raw[step.step_id] = per_second
            buckets = [SecondBucket(t=t, count=len(lat), hist=encode(histogram_of(lat))) for t, lat in per_second.items()]
            series[step.step_id] = ShardSeries(start_epoch=100.0, end_epoch=100.0 + SECONDS, seconds=buckets)
            every = [v for lat in per_second.values() for v in lat]
            summaries.append(
                StepSummary(
                    kind="run",
                    status="succeeded",
                    started_at="t0",
                    finished_at="t1",
                    wall_s=float(SECONDS),
                    clients=step.clients,
                    repetition=step.repetition,
                    tps=len(every) / SECONDS,
                    transactions=len(every),
                    progress=[ProgressSample(elapsed_s=float(t), tps=80.0) for t in (2, 4, 6)],
                    latency_histogram=encode(histogram_of(every)),
                    series=f"cid/raw/{step.step_id}/series.json",
                    **common,
                )
            )
        outcomes.append(TargetOutcome(name=target.name, steps=steps))
    return aggregate(plan, outcomes, summaries, "s", "f", series=series), raw


def points(results):
    return {(m.target, p.clients): p for m in results.metrics for p in m.points}


def test_every_point_carries_its_runs_merged_latency_per_interval(aggregated):
    results, raw = aggregated
    a4 = points(results)[("a", 4)].merged_latency
    # Then the point's intervals (2 s each, from progress_s) merge both repetitions' transactions
    assert a4 is not None and a4.interval_s == 2
    runs = [lat for step_id, lat in raw.items() if step_id.startswith("a/") and "/c4-" in step_id]
    assert len(runs) == 2
    for k, interval in enumerate(a4.intervals):
        latencies = [v for run in runs for t in (100 + 2 * k, 101 + 2 * k) for v in run[t]]
        assert interval.transactions == len(latencies) and interval.runs == 2
        assert (interval.p50, interval.p95, interval.p99) == tuple(brute_percentile(latencies, p) for p in (50, 95, 99))
    assert [i.elapsed_s for i in a4.intervals] == [2.0, 4.0, 6.0]
    every = [v for run in runs for lat in run.values() for v in lat]
    assert a4.latency_ms.p99 == brute_percentile(every, 99) and a4.transactions == len(every)


def test_results_json_keeps_the_figures_not_the_histograms(aggregated):
    results, _ = aggregated
    text = results.model_dump_json()
    assert '"merged_latency"' in text and '"histograms"' not in text and '"_histograms"' not in text
    # A point's figures survive results.json's round trip (the report is rebuilt from it)
    again = CampaignResults.model_validate_json(text)
    assert points(again)[("b", 1)].merged_latency == points(results)[("b", 1)].merged_latency


def test_the_report_draws_latency_over_time_by_percentile_and_against_clients(aggregated):
    results, _ = aggregated
    html = build_reports(results)["report.html"].decode()
    for chart in (
        "chart-latency-time-tpcb-c1",
        "chart-latency-time-tpcb-c4",
        "chart-distribution-tpcb-c4",
        "chart-latency-clients-tpcb",
    ):
        assert re.search(rf'<svg id="{chart}" class="chart', html), chart
    section = html[
        html.index('<section id="latency-detail">') : html.index("</section>", html.index('<section id="latency-detail">'))
    ]
    # a line per target and percentile over time; one per target by percentile; per target and percentile against clients
    over_time = section[
        section.index('id="chart-latency-time-tpcb-c4"') : section.index(
            "</svg>", section.index('id="chart-latency-time-tpcb-c4"')
        )
    ]
    assert over_time.count('<path class="series"') == 6
    assert re.search(r"<title>b p99 · 4 s: p99 [\d.,]+ ms \(\d+ transactions, 2 run\(s\)\)</title>", over_time)
    distribution = section[section.index('id="chart-distribution-tpcb-c4"') :]
    assert distribution[: distribution.index("</svg>")].count('<path class="series"') == 2
    assert ">99%</text>" in distribution
    # 4 charts per point would fold: here 2 points x 2 charts are shown open
    assert '<details class="latency-detail">' not in section


def test_a_tools_own_per_interval_percentile_is_drawn_per_run_and_one_interval_still_draws_a_line():
    # Given a sysbench-like run that printed one interval line, with its p95
    run = WorkloadResult(
        name="oltp",
        tool="sysbench",
        clients=4,
        repetition=1,
        status="succeeded",
        tps=100.0,
        progress=[ProgressSample(elapsed_s=5.0, tps=100.0, percentile=95.0, latency_pct_ms=12.5)],
    )
    results = CampaignResults(
        campaign_id="c-1",
        campaign="c",
        started_at="2024-01-01T00:00:00+00:00",
        finished_at="2024-01-01T00:01:00+00:00",
        targets=[TargetResult(name="a", provider="p", status="succeeded", workloads=[run])],
        ranking=[],
    )
    html = build_reports(results)["report.html"].decode()
    over_time = html[html.index('id="chart-latency-time-oltp-c4"') :]
    over_time = over_time[: over_time.index("</svg>")]
    # Then its p95 is drawn held over the interval, from 0 s to 5 s: a line, not a lone dot
    assert re.search(r'<path class="series" data-series="a p95" d="M[\d.]+ [\d.]+ L[\d.]+ [\d.]+"', over_time)
    tps = html[html.index('id="chart-progress-oltp-c4"') :]
    assert re.search(r'<path class="series" data-series="a" d="M[\d.]+ [\d.]+ L', tps[: tps.index("</svg>")])
