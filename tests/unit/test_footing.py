"""Equal footing (pgarena.analysis.footing) and how the ranking and the verdict honour it."""

from pgarena.analysis.footing import comparable_group, describe, footing_problem, site, worker_size
from pgarena.analysis.headline import headline
from pgarena.analysis.metrics import target_metrics
from pgarena.analysis.ranking import rank, unranked_reasons
from pgarena.cli import ranking_table
from pgarena.model.matrix import Placement, RankingConfig
from pgarena.model.results import CampaignResults, EcsTask, TargetResult, WorkerFacts, WorkerSize, WorkloadResult
from pgarena.report.view import build_report

SMALL = WorkerSize(vcpu=2, memory_mib=4096, cpu_model="Intel Xeon")
LARGE = WorkerSize(vcpu=4, memory_mib=8192, cpu_model="Intel Xeon")
THROUGHPUT = RankingConfig(weights={"throughput": 1.0}, tie_tolerance=0.0)


def target(name, tps=100.0, rtt=0.2, size=SMALL, site_="local"):
    run = WorkloadResult(name="tpcb", tool="pgbench", clients=4, repetition=1, status="succeeded", tps=tps)
    return TargetResult(name=name, provider="p", status="succeeded", rtt_ms=rtt, site=site_, worker_size=size, workloads=[run])


def test_round_trips_apart_by_more_than_1_ms_and_2x_are_unequal():
    problem = footing_problem(target("near", rtt=0.3), target("far", rtt=4.2))
    assert problem is not None
    assert "4.20 ms" in problem.reasons[0] and "0.30 ms" in problem.reasons[0] and "14x" in problem.reasons[0]
    assert "run far's workers next to it" in problem.fix and "allow_unequal_footing" in problem.fix


def test_a_small_gap_is_equal_footing_however_large_the_ratio():
    # 0.1 ms against 0.9 ms: 9x, but 0.8 ms apart
    assert footing_problem(target("a", rtt=0.1), target("b", rtt=0.9)) is None


def test_a_large_gap_within_2x_is_equal_footing():
    # 10 ms against 18 ms: 8 ms apart, but within 2x
    assert footing_problem(target("a", rtt=10.0), target("b", rtt=18.0)) is None


def test_an_unmeasured_round_trip_is_not_held_against_a_target():
    assert footing_problem(target("a", rtt=None), target("b", rtt=30.0)) is None


def test_workers_of_different_sizes_are_unequal():
    problem = footing_problem(target("a", size=SMALL), target("b", size=LARGE))
    assert problem is not None
    assert "2 vCPU, 4.0 GiB" in problem.reasons[0] and "4 vCPU, 8.0 GiB" in problem.reasons[0]
    assert "same task size" in problem.fix


def test_the_cpu_model_and_a_few_percent_of_memory_are_not_a_size_difference():
    other = WorkerSize(vcpu=2, memory_mib=4000, cpu_model="AMD EPYC")
    assert footing_problem(target("a", size=SMALL), target("b", size=other)) is None


def test_worker_size_prefers_the_task_limits_and_takes_the_most_common():
    fargate = WorkerFacts(cpu_limit=2.0, memory_bytes=16 << 30, cpu_model="m", task=EcsTask(cpu=1.0, memory_mib=2048))
    local = WorkerFacts(cpu_limit=8.0, memory_bytes=32 << 30, cpu_model="m")
    assert worker_size([fargate, fargate, local]) == WorkerSize(vcpu=1.0, memory_mib=2048, cpu_model="m")
    assert worker_size([None]) is None


def test_site_is_the_placement_region_else_the_tasks_region_else_local():
    in_az = WorkerFacts(task=EcsTask(availability_zone="eu-west-1b"))
    assert site(Placement(region="us-west-2"), [in_az]) == "us-west-2"
    assert (
        site(Placement(site="gcp-us-central1"), [WorkerFacts()]) == "gcp-us-central1"
    )  # an external site (ECS Anywhere): no zone
    assert site(None, [in_az]) == "eu-west-1"
    assert site(None, [WorkerFacts()]) == "local"
    assert site(None, []) is None  # no worker reported: nothing to say


