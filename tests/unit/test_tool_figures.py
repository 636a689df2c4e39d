"""A tool's own figures are typed: each tool fills its model from its real output, the figures analysis
reads are declared on the shared base, and they reach the metrics through a summary and results.json
(issue 33)."""

import json

import pytest

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.metrics import point_metrics, retried_transactions, target_metrics
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import CampaignResults, StepSummary, WorkloadResult
from pgarena.model.tool_figures import ToolFigures
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.tools.pgbench.figures import PgbenchFigures
from pgarena.tools.pgbench.tool import Pgbench
from pgarena.tools.sysbench.figures import SysbenchFigures
from pgarena.tools.sysbench.tool import Sysbench
from tests.conftest import FIXTURES


def plan(workload: dict):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["workloads"] = [workload]
    return plan_campaign(parse_campaign(data), "cid")


def pgbench_plan(**run):
    return plan({"name": "tpcb", "tool": "pgbench", "init": {"scale": 1}, "run": {"clients": 4, "duration_s": 10, **run}})


SYSBENCH_PLAN = plan({"name": "oltp", "tool": "sysbench", "run": {"threads": 4, "duration_s": 5}})
SYSBENCH_RUN = next(s for s in SYSBENCH_PLAN.targets[0].steps if s.kind == "run")
# 614 transactions, 12 ignored errors, 2486.54 qps, p99 1013.60 ms
SYSBENCH_OUTPUT = (FIXTURES / "sysbench" / "run_oltp_read_write_percentile99_t4_T5_i1.txt").read_text()


def measured_sysbench(tmp_path):
    return Sysbench().measure(SYSBENCH_RUN, SYSBENCH_OUTPUT, 0, tmp_path)


def summary_of(step, measured, tool: str) -> StepSummary:
    """The step's summary as a worker writes it (the figures the worker copies from Measured), through JSON."""
    summary = StepSummary(
        campaign_id="cid",
        step_id=step.step_id,
        target=step.target,
        workload=step.workload,
        kind=step.kind,
        tool=tool,
        clients=step.clients,
        status="succeeded",
        started_at="t0",
        finished_at="t1",
        wall_s=5.0,
        tps=measured.tps,
        transactions=measured.transactions,
        failed_transactions=measured.failed_transactions,
        progress=measured.progress,
        tool_figures=measured.tool_figures,
    )
    return StepSummary.model_validate_json(summary.model_dump_json())  # as DynamoDB keeps it


def test_sysbench_fills_its_figures_from_its_output(tmp_path):
    # Given sysbench's output of a read-write run with --percentile=99
    # When the tool measures it
    figures = measured_sysbench(tmp_path).tool_figures
    # Then the shared figures are typed on the base and sysbench's own on its model, each as printed
    assert isinstance(figures, SysbenchFigures)
    assert (figures.qps, figures.ignored_errors, figures.retried) == (2486.54, 12, None)
    assert (figures.queries_read, figures.queries_write, figures.queries_other, figures.reconnects) == (8764, 2447, 1280, 0)
    assert (figures.latency_min_ms, figures.percentile, figures.latency_pct_ms) == (1.14, 99.0, 1013.60)


def test_sysbench_keeps_its_per_interval_percentile_in_the_progress(tmp_path):
    # Given the same output, whose interval lines print "lat (ms,99%)"
    progress = measured_sysbench(tmp_path).progress
    # Then each interval keeps the percentile as sysbench printed it: the report draws it over time
    assert [(s.elapsed_s, s.percentile, s.latency_pct_ms) for s in progress[:2]] == [(1.0, 99.0, 18.61), (2.0, 99.0, 995.51)]


@pytest.mark.parametrize(
    ("name", "skipped", "above", "retried"),
    [
        ("pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt", 1, 1, None),
        ("pg18_run_tpcb_rate_R400_L20_maxtries3_c4_j2_T3_P1.txt", 0, 0, 0),
    ],
)
def test_pgbench_fills_the_shared_figures_from_its_summary(name, skipped, above, retried, tmp_path):
    # Given pgbench's output of a rate run with a latency limit (and --max-tries on 18)
    text = (FIXTURES / "pgbench" / name).read_text()
    # When the tool measures it
    figures = Pgbench().measure(pgbench_plan().targets[0].steps[1], text, 0, tmp_path).tool_figures
    # Then skipped, above the limit and retried are the base's typed fields; no qps, no window (no warm-up)
    assert (figures.skipped_transactions, figures.above_latency_limit, figures.retried) == (skipped, above, retried)
    assert figures.qps is None and figures.window_s is None


