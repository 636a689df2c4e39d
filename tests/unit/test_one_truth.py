"""One computed truth: aggregation computes every metric, interval and comparison once and stores it in
results.json; the report, the CSVs, the CLI table and `compare` read it back and compute nothing."""

import csv
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest
from typer.testing import CliRunner

from pgarena.analysis.aggregate import aggregate
from pgarena.cli import app, ranking_table, stalled_runs
from pgarena.model.figures import Latency
from pgarena.model.layout import RESULTS_FILE
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import CampaignResults, ProgressSample, StepSummary
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.report import build_reports
from tests.conftest import FIXTURES

# What aggregation computes: a reader reaching any of these recomputes what results.json already holds.
COMPUTE = (
    "compute",
    "target_metrics",
    "point_metrics",
    "stability",
    "stall_incident",
    "findings",
    "scaling",
    "fit_usl",
    "interval",
    "with_points",
    "with_stability",
    "campaign_statistics",
    "rank",
    "rank_targets",
    "metric_scores",
    "samples",
    "compare_pair",
    "composite_interval",
    "noise_warnings",
)

TPS = {"a": (2000.0, 2100.0, 1950.0), "b": (1000.0, 1040.0, 990.0)}


def _summary(step_id: str, target: str, kind: Literal["init", "run", "cleanup"], tps: float | None = None) -> StepSummary:
    progress = [ProgressSample(elapsed_s=float(s), tps=tps * (1 + 0.01 * (s % 3))) for s in range(1, 11)] if tps else []
    return StepSummary(
        campaign_id="cid",
        step_id=step_id,
        target=target,
        workload="tpcb",
        kind=kind,
        tool="pgbench",
        clients=4 if kind == "run" else None,
        status="succeeded",
        started_at="2026-11-25T10:00:00+00:00",
        finished_at="2026-11-25T10:00:10+00:00",
        wall_s=10.0,
        tps=tps,
        latency_ms=Latency(avg=4000 / tps, p50=3800 / tps, p95=6000 / tps, p99=8000 / tps) if tps else Latency(),
        transactions=round(tps * 10) if tps else None,
        failed_transactions=0 if tps else None,
        progress=progress,
        load_s=0.5 if kind == "init" else None,
        raw=[f"cid/raw/{step_id}/pgbench.log"],
    )


def _aggregated() -> CampaignResults:
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"][1] = {**data["targets"][0], "name": "b"}
    data["repetitions"] = 3
    plan = plan_campaign(parse_campaign(data), "cid")
    summaries, outcomes = [], []
    for target in plan.targets:
        steps = []
        for step in target.steps:
            tps = TPS[target.name][step.repetition - 1] if step.kind == "run" else None
            summaries.append(_summary(step.step_id, target.name, step.kind, tps))
            steps.append({"step_id": step.step_id, "status": "succeeded"})
        outcomes.append(TargetOutcome(name=target.name, steps=steps))
    return aggregate(plan, outcomes, summaries, "2026-11-25T10:00:00+00:00", "2026-11-25T10:01:00+00:00")


def _refuse(name: str) -> Callable[..., object]:
    def refused(*args: object, **kwargs: object) -> object:
        raise AssertionError(f"a reader recomputed {name}: it must read results.json")

    return refused


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    folder = tmp_path / "cid"
    folder.mkdir()
    (folder / RESULTS_FILE).write_text(_aggregated().model_dump_json())
    return folder


@pytest.fixture
def no_computing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every compute function, wherever a pgarena module bound it, raises from now on."""
    for module in [m for name, m in sys.modules.items() if name.startswith("pgarena")]:
        for name in COMPUTE:
            found = getattr(module, name, None)
            if callable(found) and getattr(found, "__module__", "").startswith("pgarena.analysis"):
                monkeypatch.setattr(module, name, _refuse(name))


def _read(folder: Path) -> CampaignResults:
    return CampaignResults.model_validate_json((folder / RESULTS_FILE).read_text())


def test_results_json_carries_every_point_its_interval_and_each_runs_stability(stored):
    # Given a campaign aggregated and written
    results = _read(stored)
    # Then its metrics, intervals and comparisons are stored, computed once
    by_target = {m.target: m for m in results.metrics}
    (point,) = by_target["a"].points
    assert point.runs == 3 and point.tps == pytest.approx(sum(TPS["a"]) / 3)
    assert point.tps_interval is not None and point.tps_interval.ci95_low < point.tps < point.tps_interval.ci95_high
    assert all(w.stability is not None and w.stability.cv is not None for t in results.targets for w in t.workloads)
    assert results.comparisons and results.ranking[0].target == "a"


def test_aggregation_computes_each_targets_metrics_and_each_runs_stability_once(monkeypatch):
    # Given target_metrics and stability counted wherever a pgarena module bound them
    calls: dict[str, int] = {"target_metrics": 0, "stability": 0}
    for module in [m for name, m in sys.modules.items() if name.startswith("pgarena")]:
        for name in calls:
            found = getattr(module, name, None)
            if callable(found) and getattr(found, "__module__", "") == "pgarena.analysis.metrics":
                monkeypatch.setattr(module, name, _counted(found, name, calls))
    # When a campaign of 2 targets x 3 runs is aggregated
    _aggregated()
    # Then each target's metrics were computed once, and each run's stability once
    assert calls == {"target_metrics": 2, "stability": 6}


def _counted(function: Callable[..., object], name: str, calls: dict[str, int]) -> Callable[..., object]:
    def counted(*args: object, **kwargs: object) -> object:
        calls[name] += 1
        return function(*args, **kwargs)

    return counted


def test_report_csvs_cli_table_and_compare_render_from_results_json_alone(stored, no_computing):
    # Given every compute function raising once aggregation is done
    results = _read(stored)
    # When the reports, the CLI's ranking table and stalled lines, and `compare` are produced
    files = build_reports(results)
    table = ranking_table(results)
    stalls = stalled_runs(results)
    runner = CliRunner()
    report = runner.invoke(app, ["report", str(stored)])
    compare = runner.invoke(app, ["compare", str(stored), str(stored)])
    # Then they show the stored figures, and none recomputed them
    assert report.exit_code == 0, report.output
    assert compare.exit_code == 0, compare.output
    metrics = list(csv.DictReader(io.StringIO(files["metrics.csv"].decode())))
    stored_a = next(p for m in results.metrics if m.target == "a" for p in m.points)
    row = next(r for r in metrics if r["target"] == "a")
    assert float(row["tps_mean"]) == pytest.approx(stored_a.tps, abs=0.01)  # the CSV rounds to 2 places
    assert float(row["tps_ci95_low"]) == pytest.approx(stored_a.tps_interval.ci95_low, abs=0.01)
    tps_column = next(c for c in table.columns if str(c.header).endswith(" tps"))
    assert f"{max(TPS['a']):,.1f}" not in str(list(tps_column.cells))  # the best point's mean, not a run
    assert f"{stored_a.tps:,.1f}" in list(tps_column.cells)
    assert stalls == []
    assert "a" in files["summary.md"].decode()


def test_a_reader_given_no_stored_metrics_would_be_caught_recomputing(stored, no_computing):
    # Given results.json without its stored metrics (as written before they were stored)
    legacy = _read(stored).model_copy(update={"metrics": []})
    # When the report is built from it, Then it has to compute them: the guard above sees that
    with pytest.raises(AssertionError, match="recomputed target_metrics"):
        build_reports(legacy)
