"""A consolidation sweep over 1, 2 and 4 embedded targets, each step a phase of the one state machine."""

import json

import pytest

from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

NAMES = ["db1", "db2", "db3", "db4"]
MATRIX = {
    "campaign": "consolidation",
    "connections": {"monitor_interval_s": 1},
    "scenario": {"consolidation": {"steps": [1, 2, 4], "threshold": 0.95}},
    "targets": [{"name": name, "provider": "embedded", "embedded": {"settings": {"shared_buffers": "32MB"}}} for name in NAMES],
    "workloads": [
        {
            "name": "select",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 2, "jobs": 1, "duration_s": 3, "progress_s": 1, "builtin": "select-only"},
        }
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    # Given four embedded targets and a sweep over 1, 2 and 4 of them at once
    # When the campaign runs through the local runtime
    result = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("results"))
    assert result.status == "SUCCEEDED", result.error
    return result


@pytest.fixture(scope="module")
def table(run):
    (table,) = run.results.scenarios.consolidation
    return table


def test_each_step_runs_the_first_n_targets(table):
    # Then the sweep ran three phases with 1, 2 and 4 targets
    assert [(s.phase, s.targets, s.names) for s in table.steps] == [(1, 1, ["db1"]), (2, 2, ["db1", "db2"]), (3, 4, NAMES)]
    assert all(s.complete for s in table.steps)


def test_measured_is_compared_with_ideal_scaling(table):
    single = table.steps[0].measured_tps
    for step in table.steps:
        assert step.measured_tps == pytest.approx(sum(step.per_target_tps.values()))
        assert step.ideal_tps == pytest.approx(single * step.targets)
        assert step.ratio == pytest.approx(step.measured_tps / step.ideal_tps)
    assert table.steps[0].ratio == pytest.approx(1.0)


def test_the_threshold_step_is_the_first_below_it(table):
    below = [s.targets for s in table.steps if s.ratio < table.threshold]
    assert table.below_threshold_at == (below[0] if below else None)


def test_a_usl_fit_covers_the_three_steps(table):
    assert table.usl is not None and table.usl.points == 3
    # Each step's USL prediction is reported beside it; the fit's error is the worst of them
    errors = [abs(s.usl_tps - s.measured_tps) / s.measured_tps for s in table.steps]
    assert max(errors) == pytest.approx(table.usl.max_error)


def test_runs_of_a_step_start_together_and_keep_their_phase_in_raw_paths(run):
    targets = {t.name: t for t in run.results.targets}
    assert all(t.status == "succeeded" for t in targets.values())
    assert [w.phase for w in targets["db1"].workloads] == [1, 2, 3]
    assert [w.phase for w in targets["db4"].workloads] == [3]
    for t in targets.values():
        for w in t.workloads:
            assert w.raw[0].startswith(f"raw/p{w.phase}/{t.name}/select/")
            if w.phase > 1:  # several targets: they met at the phase's barrier and started at once
                assert w.barrier.all_arrived
    starts = {t.name: next(w for w in t.workloads if w.phase == 3).barrier.start_epoch for t in targets.values()}
    assert len(set(starts.values())) == 1


def test_results_json_and_the_report_carry_the_table(run, table):
    data = json.loads((run.results_dir / "results.json").read_text())
    rows = data["scenarios"]["consolidation"][0]["steps"]
    assert [(r["targets"], r["measured_tps"], r["ideal_tps"]) for r in rows] == [
        (s.targets, s.measured_tps, s.ideal_tps) for s in table.steps
    ]
    html = (run.results_dir / "report.html").read_text()
    summary = (run.results_dir / "summary.md").read_text()
    assert 'id="consolidation"' in html and 'id="chart-consolidation-select-c2"' in html
    assert "## Consolidation scaling: select, 2 clients per target" in summary
    assert f"| 4 | {table.steps[2].measured_tps:,.1f} | {table.steps[2].ideal_tps:,.1f} |" in summary


def test_ranking_compares_the_targets_as_they_ran_together(run):
    # Each target's metrics are those of the last step, where every target ran at once
    assert sorted(r.target for r in run.results.ranking) == NAMES