def test_the_figures_reach_the_metrics_through_a_summary_and_results_json(tmp_path):
    # Given the sysbench run's summary, read back from JSON as the aggregation reads it
    run = SYSBENCH_RUN
    stored = summary_of(run, measured_sysbench(tmp_path), "sysbench")
    outcomes = [
        TargetOutcome(
            name=run.target, steps=[{"step_id": s.step_id, "status": "succeeded"} for s in SYSBENCH_PLAN.targets[0].steps]
        )
    ]
    # When aggregated, and results.json written and read back
    results = CampaignResults.model_validate_json(aggregate(SYSBENCH_PLAN, outcomes, [stored], "s", "f").model_dump_json())
    (w,) = results.targets[0].workloads
    # Then the shared figures are typed attributes, sysbench's own are kept, and the metrics read them:
    # 12 ignored errors (each restarting its transaction) over 614 transactions, 2486.54 qps
    assert (w.tool_figures.qps, w.tool_figures.ignored_errors) == (2486.54, 12)
    assert SysbenchFigures.of(w.tool_figures) == measured_sysbench(tmp_path).tool_figures
    point = point_metrics(run.target, run.workload, run.clients, [w])
    assert point.retry_rate == pytest.approx(12 / 614) and point.qps == 2486.54
    assert target_metrics(results.targets[0]).points[0].qps == 2486.54


def test_a_warmup_window_and_pgbenchs_own_figures_survive_a_summary(tmp_path):
    # Given a pgbench rate run with a 1 s warm-up, its per-transaction log: 1 skipped in the warm-up, in the
    # window 2 done and 1 skipped (each line ending at second 1700000000 + t)
    timed = [(0, "1000"), (0, "skipped"), (2, "1000"), (2, "skipped"), (3, "2000")]
    lines = "".join(f"0 {i} {latency} 0 {1_700_000_000 + t} {i * 1000}\n" for i, (t, latency) in enumerate(timed))
    (tmp_path / "transactions.1").write_text(lines)
    text = (FIXTURES / "pgbench" / "pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt").read_text()
    step = pgbench_plan(warmup_s=1, rate_tps=400, latency_limit_ms=20, percentiles=True).targets[0].steps[1]
    measured = Pgbench().measure(step, text, 0, tmp_path)
    # When its summary is stored and read back without the tool's model
    figures = summary_of(step, measured, "pgbench").tool_figures
    # Then the window's length is the base's typed field (what the worker reads for replication) and the
    # skipped count the window's; pgbench's own figures read back typed through its model
    assert figures.window_s == pytest.approx(3.0 - 1.0, abs=0.01) and figures.skipped_transactions == 1
    pgbench = PgbenchFigures.of(figures)
    assert (pgbench.run_skipped_transactions, pgbench.logged_transactions, pgbench.lag_avg_ms) == (1, 2, 0.146)
    assert pgbench == measured.tool_figures


def test_a_figure_the_tool_did_not_report_is_left_out_of_the_json():
    assert json.loads(PgbenchFigures(retried=3).model_dump_json()) == {"retried": 3}
    assert (
        json.loads(WorkloadResult(name="w", tool="t", clients=1, repetition=1, status="failed").model_dump_json())["tool_figures"]
        == {}
    )


@pytest.mark.parametrize("model", [StepSummary, WorkloadResult])
def test_a_record_written_with_extra_reads_into_tool_figures(model):
    # Given a summary or a results.json run written before tool_figures: the same figures under `extra`
    base = {"campaign_id": "c", "step_id": "s", "target": "a", "workload": "w", "kind": "run", "tool": "t", "started_at": "t0"}
    base |= {"finished_at": "t1", "wall_s": 1.0, "name": "w", "clients": 4, "repetition": 1, "status": "succeeded"}
    # When read
    record = model.model_validate({**base, "extra": {"qps": 10.5, "skipped_transactions": 2, "reconnects": 0}})
    # Then they are its tool figures, typed where shared, kept where the tool's own
    assert (record.tool_figures.qps, record.tool_figures.skipped_transactions) == (10.5, 2)
    assert SysbenchFigures.of(record.tool_figures).reconnects == 0
    assert "extra" not in json.loads(record.model_dump_json())


def test_a_kept_results_json_with_extra_still_reads():
    results = CampaignResults.model_validate_json((FIXTURES / "results" / "week1" / "results.json").read_text())
    assert all(w.tool_figures == ToolFigures() for t in results.targets for w in t.workloads)


def test_retried_transactions_are_retries_else_ignored_errors():
    assert retried_transactions(ToolFigures(retried=3, ignored_errors=9)) == 3
    assert retried_transactions(ToolFigures(ignored_errors=9)) == 9
    assert retried_transactions(ToolFigures()) is None
