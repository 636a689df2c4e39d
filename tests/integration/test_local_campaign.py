"""The full local campaign: real embedded PostgreSQL servers, real pgbench, the real ASL file."""

import json
import re
from io import StringIO

import pytest
from rich.console import Console

from pgarena import cli
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign
from tests.ports import refused_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def campaign_run(tmp_path_factory, matrix):
    events = []
    # When the campaign runs through the local runtime
    run = run_local(parse_campaign(matrix), tmp_path_factory.mktemp("results"), on_event=events.append)
    return run, events


@pytest.fixture(scope="module")
def matrix():
    # Given two embedded targets with different durability settings, a target nobody listens on,
    # and a target whose max_connections cannot fit the clients
    return {
        "campaign": "itest",
        "connections": {"policy": "fail", "monitor_interval_s": 0.5},
        "targets": [
            {"name": "durable", "provider": "embedded", "embedded": {"settings": {"synchronous_commit": "on"}}},
            {"name": "async", "provider": "embedded", "embedded": {"settings": {"synchronous_commit": "off", "fsync": "off"}}},
            {
                "name": "unreachable",
                "provider": "self-hosted",
                "endpoint": {"host": "127.0.0.1", "port": refused_port(), "user": "postgres", "sslmode": "disable"},
            },
            {
                "name": "tiny",
                "provider": "embedded",
                "embedded": {"settings": {"max_connections": 8, "superuser_reserved_connections": 2}},
            },
        ],
        "workloads": [
            {
                "name": "tpcb",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": 4, "jobs": 2, "duration_s": 3, "progress_s": 1},
            },
        ],
    }


def target(run, name):
    return next(t for t in run.results.targets if t.name == name)


def test_campaign_finishes_with_every_target_listed(campaign_run):
    run, _ = campaign_run
    assert run.status == "SUCCEEDED"
    assert [t.name for t in run.results.targets] == ["durable", "async", "unreachable", "tiny"]


def test_embedded_targets_are_ranked_with_real_throughput(campaign_run):
    run, _ = campaign_run
    assert sorted(r.target for r in run.results.ranking) == ["async", "durable"]
    for name in ("durable", "async"):
        t = target(run, name)
        assert t.status == "succeeded" and t.server.version_num >= 150000 and t.server.max_connections == 100
        (w,) = t.workloads
        assert w.tps > 0 and w.transactions > 0 and w.clients == 4 and w.latency_ms.avg > 0
        assert len(w.progress) >= 2


def test_unreachable_target_fails_clearly_and_loses_nothing_else(campaign_run):
    run, _ = campaign_run
    t = target(run, "unreachable")
    assert t.status == "failed"
    assert t.error.kind == "connection_refused"
    assert "127.0.0.1" in t.error.message


def test_plan_that_needs_more_connections_than_the_server_has_is_refused(campaign_run):
    run, _ = campaign_run
    t = target(run, "tiny")
    # the benchmark role is no superuser (reserved slots are not its): 8 - 2 reserved - 0 open - 2 pgarena - margin 2 = 2 < 4
    # clients
    assert t.status == "failed" and t.error.kind == "budget_refused"
    assert "needs 4 connections but only 2 are available" in t.error.message
    assert (
        "Raise max_connections to at least 10, or lower connections.safety_margin to 0, or lower clients to 2" in t.error.message
    )


def test_every_figure_traces_to_raw_output(campaign_run):
    run, _ = campaign_run
    w = target(run, "async").workloads[0]
    raw = next(path for path in w.raw if path.endswith("pgbench.log"))
    text = (run.results_dir / raw).read_text()
    # The tps in results.json is the one pgbench printed
    assert f"tps = {w.tps:f}".rstrip("0") in text or f"tps = {w.tps}" in text
    assert f"number of transactions actually processed: {w.transactions}" in text


def test_monitor_series_and_peaks_are_kept(campaign_run):
    run, _ = campaign_run
    w = target(run, "async").workloads[0]
    # The monitor saw the benchmark's 4 clients and kept its series with the raw output
    assert w.connections.peak_benchmark == 4 and w.connections.samples >= 2
    assert w.connections.raw in w.raw and (run.results_dir / w.connections.raw).exists()


def test_results_json_follows_the_contract(campaign_run):
    run, _ = campaign_run
    data = json.loads((run.results_dir / "results.json").read_text())
    assert {"campaign_id", "started_at", "finished_at", "targets", "ranking"} <= set(data)
    assert data["campaign_id"] == run.campaign_id
    for t in data["targets"]:
        assert {"name", "provider", "status", "error", "server", "workloads"} <= set(t)
        for w in t["workloads"]:
            assert {"name", "tool", "clients", "tps", "latency_ms", "transactions", "failed_transactions", "raw"} <= set(w)
    assert {"rank", "target", "score", "basis"} <= set(data["ranking"][0])


def test_the_harness_cost_is_recorded_per_run_and_per_target(campaign_run):
    run, _ = campaign_run
    for name in ("durable", "async"):
        t = target(run, name)
        (w,) = t.workloads
        cost, cores = w.harness, w.worker.cpu_count
        # The worker's own CPU and the tool's were both counted, each below what the cores could give
        assert cost is not None and cores >= 1
        assert 0 <= cost.cpu_s <= cost.wall_s * cores
        assert 0 < cost.tool_cpu_s <= cost.wall_s * cores
        assert 0 <= cost.log_processing_s <= cost.wall_s
        assert cost.peak_rss_mib > 0
        # The target's cost adds its load step's to the run's
        assert t.harness.cpu_s >= cost.cpu_s and t.harness.wall_s > cost.wall_s
        # as the worker wrote it in the step's summary, next to its raw output
        step_dir = (run.results_dir / w.raw[0]).parent
        assert json.loads((step_dir / "summary.json").read_text())["harness"]["cpu_s"] == cost.cpu_s
    assert "harness CPU" in (run.results_dir / "report.html").read_text()


def test_load_time_is_recorded_with_its_phases(campaign_run):
    run, _ = campaign_run
    (load,) = target(run, "durable").loads
    assert load.status == "succeeded" and load.seconds > 0
    assert "primary keys" in load.phases_s


def test_progress_events_name_states_and_steps(campaign_run):
    _, events = campaign_run
    texts = [e.text for e in events]
    assert "Preflight Target durable" in texts
    assert any(e.kind == "step" and e.text == "async/tpcb/c4-r1" for e in events)


def test_progress_reads_in_campaign_terms_with_each_result_on_its_step_s_line(campaign_run, matrix):
    # Given the events of the real campaign, printed as `pgarena run --local` prints them (no --verbose)
    _, events = campaign_run
    out = Console(file=StringIO(), width=300, color_system=None)
    cli.console, saved = out, cli.console
    try:
        printer = cli.ProgressPrinter(cli.campaign_progress(parse_campaign(matrix), "local"), verbose=False)
        for event in events:
            printer(event)
    finally:
        cli.console = saved
    lines = out.file.getvalue().splitlines()
    # Then no state machine state is named, and each step is one line with its place and its result
    assert not any(state in line for line in lines for state in ("List Shards", "Run Shards Together", "Run Steps In Order"))
    run_line = next(line for line in lines if "target async · tpcb · 4 clients" in line)
    assert re.search(r"succeeded target async · tpcb · 4 clients — step \d+ of 8: [\d,]+\.\d tps", run_line), run_line
    assert any(re.search(r"target durable · tpcb · load — step \d+ of 8: loaded in", line) for line in lines)
