"""Consolidation sweeps: the measured-vs-ideal table, the threshold step, the USL fit, the phased plan,
the state machine's phases and their aggregation."""

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.consolidation import StepTotals, consolidation_table
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.outcomes import Outcomes, TargetOutcome
from pgarena.model.plan import PHASE_BARRIER_TIMEOUT_S, RUN_TIMEOUT_MARGIN_S, Plan
from pgarena.model.results import StepSummary
from pgarena.planning.campaign import load_campaign, parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.report import build_reports

ROOT = Path(__file__).parents[2]

# METHODOLOGY.md section 3: 1 to 40 databases on one cluster, total ktps.
STUDY = [(1, 64.0), (8, 540.0), (16, 1045.0), (32, 1957.0), (40, 2194.0)]
STUDY_IDEAL = [64, 512, 1024, 2048, 2560]


def study_steps() -> list[StepTotals]:
    """Each step's total split evenly over its databases (only the total matters)."""
    return [
        StepTotals(phase=i, per_target_tps={f"db{k}": total / n for k in range(1, n + 1)})
        for i, (n, total) in enumerate(STUDY, start=1)
    ]


def test_ideal_is_the_single_database_throughput_times_the_databases():
    # Given the study's measurements
    # When the table is built
    table = consolidation_table("simple", 4, study_steps(), threshold=0.95)
    # Then ideal is 64 ktps x databases, as the study's table says, and the ratio measured / ideal
    assert [round(s.ideal_tps) for s in table.steps] == STUDY_IDEAL
    assert [round(s.measured_tps) for s in table.steps] == [total for _, total in STUDY]
    assert [round(s.ratio, 3) for s in table.steps] == [1.0, 1.055, 1.021, 0.956, 0.857]


def test_the_threshold_step_is_the_first_below_it():
    # At 80% core saturation (32 databases) the study read 0.95: 0.956 is still at or above 0.95
    assert consolidation_table("simple", 4, study_steps(), 0.95).below_threshold_at == 40
    assert consolidation_table("simple", 4, study_steps(), 0.96).below_threshold_at == 32
    assert consolidation_table("simple", 4, study_steps(), 0.80).below_threshold_at is None


def test_usl_fit_of_the_study_explains_the_fall_off():
    table = consolidation_table("simple", 4, study_steps(), 0.95)
    usl = table.usl
    # Slightly superlinear at first (sigma <= 0), then a coherency cost that peaks near 61 databases
    assert usl.points == 5 and usl.max_error < 0.02
    assert usl.sigma == pytest.approx(-0.0066, abs=1e-3) and usl.kappa == pytest.approx(2.7e-4, rel=0.05)
    assert usl.peak_n == pytest.approx(61, abs=1) and usl.peak_tps == pytest.approx(2460, rel=0.01)
    for step, (_, measured) in zip(table.steps, STUDY):
        assert step.usl_tps == pytest.approx(measured, rel=0.02)


def test_results_json_keeps_naming_the_consolidation_peak_peak_targets():
    # The client sweeps' fits and the consolidation tables' share one model; results.json's key stays
    table = consolidation_table("simple", 4, study_steps(), 0.95)
    written = json.loads(table.model_dump_json())["usl"]
    assert "peak_n" not in written and written["peak_targets"] == pytest.approx(table.usl.peak_n)
    assert type(table).model_validate_json(table.model_dump_json()) == table


def test_no_usl_fit_with_fewer_than_three_steps():
    table = consolidation_table("simple", 4, study_steps()[:2], 0.95)
    assert table.usl is None and all(s.usl_tps is None for s in table.steps)


def test_a_step_with_a_failed_target_is_reported_but_not_compared():
    # Given a 2-target step where one target failed
    steps = [StepTotals(1, {"a": 100.0}), StepTotals(2, {"a": 90.0, "b": None}), StepTotals(3, {"a": 80.0, "b": 80.0, "c": 80.0})]
    table = consolidation_table("w", 1, steps, 0.95)
    failed = table.steps[1]
    # Then its total covers the target that ran, without a ratio, and it is not the threshold step
    assert not failed.complete and failed.measured_tps == 90 and failed.ratio is None
    assert "b" in failed.note
    assert table.below_threshold_at == 3 and table.steps[2].ratio == pytest.approx(0.8)


def test_ideal_starts_from_the_first_complete_step():
    steps = [
        StepTotals(1, {"a": None}),
        StepTotals(2, {"a": 100.0, "b": 100.0}),
        StepTotals(3, {"a": 90.0, "b": 90.0, "c": 90.0}),
    ]
    table = consolidation_table("w", 1, steps, 0.95)
    assert [s.ideal_tps for s in table.steps] == [100.0, 200.0, 300.0]
    assert table.steps[2].ratio == pytest.approx(0.9)


def test_runs_that_did_not_start_together_are_noted():
    table = consolidation_table("w", 1, [StepTotals(1, {"a": 10.0}), StepTotals(2, {"a": 9.0, "b": 9.0}, together=False)], 0.9)
    assert "barrier" in table.steps[1].note


