"""The tprocc workload (TPROC-C through pgbench): its matrix fields and refusals, its commands, its figures
from the per-transaction log, its shards merged, its consistency failure as an incident, NOPM in the ranking."""

import json
import re

import pytest

from pgarena.analysis.latency import decode, encode, new_histogram
from pgarena.analysis.metrics import point_metrics
from pgarena.analysis.mix import CONSISTENCY_FAILED, consistency_incident, merged_mix
from pgarena.analysis.ranking import metric_scores
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.metrics import PointMetrics
from pgarena.model.results import WorkloadResult
from pgarena.model.tool_figures import ConsistencyCheck, ToolFigures
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.tools.pgbench.figures import PgbenchFigures
from pgarena.tools.pgbench.parser import parse_pgbench
from pgarena.tools.pgbench.tool import Pgbench
from pgarena.tools.pgbench.tpcc.kit import NEW_ORDER, TRANSACTIONS
from pgarena.tools.pgbench.tpcc.load import summary_line
from tests.conftest import FIXTURES
from tests.unit.test_txlog import START

PGBENCH = FIXTURES / "pgbench"


def matrix(init=None, **run):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["workloads"] = [
        {
            "name": "tprocc",
            "tool": "pgbench",
            "init": {"warehouses": 2} if init is None else init,
            "run": {"builtin": "tprocc", "clients": 4, "jobs": 2, "duration_s": 10, **run},
        }
    ]
    return data


def steps(init=None, **run):
    return plan_campaign(parse_campaign(matrix(init, **run)), "cid").targets[0].steps


@pytest.mark.parametrize(
    ("init", "run", "says"),
    [
        ({"scale": 1}, {}, "run.builtin tprocc needs init.warehouses"),
        ({"warehouses": 2, "scale": 3}, {}, "init.scale: pgbench -i's options"),
        ({"warehouses": 2, "fillfactor": 90, "foreign_keys": True}, {}, "init.fillfactor, init.foreign_keys"),
        ({"warehouses": 2}, {"scripts": [{"builtin": "select-only"}]}, "remove run.scripts"),
        ({"warehouses": 2, "parallel": 3}, {}, "lower init.parallel to 2 or fewer"),
    ],
)
def test_a_tprocc_workload_is_refused_naming_the_field_and_the_fix(init, run, says):
    with pytest.raises(MatrixError, match=re.escape(says)):
        parse_campaign(matrix(init, **run))


def test_a_tprocc_matrix_read_back_from_its_json_is_the_same():
    # Every field written (the state machine's input is the dumped matrix): pgbench -i's defaults are not asked for
    campaign = parse_campaign(matrix())
    assert parse_campaign(campaign.model_dump(mode="json")) == campaign


def test_warehouses_without_tprocc_are_refused():
    data = matrix({"warehouses": 2})
    data["workloads"][0]["run"]["builtin"] = "tpcb-like"
    with pytest.raises(MatrixError, match=re.escape('set run.builtin to "tprocc" or remove them')):
        parse_campaign(data)


def test_the_load_runs_the_kits_loader_over_its_connections(tmp_path):
    # Given a tprocc workload loading 4 warehouses over 2 connections
    init, run = steps({"warehouses": 4, "parallel": 2})[:2]
    # Then the load's step opens init.parallel connections and runs the kit's load in the worker's SQL task,
    # the password in the environment only
    assert init.spec.connections("init", None) == 2
    argv, env = Pgbench().command(init, "secret", tmp_path)
    assert argv[-4:] == ["pgarena.worker.sql_task", "pgarena.tools.pgbench.tpcc.load:load", "--warehouses=4", "--parallel=2"]
    assert env["PGPASSWORD"] == "secret" and "secret" not in " ".join(argv)
    # And the run's step is pgbench with the kit's six scripts at their weights, :scale the warehouses
    argv, _ = Pgbench().command(run, None, tmp_path)
    files = [a for a in argv if a.startswith("--file=")]
    assert [f.rsplit("@", 1)[1] for f in files] == [str(t.weight) for t in TRANSACTIONS]
    assert [open(f.removeprefix("--file=").rsplit("@", 1)[0]).read() for f in files] == [t.script for t in TRANSACTIONS]
    assert "--scale=4" in argv and not any(a.startswith("--builtin") for a in argv)
    assert sum(t.weight for t in TRANSACTIONS) == 10_000


