"""Failure classification, resolve-once, cancellation and resume: the pure parts, without a server."""

import json
import socket
import threading
import time

import pytest
from botocore.exceptions import ClientError

from pgarena.analysis.aggregate import aggregate
from pgarena.analysis.cancel import stopped_outcomes
from pgarena.analysis.rerun import combine, failed_pairs, plan_reruns
from pgarena.campaign.step.stops import heartbeat, heartbeat_every_s
from pgarena.model.errors import ErrorInfo, PgarenaError
from pgarena.model.matrix import Endpoint
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import StepSummary
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.server.restarts import reachable_address, resolve, restart_evidence
from pgarena.tools.pgbench.command import libpq_env
from pgarena.worker.task_token import SfnTaskToken
from tests.conftest import FIXTURES, ROOT

ASL = json.loads((ROOT / "statemachines" / "campaign.asl.json").read_text())


def matrix_of(*names, workloads=("tpcb",)):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = [{**data["targets"][0], "name": n} for n in names]
    data["workloads"] = [{**data["workloads"][0], "name": w} for w in workloads]
    return parse_campaign(data)


def summary(step_id, kind="run", status="succeeded", error=None, tps=100.0):
    target, workload, _ = step_id.split("/")
    return StepSummary(
        campaign_id="cid",
        step_id=step_id,
        target=target,
        workload=workload,
        kind=kind,
        tool="pgbench",
        clients=4 if kind == "run" else None,
        status=status,
        started_at="t0",
        finished_at="t1",
        wall_s=1.0,
        tps=tps if kind == "run" and status == "succeeded" else None,
        raw=[f"cid/raw/{step_id}/pgbench.log"],
        error=error,
    )


def states(name, states_=None):
    """Find a state by name anywhere in the (nested) definition."""
    for state_name, state in (states_ or ASL["States"]).items():
        if state_name == name:
            return state
        inner = state.get("ItemProcessor", {}).get("States")
        if inner:
            found = states(name, inner)
            if found:
                return found
    return None


# --- classification --------------------------------------------------------------------------------


def test_a_changed_postmaster_start_time_is_a_restart_with_both_times():
    message = restart_evidence("2026-01-01T00:00:00+00:00", "2026-01-01T00:05:00+00:00")
    assert "2026-01-01T00:00:00+00:00" in message and "2026-01-01T00:05:00+00:00" in message


@pytest.mark.parametrize("before, after", [("t", "t"), (None, "t"), ("t", None)])
def test_no_restart_is_claimed_without_two_different_readings(before, after):
    assert restart_evidence(before, after) is None


def test_a_lost_worker_is_worker_lost_with_what_it_uploaded():
    # Given a run whose worker died: Step Functions stopped waiting (moto: States.Timeout) and no summary exists
    plan = plan_campaign(matrix_of("a"), "cid")
    outcome = TargetOutcome(
        name="a",
        steps=[
            {"step_id": "a/tpcb/init", "status": "succeeded"},
            {"step_id": "a/tpcb/c4-r1", "status": "failed", "failure": {"Error": "States.Timeout", "Cause": ""}},
        ],
    )
    # When aggregated with the chunks it had uploaded
    results = aggregate(
        plan, [outcome], [summary("a/tpcb/init", kind="init")], "s", "f", raw_keys=["cid/raw/a/tpcb/c4-r1/pgbench.log"]
    )
    (run,) = results.targets[0].workloads
    # Then it is worker_lost, pointing at the output it left
    assert run.error.kind == "worker_lost" and "no heartbeat for 300 s" in run.error.message
    assert run.raw == ["raw/a/tpcb/c4-r1/pgbench.log"] and run.error.raw == "cid/raw/a/tpcb/c4-r1/pgbench.log"


def test_a_tool_timeout_the_worker_recorded_stays_timeout():
    plan = plan_campaign(matrix_of("a"), "cid")
    outcome = TargetOutcome(
        name="a",
        steps=[
            {"step_id": "a/tpcb/init", "status": "succeeded"},
            {"step_id": "a/tpcb/c4-r1", "status": "failed", "failure": {"Error": "States.Timeout", "Cause": ""}},
        ],
    )
    killed = summary("a/tpcb/c4-r1", status="failed", error=ErrorInfo(kind="timeout", message="killed"))
    results = aggregate(plan, [outcome], [summary("a/tpcb/init", kind="init"), killed], "s", "f")
    assert results.targets[0].workloads[0].error.kind == "timeout"


def test_a_target_failed_at_preflight_points_at_preflight_evidence():
    plan = plan_campaign(matrix_of("a"), "cid")
    cause = json.dumps({"errorType": "DnsFailure", "errorMessage": "could not translate host name"})
    results = aggregate(
        plan,
        [TargetOutcome(name="a", failure={"Error": "DnsFailure", "Cause": cause})],
        [],
        "s",
        "f",
        raw_keys=["cid/raw/a/preflight/preflight.json"],
    )
    assert results.targets[0].error.kind == "dns_failure"
    assert results.targets[0].error.raw == "cid/raw/a/preflight/preflight.json"


