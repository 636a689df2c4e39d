import json

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.metrics import findings
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import ProgressSample, StepSummary
from pgarena.model.tool_figures import ConsistencyCheck, ToolFigures
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.tools.pgbench.figures import PgbenchFigures
from tests.conftest import FIXTURES


def plan_two_targets():
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"][1] = {**data["targets"][0], "name": "b"}
    return plan_campaign(parse_campaign(data), "cid")


def summary(step_id, target, kind="run", tps=None, status="succeeded"):
    return StepSummary(
        campaign_id="cid",
        step_id=step_id,
        target=target,
        workload="tpcb",
        kind=kind,
        tool="pgbench",
        clients=4 if kind == "run" else None,
        status=status,
        started_at="t0",
        finished_at="t1",
        wall_s=1.0,
        tps=tps,
        load_s=0.5 if kind == "init" else None,
        raw=[f"cid/raw/{step_id}/pgbench.log"],
    )


def test_failed_target_keeps_its_error_and_the_other_is_ranked():
    # Given target a ran and target b failed preflight
    plan = plan_two_targets()
    outcomes = [
        TargetOutcome(
            name="a",
            steps=[{"step_id": "a/tpcb/init", "status": "succeeded"}, {"step_id": "a/tpcb/c4-r1", "status": "succeeded"}],
        ),
        TargetOutcome(
            name="b",
            failure={
                "Error": "ConnectionRefused",
                "Cause": json.dumps({"errorType": "ConnectionRefused", "errorMessage": "no server"}),
            },
        ),
    ]
    summaries = [summary("a/tpcb/init", "a", kind="init"), summary("a/tpcb/c4-r1", "a", tps=123.4)]
    # When aggregated
    results = aggregate(plan, outcomes, summaries, "s", "f")
    a, b = results.targets
    # Then a succeeded with traceable raw paths and b failed with a classified error
    assert a.status == "succeeded" and a.workloads[0].tps == 123.4
    assert a.workloads[0].raw == ["raw/a/tpcb/c4-r1/pgbench.log"]
    assert a.loads[0].seconds == 0.5
    assert b.status == "failed" and b.error.kind == "connection_refused" and b.error.message == "no server"
    assert b.workloads[0].status == "failed" and b.workloads[0].error.kind == "not_run"
    assert [r.target for r in results.ranking] == ["a"]


def test_failed_step_fails_its_target_but_keeps_measured_results():
    plan = plan_two_targets()
    failure = {"Error": "too_many_clients", "Cause": json.dumps({"errorType": "too_many_clients", "errorMessage": "full"})}
    outcomes = [
        TargetOutcome(
            name="a",
            steps=[
                {"step_id": "a/tpcb/init", "status": "succeeded"},
                {"step_id": "a/tpcb/c4-r1", "status": "failed", "failure": failure},
            ],
        ),
        TargetOutcome(
            name="b",
            steps=[{"step_id": "b/tpcb/init", "status": "succeeded"}, {"step_id": "b/tpcb/c4-r1", "status": "succeeded"}],
        ),
    ]
    summaries = [
        summary("a/tpcb/init", "a", kind="init"),
        summary("b/tpcb/init", "b", kind="init"),
        summary("b/tpcb/c4-r1", "b", tps=50.0),
    ]
    results = aggregate(plan, outcomes, summaries, "s", "f")
    a, _b = results.targets
    assert a.status == "failed" and a.error.kind == "too_many_clients"
    assert a.loads[0].status == "succeeded"
    assert [r.target for r in results.ranking] == ["b"]


def test_missing_outcome_is_reported_not_dropped():
    results = aggregate(plan_two_targets(), [], [], "s", "f")
    assert [t.status for t in results.targets] == ["failed", "failed"]
    assert results.targets[0].error.kind == "not_run"


