"""Every builtin pgbench script, the pgbench options a study needs, and sysbench's OLTP scripts, run for real."""

import gzip

import pytest

from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign
from pgarena.tools.pgbench.figures import PgbenchFigures

pytestmark = pytest.mark.integration

SYSBENCH_SCRIPTS = [
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_insert",
    "oltp_update_index",
]


def pgbench(name, init=None, **run):
    return {
        "name": name,
        "tool": "pgbench",
        "init": init or {"scale": 1},
        "run": {"clients": 2, "jobs": 2, "progress_s": 1, **({"duration_s": 2} if "transactions" not in run else {}), **run},
    }


def sysbench(script):
    return {
        "name": script.replace("_", "-"),
        "tool": "sysbench",
        "prepare": {"tables": 2, "table_size": 1000},
        "run": {"script": script, "threads": 2, "duration_s": 2, "report_interval_s": 1},
    }


MATRIX = {
    "campaign": "workloads",
    "connections": {"monitor_interval_s": 1},
    "targets": [{"name": "pg", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}],
    "workloads": [
        pgbench("tpcb", init={"scale": 1, "fillfactor": 90, "foreign_keys": True}, protocol="prepared"),
        pgbench("simple-update", builtin="simple-update", protocol="extended"),
        pgbench(
            "select-only",
            init={"scale": 1, "partitions": 2, "partition_method": "hash", "data_generation": "server"},
            builtin="select-only",
        ),
        pgbench(
            "mix",
            scripts=[
                {"builtin": "select-only", "weight": 3},
                {"sql": "\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;", "weight": 1},
            ],
        ),
        pgbench("throttled", rate_tps=200, latency_limit_ms=50, max_tries=3),
        pgbench("counted", transactions=100),
        *[sysbench(script) for script in SYSBENCH_SCRIPTS],
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    result = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("results"))
    assert result.status == "SUCCEEDED", result.error
    return result


def workload(run, name):
    (target,) = run.results.targets
    return next(w for w in target.workloads if w.name == name)


@pytest.mark.parametrize("name", ["tpcb", "simple-update", "select-only", "mix", "throttled", "counted"])
def test_pgbench_workloads_run_with_exact_percentiles(run, name):
    w = workload(run, name)
    assert w.status == "succeeded", w.error
    assert w.tps > 0 and w.transactions > 0 and w.failed_transactions == 0
    # p50 <= p95 <= p99 from the histogram of every logged transaction, kept gzipped as raw output
    assert 0 < w.latency_ms.p50 <= w.latency_ms.p95 <= w.latency_ms.p99 <= w.latency_ms.max
    figures = PgbenchFigures.of(w.tool_figures)
    assert figures.logged_transactions == w.transactions
    logs = [p for p in w.raw if ".gz" in p]
    # The log also holds the transactions --latency-limit skipped under --rate (a loaded machine has some).
    lines = sum(len(gzip.open(run.results_dir / p).read().splitlines()) for p in logs)
    assert logs and lines == w.transactions + figures.logged_failed + figures.logged_skipped


def test_transaction_count_run(run):
    assert workload(run, "counted").transactions == 200  # 100 per client x 2 clients


@pytest.mark.parametrize("script", SYSBENCH_SCRIPTS)
def test_sysbench_oltp_scripts(run, script):
    w = workload(run, script.replace("_", "-"))
    assert w.status == "succeeded", w.error
    assert w.tool == "sysbench" and w.clients == 2
    assert w.tps > 0 and w.tool_figures.qps > 0 and w.latency_ms.p95 > 0
    assert len(w.progress) >= 1


def test_loads_are_timed_and_sysbench_cleans_up(run):
    (target,) = run.results.targets
    kinds = {(l.workload, l.kind): l for l in target.loads}
    assert kinds[("tpcb", "init")].seconds > 0 and "primary keys" in kinds[("tpcb", "init")].phases_s
    assert "server-side generate" in kinds[("select-only", "init")].phases_s
    assert {kind for _, kind in kinds} == {"init", "cleanup"}
    failed = [(l.workload, l.kind, l.error) for l in target.loads if l.status != "succeeded"]
    assert not failed


def test_target_succeeded_and_is_ranked(run):
    (target,) = run.results.targets
    assert target.status == "succeeded", target.error
    assert [r.target for r in run.results.ranking] == ["pg"]
