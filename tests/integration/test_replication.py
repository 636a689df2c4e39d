"""Sustainable replication throughput: a real streaming standby (pg_basebackup -R from an embedded
primary, on a port of its own) whose catch-up is timed after each run of a two-point client sweep."""

import json

import pytest

from pgarena.analysis.catch_up import lsn_to_int
from pgarena.local.runtime import run_local
from pgarena.model.replication import LagSample
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

# The standby replays each commit no sooner than 1 s after the primary made it: catch-up takes about
# a second, whatever the machine, so it is measured rather than lost in the polling resolution.
APPLY_DELAY_S = 1.0
DURATION_S = 3

MATRIX = {
    "campaign": "replication",
    "connections": {"monitor_interval_s": 0.5},
    "targets": [
        {
            "name": "primary",
            "provider": "embedded",
            "embedded": {
                "settings": {"synchronous_commit": "off"},
                "replicas": 1,
                "replica_settings": {"recovery_min_apply_delay": f"{int(APPLY_DELAY_S * 1000)}ms"},
            },
        }
    ],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": [1, 4], "jobs": 1, "duration_s": DURATION_S, "progress_s": 1},
        }
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    # Given an embedded primary with one streaming standby that applies WAL a second late
    # When a two-point client sweep runs through the local runtime
    result = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("results"))
    assert result.status == "SUCCEEDED", result.error
    return result


@pytest.fixture(scope="module")
def runs(run):
    (target,) = run.results.targets
    assert target.status == "succeeded", target.error
    return {w.clients: w for w in target.workloads}


def test_each_client_count_times_the_standbys_catch_up(runs):
    # Then after each run the standby needed about its apply delay to replay the run's last commits
    assert sorted(runs) == [1, 4]
    for w in runs.values():
        (replica,) = w.replication.replicas
        assert replica.name == "standby1" and replica.kind == "physical" and replica.method == "replay_lsn"
        assert replica.caught_up and w.replication.caught_up
        assert 0.5 * APPLY_DELAY_S <= replica.catch_up_s <= APPLY_DELAY_S + 3
        assert replica.peak_lag_bytes > 0


def test_sustainable_tps_is_transactions_over_run_plus_catch_up(runs):
    for w in runs.values():
        r = w.replication
        assert r.run_s == DURATION_S and r.transactions == w.transactions
        assert r.sustainable_tps == pytest.approx(w.transactions / (DURATION_S + r.catch_up_s))
        # The standby's delay costs throughput: what the pair sustains is below what the primary ran
        assert r.sustainable_tps < w.tps


def test_the_lag_series_is_kept_as_raw_output(run, runs):
    w = runs[4]
    assert w.replication.raw in w.raw
    samples = [LagSample.model_validate_json(line) for line in (run.results_dir / w.replication.raw).read_text().splitlines()]
    during = [s for s in samples if s.stage == "run"]
    after = [s for s in samples if s.stage == "catch_up"]
    # Sampled every 0.5 s during the 3 s run, then until the standby had replayed the end of the run
    assert len(during) >= 4 and after
    assert max(s.lag_bytes for s in samples) == w.replication.replicas[0].peak_lag_bytes
    last = after[-1]
    assert lsn_to_int(last.replica_lsn) >= lsn_to_int(w.replication.replicas[0].target_lsn)


def test_results_json_tables_sustainable_throughput_per_client_count(run, runs):
    data = json.loads((run.results_dir / "results.json").read_text())
    table = {p["clients"]: p for p in data["scenarios"]["replication"]}
    assert sorted(table) == [1, 4]
    for clients, point in table.items():
        assert point["target"] == "primary" and point["caught_up"]
        assert point["sustainable_tps"] == pytest.approx(runs[clients].replication.sustainable_tps)


def test_the_report_shows_the_replication_table(run):
    html = (run.results_dir / "report.html").read_text()
    summary = (run.results_dir / "summary.md").read_text()
    assert 'id="replication"' in html and "chart-sustainable" in html
    assert "## Sustainable replication throughput" in summary