# --- matrix and plan -------------------------------------------------------------------------


def sweep(steps=(1, 2, 4), targets=4, **scenario):
    return {
        "campaign": "cons",
        "scenario": {"consolidation": {"steps": list(steps), **scenario}},
        "targets": [
            {"name": f"db{i}", "provider": "hci", "endpoint": {"host": f"db{i}", "user": "u"}} for i in range(1, targets + 1)
        ],
        "workloads": [{"name": "sel", "tool": "pgbench", "run": {"clients": 2, "duration_s": 60, "builtin": "select-only"}}],
    }


def test_the_last_step_runs_every_target():
    with pytest.raises(MatrixError, match="declare 4 targets"):
        parse_campaign(sweep(steps=(1, 2, 4), targets=3))


@pytest.mark.parametrize("steps", [(2, 1), (1, 1, 2), (0, 2)])
def test_steps_increase_from_one_target_up(steps):
    with pytest.raises(MatrixError, match="increasing"):
        parse_campaign(sweep(steps=steps, targets=max(steps) or 1))


def test_a_sweep_is_planned_as_one_phase_per_step():
    # Given a sweep over 1, 2 and 4 targets
    plan = plan_campaign(parse_campaign(sweep()), "cid")
    # Then phase k benchmarks the first n targets, all at once
    assert [(p.phase, p.concurrency, [t.name for t in p.targets]) for p in plan.phases] == [
        (1, 1, ["db1"]),
        (2, 2, ["db1", "db2"]),
        (3, 4, ["db1", "db2", "db3", "db4"]),
    ]
    # And step ids (so raw paths) carry the phase: the same target runs in several phases
    assert [s.step_id for s in plan.phases[1].targets[1].steps] == ["p2/db2/sel/init", "p2/db2/sel/c2-r1"]


def test_the_runs_of_a_phase_meet_at_one_barrier():
    plan = plan_campaign(parse_campaign(sweep()), "cid")
    runs = [t.steps[1] for t in plan.phases[2].targets]
    assert {r.phase_barrier.group for r in runs} == {"p3/sel/c2-r1"}
    assert [r.phase_barrier.index for r in runs] == [0, 1, 2, 3] and {r.phase_barrier.size for r in runs} == {4}
    assert all(r.timeout_s == 60 + RUN_TIMEOUT_MARGIN_S + PHASE_BARRIER_TIMEOUT_S for r in runs)
    # A step of one target waits for nobody
    assert plan.phases[0].targets[0].steps[1].phase_barrier is None


def test_plan_targets_lists_each_target_once_with_all_its_phases():
    plan = plan_campaign(parse_campaign(sweep()), "cid")
    by_name = {t.name: [s.step_id for s in t.steps] for t in plan.targets}
    assert list(by_name) == ["db1", "db2", "db3", "db4"]
    assert by_name["db1"] == [
        "p1/db1/sel/init",
        "p1/db1/sel/c2-r1",
        "p2/db1/sel/init",
        "p2/db1/sel/c2-r1",
        "p3/db1/sel/init",
        "p3/db1/sel/c2-r1",
    ]


def test_a_plain_campaign_is_one_phase_with_unprefixed_steps():
    data = sweep()
    del data["scenario"]
    plan = plan_campaign(parse_campaign({**data, "target_concurrency": 2}), "cid")
    (phase,) = plan.phases
    assert phase.concurrency == 2 and len(phase.targets) == 4
    db1 = next(t for t in phase.targets if t.name == "db1")
    assert db1.steps[1].step_id == "db1/sel/c2-r1" and db1.steps[1].phase is None


def test_a_plan_given_targets_is_read_as_one_phase():
    plan = plan_campaign(parse_campaign(sweep()), "cid")
    legacy = plan.model_dump(mode="json")
    legacy.pop("phases")
    legacy.update(scenario=None, target_concurrency=3, targets=[t.model_dump(mode="json") for t in plan.phases[0].targets])
    (phase,) = Plan.model_validate(legacy).phases
    assert phase.concurrency == 3 and [t.name for t in phase.targets] == ["db1"]


# --- the state machine and aggregation --------------------------------------------------------


def test_the_state_machine_runs_phases_one_after_the_other():
    asl = json.loads((ROOT / "statemachines" / "campaign.asl.json").read_text())
    phases = asl["States"]["Run Phases In Order"]
    assert phases["ItemsPath"] == "$.planned.phases" and phases["MaxConcurrency"] == 1
    listed = phases["ItemProcessor"]["States"]["List Phase Targets"]["Parameters"]
    assert listed["concurrency.$"] == "$.phase.concurrency" and listed["targets.$"].startswith("States.ArrayRange(0, ")
    targets = phases["ItemProcessor"]["States"]["Benchmark Targets"]
    assert targets["ItemsPath"] == "$.targets" and targets["MaxConcurrencyPath"] == "$.concurrency"
    assert asl["States"]["Within Cost Cap?"]["Choices"][0]["Next"] == "Check Targets"
    assert asl["States"]["Check Targets"]["Next"] == "Run Phases In Order"


