"""`pgarena resume` re-runs steps, not pairs: which steps run again, the plan that runs only them, and the
combined results (issue 34.9)."""

import json

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.rerun import combine, plan_step_reruns, steps_to_rerun, with_failed_steps
from pgarena.model.errors import ErrorInfo
from pgarena.model.figures import Latency
from pgarena.model.metrics import PointLatency
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import StepSummary
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES


def matrix_of(*names, workloads=("w1", "w2"), repetitions=2):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = [{**data["targets"][0], "name": n} for n in names]
    data["workloads"] = [{**data["workloads"][0], "name": w, "run": {"clients": [2, 4], "duration_s": 5}} for w in workloads]
    data["repetitions"] = repetitions
    return parse_campaign(data)


def every_step(plan):
    return [s.step_id for t in plan.targets for s in t.steps]


def summary(step_id, campaign_id="cid", tps=100.0):
    target, workload, last = step_id.split("/")
    kind = "init" if last == "init" else "run"
    clients, repetition = (None, 1) if kind == "init" else (int(last[1:].split("-")[0]), int(last.split("-r")[1]))
    return StepSummary(
        campaign_id=campaign_id,
        step_id=step_id,
        target=target,
        workload=workload,
        kind=kind,
        tool="pgbench",
        clients=clients,
        repetition=repetition,
        status="succeeded",
        started_at="t0",
        finished_at="t1",
        wall_s=1.0,
        tps=tps if kind == "run" else None,
    )


def test_every_kept_step_is_reused_and_a_missing_run_runs_after_its_load():
    plan = plan_campaign(matrix_of("a", "b"), "cid")
    kept = set(every_step(plan)) - {"a/w1/c4-r2"}
    assert steps_to_rerun(plan, kept) == {"a": ["a/w1/init", "a/w1/c4-r2"]}


def test_a_missing_load_alone_runs_again_alone():
    plan = plan_campaign(matrix_of("a", "b"), "cid")
    assert steps_to_rerun(plan, set(every_step(plan)) - {"b/w2/init"}) == {"b": ["b/w2/init"]}


def test_nothing_runs_again_when_every_step_is_kept():
    plan = plan_campaign(matrix_of("a", "b"), "cid")
    assert steps_to_rerun(plan, set(every_step(plan))) == {}


def test_a_target_with_nothing_kept_runs_every_step():
    plan = plan_campaign(matrix_of("a", "b"), "cid")
    kept = {i for i in every_step(plan) if i.startswith("a/")}
    assert steps_to_rerun(plan, kept) == {"b": [s.step_id for s in plan.targets[1].steps]}


def test_the_rerun_campaign_plans_only_those_steps_each_load_before_its_runs():
    # Given a missing repetition 2 on a and a missing run of w2 on b
    matrix = matrix_of("a", "b")
    plan = plan_campaign(matrix, "cid")
    again = steps_to_rerun(plan, set(every_step(plan)) - {"a/w1/c4-r2", "b/w2/c2-r1"})
    # When the re-run campaign is planned
    (rerun,) = plan_step_reruns(again, plan, matrix)
    replanned = plan_campaign(rerun.campaign, "cid2")
    # Then it runs exactly those steps, and a pass holds a load before the runs that need it
    assert sorted(every_step(replanned)) == sorted(["a/w1/init", "a/w1/c4-r2", "b/w2/init", "b/w2/c2-r1"])
    ran = [s.step_id for phase in replanned.phases for t in phase.targets for s in t.steps]
    assert ran.index("a/w1/init") < ran.index("a/w1/c4-r2") and ran.index("b/w2/init") < ran.index("b/w2/c2-r1")
    assert [p.phase for p in replanned.phases] == list(range(1, len(replanned.phases) + 1))
    assert [p.phase for p in replanned.run_order.passes] == [p.phase for p in replanned.phases]
    assert rerun.pairs == {"a": ["w1"], "b": ["w2"]}