# --- retries with judgement --------------------------------------------------------------------------


def test_preflight_retries_transient_connection_errors_a_bounded_few_times():
    retriers = states("Preflight Target")["Retry"]
    connection = next(r for r in retriers if "ConnectionRefused" in r["ErrorEquals"])
    assert {"ConnectionRefused", "DnsFailure"} <= set(connection["ErrorEquals"])
    assert connection["MaxAttempts"] <= 3 and connection["BackoffRate"] >= 1
    assert all("BudgetRefused" not in r["ErrorEquals"] and "States.ALL" not in r["ErrorEquals"] for r in retriers)


def test_a_worker_failure_is_never_retried_only_its_launch_is():
    task = states("Run Worker Task")
    retried = {name for r in task["Retry"] for name in r["ErrorEquals"]}
    assert "LaunchFailed" in retried
    # what a worker reports (a failure mid-measurement) and lost workers are recorded, never run again
    assert not retried & {
        "States.ALL",
        "States.Timeout",
        "States.HeartbeatTimeout",
        "States.TaskFailed",
        "server_closed_connection",
        "server_restarted",
        "too_many_clients",
        "worker_stopped",
    }


def test_the_heartbeat_timeout_comes_from_the_step_so_one_definition_serves_aws_and_tests():
    task = states("Run Worker Task")
    assert task["HeartbeatSecondsPath"] == "$.step.heartbeat_timeout_s" and "HeartbeatSeconds" not in task
    # the default covers a cold Fargate start (ENI, image pull: minutes) before the worker's first beat
    assert plan_campaign(matrix_of("a"), "cid").targets[0].steps[0].heartbeat_timeout_s == 300


def test_a_worker_whose_heartbeat_is_refused_stops_at_once():
    class GaveUp:
        def send_task_heartbeat(self, taskToken):
            raise ClientError({"Error": {"Code": "TaskTimedOut", "Message": "Task Timed Out"}}, "SendTaskHeartbeat")

    stopped = threading.Event()
    with heartbeat(SfnTaskToken(GaveUp(), "token"), every_s=60, on_gone=stopped.set):
        assert stopped.wait(30)


def test_a_worker_keeps_going_through_a_transient_heartbeat_error():
    class Flaky:
        calls = 0

        def send_task_heartbeat(self, taskToken):
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "SendTaskHeartbeat")

    gone = threading.Event()
    with heartbeat(SfnTaskToken(Flaky(), "token"), every_s=0.01, on_gone=gone.set):
        while Flaky.calls < 3:
            time.sleep(0.01)
    assert not gone.is_set()


@pytest.mark.parametrize("code", ["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"])
def test_step_functions_answers_that_mean_the_task_is_gone_are_told_as_gone(code):
    class Answers:
        def send_task_heartbeat(self, taskToken):
            raise ClientError({"Error": {"Code": code, "Message": "gone"}}, "SendTaskHeartbeat")

    assert SfnTaskToken(Answers(), "token").beat() is False


def test_any_other_heartbeat_error_is_raised_for_the_next_beat_to_retry():
    class Throttled:
        def send_task_heartbeat(self, taskToken):
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "SendTaskHeartbeat")

    class Accepted:
        def send_task_heartbeat(self, taskToken):
            return {}

    with pytest.raises(ClientError):
        SfnTaskToken(Throttled(), "token").beat()
    assert SfnTaskToken(Accepted(), "token").beat() is True


def test_workers_beat_at_least_three_times_per_heartbeat_timeout():
    assert heartbeat_every_s(10, 60) == 10 and heartbeat_every_s(10, 6) == 2


# --- resolve once --------------------------------------------------------------------------------------


def test_resolving_an_invalid_name_is_a_dns_failure():
    with pytest.raises(PgarenaError) as failure:
        resolve("pgarena-nowhere.invalid", 5432)
    assert failure.value.kind == "dns_failure" and "pgarena-nowhere.invalid" in str(failure.value)


def test_resolving_localhost_and_a_socket_directory():
    assert "127.0.0.1" in resolve("localhost", 5432)
    assert resolve("/var/run/postgresql", 5432) == []


def test_the_address_that_answers_is_chosen():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert reachable_address(["127.0.0.2", "127.0.0.1"], port, timeout_s=1) == "127.0.0.1"


def test_workers_connect_to_the_address_and_verify_tls_against_the_name():
    endpoint = Endpoint(host="db.example.com", user="bench", sslmode="verify-full", use_resolved_address=True)
    env = libpq_env(endpoint, None, "app", hostaddr="10.0.0.5")
    assert env["PGHOST"] == "db.example.com" and env["PGHOSTADDR"] == "10.0.0.5"
    assert "PGHOSTADDR" not in libpq_env(endpoint, None, "app")


