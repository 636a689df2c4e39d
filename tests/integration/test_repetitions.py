"""Repetitions interleaved across targets, with intervals and full disclosure: a real local campaign."""

import json

import pytest

from pgarena.analysis.compare import compare_campaigns
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign
from pgarena.report import write_to_folder

pytestmark = pytest.mark.integration

MATRIX = {
    "campaign": "reps",
    "repetitions": 3,
    "order_seed": 11,
    "connections": {"monitor_interval_s": 0.5},
    "targets": [
        {"name": "durable", "provider": "embedded", "embedded": {"settings": {"synchronous_commit": "on"}}},
        {
            "name": "async",
            "provider": "embedded",
            "embedded": {"settings": {"synchronous_commit": "off", "work_mem": "8MB"}},
        },
    ],
    "workloads": [
        {"name": "tpcb", "tool": "pgbench", "init": {"scale": 1}, "run": {"clients": 2, "jobs": 1, "duration_s": 2}},
    ],
}


@pytest.fixture(scope="module")
def reps_run(tmp_path_factory):
    # Given two embedded targets of different settings and three repetitions
    # When the campaign runs through the local runtime
    run = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("reps"))
    assert run.status == "SUCCEEDED", run.error
    # Every repetition ran: a lost one names its step and why (the tests below count on all of them)
    lost = [(t.name, w.repetition, w.error) for t in run.results.targets for w in t.workloads if w.status != "succeeded"]
    assert not lost, lost
    return run


def test_every_point_has_three_runs_and_a_confidence_interval(reps_run):
    for t in reps_run.results.targets:
        (point,) = t.points
        assert point.n == 3 and [w.repetition for w in t.workloads] == [1, 2, 3]
        assert point.tps.ci95_low < point.tps.mean < point.tps.ci95_high and point.tps.stddev > 0
        assert point.p95_ms.n == 3 and point.p99_ms.ci95_high >= point.p99_ms.mean
    stats = reps_run.results.statistics
    assert stats.note is None and "t-interval" in stats.method and stats.repetitions == 3


def test_repetitions_ran_interleaved_in_the_recorded_order(reps_run):
    order = reps_run.results.run_order
    assert order.seed == 11 and [p.repetition for p in order.passes] == [1, 2, 3]
    # The runs started in the recorded order: repetition r of both targets before r + 1 of either
    summaries = [json.loads(p.read_text()) for p in reps_run.results_dir.glob("raw/**/summary.json")]
    runs = sorted((s for s in summaries if s["kind"] == "run"), key=lambda s: s["started_at"])
    assert [(s["repetition"], s["target"]) for s in runs] == [(p.repetition, n) for p in order.passes for n in p.targets]


def test_preflight_records_non_default_settings_extensions_and_size(reps_run):
    by_name = {t.name: t for t in reps_run.results.targets}
    settings = {s.name: s for s in by_name["async"].server.settings}
    assert settings["synchronous_commit"].setting == "off" and settings["work_mem"].setting == "8192"
    assert settings["work_mem"].unit == "kB" and settings["work_mem"].source
    assert "application_name" not in settings  # pgarena's own connection's, not the server's
    assert by_name["async"].server.extensions.get("plpgsql") and by_name["async"].server.database_size_bytes > 0


def test_each_worker_records_its_machine_and_round_trip(reps_run):
    for t in reps_run.results.targets:
        assert t.rtt_ms is not None and t.rtt_ms > 0
        for w in t.workloads:
            facts = w.worker
            assert facts.cpu_count >= 1 and facts.memory_bytes > 0 and facts.rtt_samples == 20
            assert facts.tools["pgbench"].startswith("pgbench") and facts.task is None  # not in ECS


def test_compare_shows_settings_that_differ(reps_run):
    # Given the same campaign where async's work_mem had been 4MB
    other = reps_run.results.model_copy(deep=True)
    for t in other.targets:
        for s in t.server.settings:
            if t.name == "async" and s.name == "work_mem":
                s.setting = "4096"
    (change,) = compare_campaigns(other, reps_run.results).settings
    assert (change.target, change.name, change.a, change.b) == ("async", "work_mem", "4MB", "8MB")


def test_the_report_shows_intervals_and_settings(reps_run, tmp_path):
    write_to_folder(reps_run.results, tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "tps 95% CI" in summary and "1 run per point" not in summary and "synchronous_commit=off" in summary
    # The verdict rests on the stored pairwise comparisons, shown as a matrix
    # (different, equivalent or undecided: the three outcomes each have their sentence)
    said = ("ranks first: ", "tie for first (score ", "share first: undecided: ")
    assert reps_run.results.comparisons and any(s in summary for s in said)
    assert "each row against each column, ratio of means [the decision's interval: simultaneous" in summary
