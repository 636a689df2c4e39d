"""The CLI's ranking table: per-workload figures, never one averaged across unlike workloads."""

import pytest
import typer

from pgarena.analysis.ranking import rank_targets
from pgarena.cli import EXIT_FAILED_TARGETS, _print_outcome, ranking_table, stalled_runs
from pgarena.model.results import CampaignResults, ProgressSample, Statistics, TargetResult, WorkloadResult


def run(name: str, tool: str, tps: float, **fields) -> WorkloadResult:
    fields = {"clients": 4, "repetition": 1, **fields}
    return WorkloadResult(name=name, tool=tool, status="succeeded", tps=tps, **fields)


def results(*targets: TargetResult) -> CampaignResults:
    return CampaignResults(
        campaign_id="c", campaign="c", started_at="", finished_at="", targets=list(targets), ranking=rank_targets(list(targets))
    )


def test_the_ranking_table_gives_each_workload_its_own_tps_never_their_mean():
    # Given sysbench at 436 tps, a rate-limited pgbench run at 101 tps and a pgbench sweep of four runs
    a = TargetResult(
        name="a",
        provider="p",
        status="succeeded",
        workloads=[
            run("oltp", "sysbench", 436.0),
            run("throttled", "pgbench", 101.0, rate_tps=100.0),
            run("tpcb", "pgbench", 900.0, clients=4),
            run("tpcb", "pgbench", 1100.0, clients=4, repetition=2),
            run("tpcb", "pgbench", 1500.0, clients=8),
            run("tpcb", "pgbench", 1700.0, clients=8, repetition=2),
        ],
    )
    # When the CLI's table is built
    table = ranking_table(results(a))
    cells = {str(c.header): list(c.cells) for c in table.columns}
    # Then there is one tps column per workload, each the best point's mean over its repetitions
    assert "tps (mean)" not in cells
    assert (cells["oltp tps"], cells["throttled tps"], cells["tpcb tps"]) == (["436.0"], ["101.0"], ["1,600.0"])
    assert "each workload's best point" in str(table.caption)


def test_an_unranked_target_has_a_dash_in_every_workload_column():
    ok = TargetResult(name="a", provider="p", status="succeeded", workloads=[run("tpcb", "pgbench", 500.0)])
    failed = TargetResult(
        name="b", provider="p", status="failed", workloads=[run("tpcb", "pgbench", 1.0).model_copy(update={"status": "failed"})]
    )
    cells = {str(c.header): list(c.cells) for c in ranking_table(results(ok, failed)).columns}
    assert cells["tpcb tps"] == ["500.0", "-"]


def test_a_campaign_that_measured_no_point_claims_no_runs_per_point():
    # Given every target failed before measuring (e.g. a setting the server refused), 10 repetitions planned
    failed = TargetResult(name="b", provider="p", status="failed", workloads=[])
    table = ranking_table(results(failed).model_copy(update={"statistics": Statistics(method="t", repetitions=10)}))
    # Then the caption does not say how many runs each point had
    assert "runs per point" not in str(table.caption) and "each workload's best point" in str(table.caption)


def test_a_stalled_run_makes_the_campaign_exit_3_naming_the_stall(tmp_path):
    # Given a target whose run made no transaction for 6 s (a frozen server, a lock held) and a healthy one
    frozen = [ProgressSample(elapsed_s=float(t), tps=tps) for t, tps in enumerate([500, 500, 0, 0, 0, 0, 0, 0, 500, 500], 1)]
    steady = [ProgressSample(elapsed_s=float(t), tps=500.0) for t in range(1, 11)]
    stalled = TargetResult(name="a", provider="p", status="succeeded", workloads=[run("tpcb", "pgbench", 200.0, progress=frozen)])
    healthy = TargetResult(name="b", provider="p", status="succeeded", workloads=[run("tpcb", "pgbench", 500.0, progress=steady)])
    done = results(stalled, healthy)
    # Then the stall is named, and the run ends with exit code 3, not 0
    (said,) = stalled_runs(done)
    assert said.startswith("a: tpcb at 4 clients: ") and "(not ranked)" in said
    with pytest.raises(typer.Exit) as ended:
        _print_outcome(done, tmp_path, 1.0)
    assert ended.value.exit_code == EXIT_FAILED_TARGETS == 3
    assert stalled_runs(results(healthy)) == []


def test_a_tprocc_workload_has_its_nopm_column_beside_its_tps():
    # Given a TPROC-C workload's two repetitions at 1,200 and 1,400 NOPM, and a pgbench workload without NOPM
    def tprocc(nopm: float, repetition: int) -> WorkloadResult:
        return run("tprocc", "pgbench", 50.0, repetition=repetition, tool_figures={"new_orders_per_minute": nopm})

    a = TargetResult(
        name="a", provider="p", status="succeeded", workloads=[tprocc(1200.0, 1), tprocc(1400.0, 2), run("tpcb", "pgbench", 9.0)]
    )
    cells = {str(c.header): list(c.cells) for c in ranking_table(results(a)).columns}
    # Then the TPROC-C workload has a NOPM column (its point's mean), the other none
    assert cells["tprocc NOPM"] == ["1,300.0"]
    assert "tpcb NOPM" not in cells