def summary(step, tps):
    return StepSummary(
        campaign_id="cid",
        step_id=step.step_id,
        target=step.target,
        workload=step.workload,
        kind=step.kind,
        tool="pgbench",
        clients=step.clients,
        status="succeeded",
        started_at="t",
        finished_at="t",
        wall_s=1,
        tps=tps,
        transactions=int(tps * 60),
        raw=[f"cid/raw/{step.step_id}/pgbench.log"],
    )


def swept(per_target=None):
    """The results of a sweep whose targets ran `per_target[phase]` tps each, through the state machine's output."""
    if per_target is None:
        per_target = {1: 1000.0, 2: 950.0, 3: 800.0}
    plan = plan_campaign(parse_campaign(sweep()), "cid")
    summaries = [summary(s, per_target[s.phase]) for t in plan.targets for s in t.steps]
    return aggregate(plan, phase_outcomes(plan), summaries, "s", "f")


def phase_outcomes(plan):
    """The state machine's output for a sweep where every step succeeded: one item per phase, each the
    outcome of its targets."""
    raw_outcomes = [
        {
            "phase": p.phase,
            "targets": [
                {
                    "name": t.name,
                    "server": None,
                    "failure": None,
                    "steps": [{"shards": [{"step_id": s.step_id, "status": "succeeded"}]} for s in t.steps],
                }
                for t in p.targets
            ],
        }
        for p in plan.phases
    ]
    return TypeAdapter(Outcomes).validate_python(raw_outcomes)


def test_the_report_shows_the_sweep():
    files = build_reports(swept())
    html, summary_md = files["report.html"].decode(), files["summary.md"].decode()
    assert 'id="consolidation"' in html and 'id="chart-consolidation-sel-c2"' in html
    assert "first step below 95% of ideal" in html
    assert "| 4 | 3,200.0 | 4,000.0 | 80.0% |" in summary_md
    assert "Below 95% of ideal from 4 targets on." in summary_md


def test_phase_outcomes_are_aggregated_into_the_consolidation_table():
    # Given a sweep where each target ran 1000 tps alone, 950 beside one other and 800 beside three
    plan = plan_campaign(parse_campaign(sweep()), "cid")
    per_target = {1: 1000.0, 2: 950.0, 3: 800.0}
    summaries = [summary(s, per_target[s.phase]) for t in plan.targets for s in t.steps]
    # The state machine's output: one item per phase, each the outcome of its targets
    outcomes = phase_outcomes(plan)
    # When aggregated
    results = aggregate(plan, outcomes, summaries, "s", "f")
    # Then every target lists its runs with their phase, and the table compares totals with ideal
    assert all(t.status == "succeeded" for t in results.targets)
    assert [w.phase for w in results.targets[0].workloads] == [1, 2, 3]
    (table,) = results.scenarios.consolidation
    assert [(s.targets, s.measured_tps, s.ideal_tps) for s in table.steps] == [(1, 1000, 1000), (2, 1900, 2000), (4, 3200, 4000)]
    assert table.below_threshold_at == 4
    # And the ranking compares the targets in the last step, where all four ran together
    assert sorted(r.target for r in results.ranking) == ["db1", "db2", "db3", "db4"]


def test_a_target_that_failed_in_one_phase_leaves_that_step_incomplete():
    plan = plan_campaign(parse_campaign(sweep()), "cid")
    summaries = [summary(s, 1000.0) for t in plan.targets for s in t.steps if not s.step_id.startswith("p2/db2/")]
    cause = json.dumps({"errorType": "ConnectionRefused", "errorMessage": "no server"})
    outcomes = [
        TargetOutcome(
            name=t.name,
            phase=p.phase,
            failure={"Error": "ConnectionRefused", "Cause": cause} if (p.phase, t.name) == (2, "db2") else None,
            steps=[] if (p.phase, t.name) == (2, "db2") else [{"step_id": s.step_id, "status": "succeeded"} for s in t.steps],
        )
        for p in plan.phases
        for t in p.targets
    ]
    results = aggregate(plan, outcomes, summaries, "s", "f")
    db2 = next(t for t in results.targets if t.name == "db2")
    assert db2.status == "failed" and db2.error.kind == "connection_refused"
    steps = results.scenarios.consolidation[0].steps
    assert [s.complete for s in steps] == [True, False, True] and steps[1].measured_tps == 1000


def test_the_example_sweep_validates_and_plans():
    campaign = load_campaign(ROOT / "examples" / "consolidation.json")
    plan = plan_campaign(campaign, "example")
    assert [p.concurrency for p in plan.phases] == campaign.scenario.consolidation.steps == [1, 2, 4, 8]