def test_combined_results_take_the_rerun_step_and_keep_the_others():
    # Given a campaign whose a/w1/c4-r1 was lost, and its re-run
    matrix = matrix_of("a", workloads=("w1",), repetitions=1)
    plan = plan_campaign(matrix, "cid")
    kept = [summary(i, tps=111.0) for i in every_step(plan) if i != "a/w1/c4-r1"]
    original = aggregate(plan, [TargetOutcome(name="a")], kept, "s", "f")
    (rerun,) = plan_step_reruns(steps_to_rerun(plan, {s.step_id for s in kept}), plan, matrix)
    replanned = plan_campaign(rerun.campaign, "cid2")
    again = [summary(i, "cid2", tps=99.0) for i in every_step(replanned)]
    retried = aggregate(replanned, [TargetOutcome(name="a")], again, "s", "f")
    # When they are combined
    combined = combine(original, [(rerun, retried)], "cid3", matrix)
    # Then the kept run keeps its figure, the lost one takes the re-run's
    (a,) = combined.targets
    assert {(w.clients, w.tps) for w in a.workloads} == {(2, 111.0), (4, 99.0)}
    assert a.status == "succeeded" and [l.workload for l in a.loads] == ["w1"]


def test_an_unverified_step_is_failed_alone_until_its_rerun_replaces_it():
    matrix = matrix_of("a", workloads=("w1",), repetitions=1)
    plan = plan_campaign(matrix, "cid")
    original = aggregate(plan, [TargetOutcome(name="a")], [summary(i) for i in every_step(plan)], "s", "f")
    why = ErrorInfo(kind="evidence_incomplete", message="raw/a/w1/c4-r1/pgbench.log is missing")
    (a,) = with_failed_steps(original, {"a/w1/c4-r1": why}).targets
    assert a.status == "failed" and a.error == why
    assert {(w.clients, w.status) for w in a.workloads} == {(2, "succeeded"), (4, "failed")}
    assert [l.status for l in a.loads] == ["succeeded"]


def test_a_sharded_step_is_kept_when_every_shard_kept_is(tmp_path, monkeypatch):
    from pgarena.local import resume

    ok = [summary("a/w1/c4-r1"), summary("a/w1/init")]
    shards = [summary("a/w1/c2-r1").model_copy(update={"step_id": f"a/w1/c2-r1/s{i}"}) for i in range(2)]
    lost = [summary("a/w1/c4-r2").model_copy(update={"step_id": f"a/w1/c4-r2/s{i}"}) for i in range(2)]
    lost[1] = lost[1].model_copy(update={"status": "failed"})
    monkeypatch.setattr(resume, "verified_steps", lambda folder: [*ok, *shards, *lost])
    assert resume.kept_step_ids(tmp_path) == {"a/w1/c4-r1", "a/w1/init", "a/w1/c2-r1"}


def test_a_point_keeps_its_merged_latency_unless_a_step_of_it_was_re_run():
    # Given a campaign whose points carry their merged latency, and whose a/w1/c4-r1 was lost and re-run
    matrix = matrix_of("a", workloads=("w1",), repetitions=1)
    plan = plan_campaign(matrix, "cid")
    kept = [summary(i, tps=111.0) for i in every_step(plan) if i != "a/w1/c4-r1"]
    original = aggregate(plan, [TargetOutcome(name="a")], kept, "s", "f")
    latency = PointLatency(interval_s=5, transactions=10, latency_ms=Latency(p50=1.0, p95=2.0, p99=3.0, max=4.0))
    metrics = [
        m.model_copy(update={"points": [p.model_copy(update={"merged_latency": latency}) for p in m.points]})
        for m in original.metrics
    ]
    original = original.model_copy(update={"metrics": metrics})
    (rerun,) = plan_step_reruns(steps_to_rerun(plan, {s.step_id for s in kept}), plan, matrix)
    retried = aggregate(plan_campaign(rerun.campaign, "cid2"), [TargetOutcome(name="a")], [], "s", "f")
    # When they are combined (results.json keeps no histograms to merge the two campaigns' runs again)
    combined = combine(original, [(rerun, retried)], "cid3", matrix)
    # Then the untouched point keeps the original's, and the point re-run step by step has none
    (a,) = combined.metrics
    assert {p.clients: p.merged_latency for p in a.points} == {2: latency, 4: None}