def test_the_loaders_phases_are_read_as_pgbench_is():
    text = f"loading 2 warehouse(s) over 1 connection(s)\n{summary_line(3.25, {'schema': 0.1, 'items': 1.5, 'analyze': 0.25})}\n"
    init = parse_pgbench(text).init
    assert init is not None
    assert (init.total_s, init.phases_s) == (3.25, {"schema": 0.1, "items": 1.5, "analyze": 0.25})


def _log(tmp_path, timed):
    """A log file of (end second offset, latency or failed, script number) lines, 1 ms apart."""
    lines = "".join(f"0 {i} {lat} {script} {START + t} {i * 1000}\n" for i, (t, lat, script) in enumerate(timed))
    (tmp_path / "transactions.1").write_text(lines)


def test_nopm_counts_the_committed_new_orders_of_the_window(tmp_path):
    # Given a 61 s log (the first transaction began 1 s before START's first end): 6 committed New-Orders,
    # 2 rolled back by design, 1 failed New-Order, 3 Payments, and one of each other type
    timed = [(0, "1000000", NEW_ORDER)] + [(t, "2000", NEW_ORDER) for t in (10, 20, 30, 40, 60)]
    timed += [(15, "3000", 1), (25, "3000", 1), (35, "failed", NEW_ORDER)]
    timed += [(t, "4000", 2) for t in (5, 6, 7)] + [(50, "5000", s) for s in (3, 4, 5)]
    _log(tmp_path, sorted(timed))
    step = steps()[1]
    text = (PGBENCH / "pg18_run_tpcb_c4_j2_T5_P1.txt").read_text()
    # When the tool measures the run
    figures = PgbenchFigures.of(Pgbench().measure(step, text, 0, tmp_path).tool_figures)
    # Then NOPM is the committed New-Orders per minute of the log's window, TPM every completed one's
    window_min = (61 + (len(timed) - 1) / 1000) / 60  # from START - 1 s to the last line's end (1 ms per line)
    assert figures.new_orders_per_minute == pytest.approx(6 / window_min, rel=1e-3)
    assert figures.transactions_per_minute == pytest.approx(14 / window_min, rel=1e-3)
    assert figures.rollbacks == 2
    types = {t.name: t for t in figures.transaction_types}
    assert [t.name for t in figures.transaction_types] == [t.name for t in TRANSACTIONS]
    assert (types["new_order"].done, types["new_order"].failed) == (6, 1)
    assert types["new_order_rollback"].rolled_back and not types["new_order"].rolled_back
    assert types["payment"].done == 3 and types["payment"].latency_ms.p50 == pytest.approx(4.0, rel=1e-2)
    assert decode(types["new_order"].histogram).get_total_count() == 6


def test_after_a_warmup_nopm_is_the_windows(tmp_path):
    # Given a 10 s warm-up holding 3 New-Orders, then 4 in the window that ends 50 s later
    timed = [(t, "1000", NEW_ORDER) for t in (1, 2, 3, 20, 30, 40)] + [(60, "1000", NEW_ORDER)]
    _log(tmp_path, timed)
    step = steps(duration_s=60, warmup_s=10)[1]
    figures = PgbenchFigures.of(
        Pgbench().measure(step, (PGBENCH / "pg18_run_tpcb_c4_j2_T5_P1.txt").read_text(), 0, tmp_path).tool_figures
    )
    start = START + 1 + 0.0 - 0.001  # the first line (i = 0, 1 ms) began 1 ms before its end
    assert figures.new_orders_per_minute == pytest.approx(4 / ((START + 60.006 - (start + 10)) / 60), rel=1e-3)