def test_the_largest_group_on_equal_footing_nearest_first():
    targets = [target("far", rtt=5.0), target("a", rtt=0.2), target("b", rtt=0.4), target("big", rtt=0.3, size=LARGE)]
    assert comparable_group(targets) == ["a", "b"]


def test_unequal_footing_is_not_ranked_and_says_why_and_what_to_change():
    # Given a near target and a faster far one measured from the same site
    targets = [target("near", tps=100.0, rtt=0.2), target("far", tps=300.0, rtt=4.4)]
    # When ranked with the defaults
    ranked = rank(targets, THROUGHPUT)
    # Then only the near one is ranked, and the far one is named with the gap and the fix
    assert [e.target for e in ranked.entries] == ["near"]
    assert [(p.a, p.b) for p in ranked.footing] == [("near", "far")]
    reason = unranked_reasons(targets, ranked.entries, [target_metrics(t) for t in targets], ranked.footing)["far"]
    assert "not on equal footing" in reason and "4.40 ms" in reason and "placement.region" in reason
    verdict = headline(ranked.entries, ranked.comparisons, ranked.footing)
    assert "far is not ranked" in verdict and "allow_unequal_footing" in verdict


def test_allowed_unequal_footing_ranks_them_with_the_caveat():
    targets = [target("near", tps=100.0, rtt=0.2), target("far", tps=300.0, rtt=4.4)]
    ranked = rank(targets, THROUGHPUT.model_copy(update={"allow_unequal_footing": True}))
    assert [e.target for e in ranked.entries] == ["far", "near"]
    (pair,) = ranked.comparisons
    assert pair.unequal_footing is not None and "4.40 ms" in pair.unequal_footing
    verdict = headline(ranked.entries, ranked.comparisons, ranked.footing)
    # one run per target: no winner is crowned, the order is provisional; the caveat still ends the verdict
    assert verdict.startswith("Not enough runs to decide") and "Caveat: ranked together on unequal footing" in verdict
    assert "is not ranked" not in verdict and all(p.ranked_anyway for p in ranked.footing)


def test_equal_footing_changes_nothing():
    targets = [target("a", tps=100.0, rtt=0.2), target("b", tps=300.0, rtt=0.5)]
    ranked = rank(targets, THROUGHPUT)
    assert [e.target for e in ranked.entries] == ["b", "a"] and ranked.footing == []
    assert "Caveat" not in headline(ranked.entries, ranked.comparisons, ranked.footing)


def test_describe_shows_site_round_trip_and_size():
    assert describe(target("a", rtt=0.123)) == "local · 0.12 ms · 2 vCPU, 4.0 GiB, Intel Xeon"


def test_describe_says_nothing_for_a_target_no_worker_measured():
    assert describe(TargetResult(name="down", provider="p", status="failed")) == "-"


def _results(targets):
    ranked = rank(targets, THROUGHPUT)
    return CampaignResults(
        campaign_id="c",
        campaign="c",
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        targets=targets,
        ranking=ranked.entries,
        comparisons=ranked.comparisons,
        footing=ranked.footing,
    )


def test_the_cli_and_the_report_show_site_rtt_and_workers_beside_each_target():
    # Given a near target ranked and a far one left out for its round trip
    results = _results([target("near", rtt=0.2), target("far", tps=300.0, rtt=4.4, site_="eu-west-1")])
    # When the CLI's table and the report are built
    cells = {str(c.header): [str(cell) for cell in c.cells] for c in ranking_table(results).columns}
    report = build_report(results)
    # Then each target's footing is beside it, and the far one's row says why it is not ranked
    assert cells["site · RTT · workers"] == [
        "local · 0.20 ms · 2 vCPU, 4.0 GiB, Intel Xeon",
        "eu-west-1 · 4.40 ms · 2 vCPU, 4.0 GiB, Intel Xeon",
    ]
    assert "not on equal footing" in cells["error"][1]
    rows = {r.target: r for r in report.rows}
    assert rows["far"].footing.startswith("eu-west-1 · 4.40 ms") and "not on equal footing" in rows["far"].reason
    assert "far is not ranked" in report.verdict and "lack of a comparable complete run" not in report.verdict