def test_a_failed_shard_degrades_the_merged_result_and_says_which():
    from pgarena.analysis.latency import encode, new_histogram
    from pgarena.model.series import SecondBucket, ShardSeries

    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["workloads"][0]["run"].update({"clients": 4, "workers": 2})
    plan = plan_campaign(parse_campaign(data), "cid")
    h = new_histogram()
    h.record_value(1000)
    ok = summary("a/tpcb/c4-r1/s0", "a", tps=10.0).model_copy(update={"clients": 2, "series": "cid/raw/x/series.json"})
    failure = {"Error": "server_closed_connection", "Cause": ""}
    outcomes = [
        TargetOutcome(
            name="a",
            steps=[
                {"shards": [{"step_id": "a/tpcb/init", "status": "succeeded"}]},
                {
                    "shards": [
                        {"step_id": "a/tpcb/c4-r1/s0", "status": "succeeded"},
                        {"step_id": "a/tpcb/c4-r1/s1", "status": "failed", "failure": failure},
                    ]
                },
            ],
        )
    ]
    series = {
        "a/tpcb/c4-r1/s0": ShardSeries(
            start_epoch=0.0, end_epoch=3.0, seconds=[SecondBucket(t=t, count=1, hist=encode(h)) for t in range(3)]
        )
    }
    results = aggregate(plan, outcomes, [summary("a/tpcb/init", "a", kind="init"), ok], "s", "f", series=series)
    (w,) = results.targets[0].workloads
    assert w.degraded and (w.clients, w.requested_clients) == (2, 4)
    assert "a/tpcb/c4-r1/s1: server_closed_connection" in w.error.message
    assert [s.status for s in w.shards] == ["succeeded", "failed"]


def test_a_rate_run_that_skipped_to_keep_its_schedule_is_sustained_with_its_skipped_flagged():
    # Given a run at 1000 tps with a latency limit: 960 tps delivered, 4% skipped (under 5%), the lag steady at 0.7 ms
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["workloads"][0]["run"].update(rate_tps=1000, latency_limit_ms=20)
    plan = plan_campaign(parse_campaign(data), "cid")
    outcomes = [
        TargetOutcome(
            name="a",
            steps=[{"step_id": "a/tpcb/init", "status": "succeeded"}, {"step_id": "a/tpcb/c4-r1", "status": "succeeded"}],
        )
    ]
    run = summary("a/tpcb/c4-r1", "a", tps=960.0).model_copy(
        update={
            "transactions": 9_600,
            "tool_figures": PgbenchFigures(lag_avg_ms=0.7, skipped_transactions=400),
            "progress": [ProgressSample(elapsed_s=float(t), tps=960.0, lag_ms=0.7) for t in range(1, 11)],
        }
    )
    # When aggregated
    results = aggregate(plan, outcomes, [summary("a/tpcb/init", "a", kind="init"), run], "s", "f")
    # Then the rate is not flagged as not sustained: the skipped transactions are flagged instead
    (w,) = results.targets[0].workloads
    assert [i.kind for i in w.incidents] == ["transactions_skipped"]
    assert w.incidents[0].message.startswith("400 transactions skipped (4.0% of the 10,000 scheduled)")


def test_a_failed_consistency_condition_is_the_runs_named_incident_and_its_findings():
    # Given a run whose data checks found condition 2 broken after it
    plan = plan_two_targets()
    outcomes = [
        TargetOutcome(
            name=name,
            steps=[
                {"step_id": f"{name}/tpcb/init", "status": "succeeded"},
                {"step_id": f"{name}/tpcb/c4-r1", "status": "succeeded"},
            ],
        )
        for name in ("a", "b")
    ]
    broken = summary("a/tpcb/c4-r1", "a", tps=123.4).model_copy(
        update={
            "tool_figures": ToolFigures(
                consistency=[
                    ConsistencyCheck(name="1: w_ytd = sum(d_ytd)", passed=True),
                    ConsistencyCheck(name="2: d_next_o_id - 1 = max(o_id)", passed=False, detail="1 of 20 districts fail: 1.3"),
                ]
            )
        }
    )
    summaries = [summary("a/tpcb/init", "a", kind="init"), broken, summary("b/tpcb/init", "b", kind="init")]
    summaries.append(summary("b/tpcb/c4-r1", "b", tps=120.0))
    # When aggregated
    results = aggregate(plan, outcomes, summaries, "s", "f")
    # Then the run keeps its figures and names the failure as an incident, listed with the findings
    (run,) = results.targets[0].workloads
    assert run.status == "succeeded" and run.tps == 123.4
    (incident,) = [i for i in run.incidents if i.kind == "consistency_failed"]
    assert "2: d_next_o_id - 1 = max(o_id): 1 of 20 districts fail: 1.3" in incident.message
    assert any(f.kind == "consistency_failed" for f in findings(results.targets[0]))
    assert not results.targets[1].workloads[0].incidents
