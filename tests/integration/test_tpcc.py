"""TPROC-C through pgbench, run for real: two embedded targets loaded with 2 warehouses each by the kit, a
short run on one worker and one split across two, NOPM checked against the orders the database holds, the
consistency conditions recorded, and the report's TPROC-C tables."""

import pytest

from pgarena.local.runtime import LocalRuntime
from pgarena.planning.campaign import parse_campaign
from pgarena.server.postgres import connect
from pgarena.tools.pgbench.tpcc.kit import TRANSACTIONS, new_orders

pytestmark = pytest.mark.integration

WAREHOUSES = 2
# TPC-C's initial population (clause 4.3.3.1): 3,000 orders in each of a warehouse's 10 districts.
LOADED_ORDERS = 3_000 * 10 * WAREHOUSES
TARGETS = {"durable": {"synchronous_commit": "on"}, "tuned": {"synchronous_commit": "off", "fsync": "off"}}
MATRIX = {
    "campaign": "tprocc",
    "repetitions": 1,
    "connections": {"monitor_interval_s": 1},
    "targets": [{"name": name, "provider": "embedded", "embedded": {"settings": s}} for name, s in TARGETS.items()],
    "workloads": [
        {
            "name": "tprocc",
            "tool": "pgbench",
            "init": {"warehouses": WAREHOUSES, "parallel": 2},
            # 2 clients on one worker, then 4 split across two (max_clients_per_worker): one load for both
            "run": {
                "builtin": "tprocc",
                "clients": [2, 4],
                "max_clients_per_worker": 2,
                "jobs": 1,
                "duration_s": 3,
                "progress_s": 1,
            },
        }
    ],
    "ranking": {"weights": {"nopm": 1.0}},
}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    with LocalRuntime(tmp_path_factory.mktemp("tprocc")) as runtime:
        execution = runtime.start(parse_campaign(MATRIX))
        run = runtime.wait(execution)
        assert run.status == "SUCCEEDED", run.error
        assert execution.campaign is not None
        # Counted in each database while its server still runs: every order there, loaded or created by a run
        orders = {}
        for target in execution.campaign.targets:
            assert target.endpoint is not None
            with connect(target.endpoint) as conn:
                orders[target.name] = new_orders(conn)
        yield run, orders


def runs(run, target):
    (found,) = [t for t in run.results.targets if t.name == target]
    assert found.status == "succeeded", found.error
    return {w.clients: w for w in found.workloads}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_nopm_from_the_log_is_the_orders_the_database_created(campaign, target):
    run, orders = campaign
    by_clients = runs(run, target)
    assert sorted(by_clients) == [2, 4] and len(by_clients[4].shards) == 2
    # Every completed New-Order line of both runs (each run's window is the whole run: no warm-up) is an order
    # the database holds beyond the loaded ones; the rolled-back ones created none
    created = sum(w.tool_figures.transaction_types[0].done for w in by_clients.values())
    assert created > 0
    assert orders[target] - LOADED_ORDERS == created
    # And NOPM is those New-Orders per minute of the window; TPM every completed transaction's
    single = by_clients[2].tool_figures
    types = single.transaction_types
    minutes = single.mix_window_s / 60
    assert single.new_orders_per_minute == pytest.approx(types[0].done / minutes, rel=1e-4)
    assert single.transactions_per_minute == pytest.approx(sum(t.done for t in types) / minutes, rel=1e-4)
    assert [t.name for t in types] == [t.name for t in TRANSACTIONS]
    assert single.rollbacks == sum(t.done for t in types if t.rolled_back)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_sharded_run_merges_its_shards_and_consistency_passes(campaign, target):
    run, _ = campaign
    for w in runs(run, target).values():
        figures = w.tool_figures
        assert figures.new_orders_per_minute > 0 and figures.transactions_per_minute >= figures.new_orders_per_minute
        # per-type percentiles from each type's histogram (a sharded run's merged), for every type that ran
        ran = [t for t in figures.transaction_types if t.done]
        assert ran and all(t.latency_ms.p50 <= t.latency_ms.p95 <= t.latency_ms.p99 for t in ran)
        # TPC-C's consistency conditions 1-4, checked after the run by its first worker, all held
        assert figures.consistency and all(c.passed for c in figures.consistency), figures.consistency
        assert not [i for i in w.incidents if i.kind == "consistency_failed"]
    (load,) = next(t for t in run.results.targets if t.name == target).loads
    assert load.status == "succeeded" and load.seconds > 0 and load.phases_s


def test_the_ranking_weighs_nopm_and_the_report_shows_it_with_each_types_latency(campaign):
    run, _ = campaign
    assert {e.target for e in run.results.ranking} == set(TARGETS)
    assert "nopm" in run.results.ranking[0].metrics
    summary = (run.results_dir / "summary.md").read_text()
    html = (run.results_dir / "report.html").read_text()
    for text in (summary, html):
        assert "TPROC-C" in text and "NOPM" in text and "TPM" in text
        assert all(t.name in text for t in TRANSACTIONS)
    assert "p95" in html.split('id="tprocc"')[1].split("</section>")[0]