def _shard(nopm, tpm, done, latencies_us, checks=None):
    histogram = new_histogram()
    for value in latencies_us:
        histogram.record_value(value)
    types = [
        {"name": t.name, "done": done if i == 0 else 0, "histogram": encode(histogram) if i == 0 else None}
        for i, t in enumerate(TRANSACTIONS)
    ]
    return ToolFigures.model_validate(
        {
            "new_orders_per_minute": nopm,
            "transactions_per_minute": tpm,
            "rollbacks": 1,
            "transaction_types": types,
            "consistency": checks,
        }
    )


def test_shards_rates_add_up_and_their_histograms_merge_never_averaged():
    # Given two shards: one fast (1 ms New-Orders), one slow (100 ms)
    passed = [{"name": "condition 1", "passed": True}]
    merged = merged_mix([_shard(600.0, 1300.0, 10, [1000] * 10, passed), _shard(60.0, 130.0, 1, [100_000])])
    # Then NOPM and TPM add up, counts add up, and the p95 is the merged histogram's (not the shards' mean)
    assert (merged.new_orders_per_minute, merged.transactions_per_minute, merged.rollbacks) == (660.0, 1430.0, 2)
    new_order = (merged.transaction_types or [])[0]
    assert new_order.done == 11
    assert new_order.latency_ms.p50 == pytest.approx(1.0, rel=1e-2)
    assert new_order.latency_ms.p99 == pytest.approx(100.0, rel=1e-2)
    assert merged.consistency == [ConsistencyCheck(name="condition 1", passed=True)]


def test_a_failed_condition_is_a_named_incident():
    checks = [
        ConsistencyCheck(name="condition 1", passed=True),
        ConsistencyCheck(name="condition 3", passed=False, detail="district 1.4: 899 new orders, 900 expected"),
    ]
    incident = consistency_incident(checks, 12.0)
    assert incident is not None and incident.kind == CONSISTENCY_FAILED
    assert "condition 3: district 1.4" in incident.message and "1 of 2" in incident.message
    assert consistency_incident(checks[:1], 12.0) is None
    assert consistency_incident(None, 12.0) is None


def test_nopm_is_a_ranking_metric_relative_to_the_best_target():
    # Given two targets at one point, one with twice the other's NOPM (and the same tps)
    def point(target, nopm):
        return PointMetrics(target=target, workload="tprocc", clients=4, runs=3, tps=100.0, nopm=nopm)

    key = ("tprocc", 4)
    scores = metric_scores({"a": {key: point("a", 1200.0)}, "b": {key: point("b", 600.0)}}, [key])
    # Then NOPM scores each relative to the best; a point without NOPM gives the metric up
    assert scores["nopm"] == {"a": 1.0, "b": 0.5}
    assert "nopm" not in metric_scores({"a": {key: point("a", None)}, "b": {key: point("b", 600.0)}}, [key])


@pytest.mark.parametrize(
    ("checks", "says"),
    [
        ([[True], [True]], "passed"),
        ([[True], [True, False]], "failed"),
        ([[True], None], "not checked"),
    ],
    ids=["every-run-passed", "one-failed", "one-unchecked"],
)
def test_a_points_consistency_is_every_runs(checks, says):
    runs = [
        WorkloadResult(
            name="tprocc",
            tool="pgbench",
            clients=4,
            repetition=r,
            status="succeeded",
            tps=100.0,
            tool_figures=ToolFigures(
                new_orders_per_minute=2000.0,
                transactions_per_minute=4500.0,
                consistency=None if c is None else [ConsistencyCheck(name=f"{i}", passed=p) for i, p in enumerate(c)],
            ),
        )
        for r, c in enumerate(checks, 1)
    ]
    point = point_metrics("a", "tprocc", 4, runs)
    assert point.consistency == says
    assert point.nopm == 2000.0 and point.tpm == 4500.0
