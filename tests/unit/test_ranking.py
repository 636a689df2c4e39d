from pgarena.errors import ErrorInfo
from pgarena.ranking import rank_targets
from pgarena.results import TargetResult, WorkloadResult


def target(name, *tps, status="succeeded"):
    workloads = [
        WorkloadResult(name=f"w{i}", tool="pgbench", clients=4, repetition=1, status="succeeded", tps=value)
        for i, value in enumerate(tps)
    ]
    error = ErrorInfo(kind="connection_refused", message="down") if status == "failed" else None
    return TargetResult(name=name, provider="p", status=status, error=error, workloads=workloads)


def test_faster_target_ranks_first_with_score_one():
    ranking = rank_targets([target("slow", 500.0), target("fast", 1000.0)])
    assert [(r.rank, r.target, r.score) for r in ranking] == [(1, "fast", 1.0), (2, "slow", 0.5)]


def test_score_averages_relative_throughput_over_workloads():
    # Given each target wins one workload
    ranking = rank_targets([target("a", 100.0, 50.0), target("b", 50.0, 100.0)])
    # Then both score 0.75 and the tie is ordered by name
    assert [(r.target, r.score) for r in ranking] == [("a", 0.75), ("b", 0.75)]


def test_failed_targets_are_not_ranked():
    ranking = rank_targets([target("ok", 10.0), target("down", 99999.0, status="failed")])
    assert [r.target for r in ranking] == ["ok"]


def test_repetitions_are_averaged_per_workload_point():
    a = target("a", 100.0)
    a.workloads.append(a.workloads[0].model_copy(update={"repetition": 2, "tps": 300.0}))
    ranking = rank_targets([a, target("b", 400.0)])
    assert [(r.target, r.score) for r in ranking] == [("b", 1.0), ("a", 0.5)]


def test_nothing_to_rank():
    assert rank_targets([target("down", 1.0, status="failed")]) == []
