"""What the harness itself costs: measured apart from the tool, carried to results.json and the report."""

import subprocess
import sys

import pytest

from pgarena.analysis.aggregate import aggregate, total_cost
from pgarena.campaign.step.harness import CostMeter
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import CampaignResults, HarnessCost
from pgarena.report import build_reports
from tests.unit.test_aggregate import plan_two_targets, summary
from tests.unit.test_report import WEEK1

# A child busy for about this much CPU: enough to tell apart from the parent's own few milliseconds.
BUSY_LOOP = "x = 0\nfor i in range(8_000_000): x += i"


def test_the_tool_s_cpu_is_counted_as_the_tool_s_not_the_worker_s():
    # Given a meter started before a child process that burns CPU while the worker waits
    meter = CostMeter()
    subprocess.run([sys.executable, "-c", BUSY_LOOP], check=True)
    # When the cost is read
    cost = meter.cost()
    # Then the child's CPU is the tool's, and the waiting worker's own is the smaller part
    assert cost.tool_cpu_s > 0
    assert cost.cpu_s < cost.tool_cpu_s
    assert cost.share is not None and 0 <= cost.share < 0.5
    assert cost.peak_rss_mib is not None and cost.peak_rss_mib > 0


def test_log_processing_is_the_sum_of_the_timed_parts():
    # Given a meter that timed nothing, and one that timed two parts
    idle, busy = CostMeter(), CostMeter()
    for _ in range(2):
        with busy.log_processing():
            sum(range(100_000))
    # Then the first says zero and the second no more than its whole time
    assert idle.cost().log_processing_s == 0
    cost = busy.cost()
    assert 0 <= cost.log_processing_s <= cost.wall_s


def test_total_cost_sums_what_was_spent_and_keeps_the_largest_peak():
    a = HarnessCost(wall_s=10, cpu_s=1.5, tool_cpu_s=8, log_processing_s=0.25, peak_rss_mib=90)
    b = HarnessCost(wall_s=12, cpu_s=0.5, tool_cpu_s=4, log_processing_s=0.75, peak_rss_mib=120)
    total = total_cost([a, None, b])
    assert total == HarnessCost(wall_s=22, cpu_s=2, tool_cpu_s=12, log_processing_s=1, peak_rss_mib=120)
    assert total.share == pytest.approx(2 / 14)
    assert total_cost([None]) is None


def test_each_run_and_each_target_carry_their_workers_cost():
    # Given a target whose init and run steps recorded their cost
    plan = plan_two_targets()
    init_cost = HarnessCost(wall_s=2, cpu_s=0.25, tool_cpu_s=1, log_processing_s=0.01)
    run_cost = HarnessCost(wall_s=11, cpu_s=0.5, tool_cpu_s=6, log_processing_s=0.2, peak_rss_mib=80)
    summaries = [
        summary("a/tpcb/init", "a", kind="init").model_copy(update={"harness": init_cost}),
        summary("a/tpcb/c4-r1", "a", tps=100.0).model_copy(update={"harness": run_cost}),
    ]
    outcomes = [
        TargetOutcome(
            name="a",
            steps=[{"step_id": "a/tpcb/init", "status": "succeeded"}, {"step_id": "a/tpcb/c4-r1", "status": "succeeded"}],
        )
    ]
    # When aggregated
    a, b = aggregate(plan, outcomes, summaries, "s", "f").targets
    # Then the run shows its own cost, the target the sum of its steps', and a target that never ran none
    assert a.workloads[0].harness == run_cost
    assert a.harness == total_cost([init_cost, run_cost])
    assert b.harness is None


def test_the_report_shows_the_harness_cost_per_target_and_per_run():
    # Given results whose first target's workers recorded their cost
    results = CampaignResults.model_validate_json((WEEK1 / "results.json").read_text())
    cost = HarnessCost(wall_s=60, cpu_s=1.25, tool_cpu_s=23.75, log_processing_s=0.5)
    first = results.targets[0]
    workloads = [first.workloads[0].model_copy(update={"harness": cost}), *first.workloads[1:]]
    results.targets[0] = first.model_copy(update={"harness": cost, "workloads": workloads})
    # When the reports are built
    files = build_reports(results)
    # Then the servers sections say the CPU-seconds, their share and the log-processing time
    md, html = files["summary.md"].decode(), files["report.html"].decode()
    assert "| 1.25 (5.0%) | 0.50 |" in md
    assert (
        '<td class="num" data-label="harness CPU">1.25 s<br><span class="hint">5.0% of the workers\' CPU</span></td>\n'
        '        <td class="num" data-label="log processing">0.50 s</td>' in html
    )
    row = next(r for r in files["workloads.csv"].decode().splitlines()[1:] if r.split(",")[1] == first.name)
    assert row.endswith(",1.25,23.75,0.5")