# --- cancellation ------------------------------------------------------------------------------------


def cancelled_results(plan, finished, summaries):
    """What finalize aggregates for a stopped execution (status aside)."""
    outcomes, summaries = stopped_outcomes(plan, finished, summaries)
    return aggregate(plan, outcomes, summaries, "s", "f")


def test_a_cancelled_campaign_lists_every_step_with_what_finished():
    # Given a and b planned; a loaded, then its run's worker was stopped; b never started
    plan = plan_campaign(matrix_of("a", "b"), "cid")
    stopped = summary("a/tpcb/c4-r1", status="failed", error=ErrorInfo(kind="worker_stopped", message="SIGTERM"))
    results = cancelled_results(plan, [], [summary("a/tpcb/init", kind="init"), stopped])
    a, b = results.targets
    assert results.ranking == []
    assert a.loads[0].status == "succeeded"
    assert a.workloads[0].error.kind == "cancelled" and "its worker was stopped" in a.workloads[0].error.message
    assert [x.error.kind for x in [*b.loads, *b.workloads]] == ["cancelled", "cancelled"]


def test_a_finished_target_in_a_cancelled_campaign_keeps_its_result_and_rank():
    plan = plan_campaign(matrix_of("a", "b"), "cid")
    done = TargetOutcome(
        name="a", steps=[{"step_id": "a/tpcb/init", "status": "succeeded"}, {"step_id": "a/tpcb/c4-r1", "status": "succeeded"}]
    )
    results = cancelled_results(plan, [done], [summary("a/tpcb/init", kind="init"), summary("a/tpcb/c4-r1")])
    assert results.targets[0].status == "succeeded" and [r.target for r in results.ranking] == ["a"]
    assert results.targets[1].status == "failed" and results.targets[1].error.kind == "cancelled"


# --- resume ------------------------------------------------------------------------------------------


def _results(plan, outcomes, summaries):
    return aggregate(plan, outcomes, summaries, "s", "f")


def test_resume_reruns_only_the_failed_target_workload_pairs():
    # Given a ran both workloads fine; b failed w2 only; c failed at preflight
    matrix = matrix_of("a", "b", "c", workloads=("w1", "w2"))
    plan = plan_campaign(matrix, "cid")
    ok = {
        t: [summary(f"{t}/{w}/init", kind="init") for w in ("w1", "w2")] + [summary(f"{t}/{w}/c4-r1") for w in ("w1", "w2")]
        for t in "ab"
    }
    broken = summary("b/w2/c4-r1", status="failed", error=ErrorInfo(kind="server_closed_connection", message="x"))
    summaries = ok["a"] + [s for s in ok["b"] if s.step_id != "b/w2/c4-r1"] + [broken]
    outcomes = [
        TargetOutcome(name="a"),
        TargetOutcome(name="b"),
        TargetOutcome(name="c", failure={"Error": "ConnectionRefused", "Cause": ""}),
    ]
    original = _results(plan, outcomes, summaries)
    # When the re-runs are planned
    assert failed_pairs(original) == {"b": ["w2"], "c": ["w1", "w2"]}
    reruns = plan_reruns(original, matrix)
    # Then one campaign per set of failed workloads, with only those targets and workloads
    assert [([t.name for t in r.campaign.targets], [w.name for w in r.campaign.workloads]) for r in reruns] == [
        (["b"], ["w2"]),
        (["c"], ["w1", "w2"]),
    ]


def test_combined_results_keep_successes_and_take_the_reruns():
    matrix = matrix_of("a", "b")
    original = _results(
        plan_campaign(matrix, "cid"),
        [TargetOutcome(name="a"), TargetOutcome(name="b", failure={"Error": "DnsFailure", "Cause": ""})],
        [summary("a/tpcb/init", kind="init"), summary("a/tpcb/c4-r1", tps=111.0)],
    )
    (rerun,) = plan_reruns(original, matrix)
    retried = _results(
        plan_campaign(rerun.campaign, "cid2"),
        [TargetOutcome(name="b")],
        [summary("b/tpcb/init", kind="init").model_copy(update={"campaign_id": "cid2"}), summary("b/tpcb/c4-r1", tps=99.0)],
    )
    combined = combine(original, [(rerun, retried)], "cid3", matrix)
    a, b = combined.targets
    assert (a.status, a.workloads[0].tps, b.status, b.workloads[0].tps) == ("succeeded", 111.0, "succeeded", 99.0)
    assert combined.resumed_from == ["cid", "cid2"] and [r.target for r in combined.ranking] == ["a", "b"]
    assert combined.status == "completed"
