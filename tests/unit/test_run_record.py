"""A step carries its run record, resolved at planning for its tool and kind, and what the worker recorded
from it flows forward unchanged to aggregation (issue 22)."""

from pgarena.analysis.aggregate import aggregate
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.plan import Plan, Step
from pgarena.model.results import StepSummary
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.tools.registry import TOOLS
from pgarena.tools.workloads import TOOL_NAMES

ENDPOINT = {"host": "127.0.0.1", "user": "bench"}


def plan_of(*workloads: dict) -> Plan:
    campaign = {"campaign": "c", "targets": [{"name": "a", "provider": "p", "endpoint": ENDPOINT}], "workloads": list(workloads)}
    return plan_campaign(parse_campaign(campaign), "cid")


def planned(*workloads: dict) -> list[Step]:
    return plan_of(*workloads).targets[0].steps


PGBENCH = {
    "name": "w",
    "tool": "pgbench",
    "init": {"scale": 3},
    "run": {"clients": [2, 4], "duration_s": 10, "warmup_s": 2, "rate_tps": 50.0},
}


def test_a_run_step_carries_its_warmup_and_rate_as_fields_and_a_load_only_the_load():
    # Given a pgbench workload with a warm-up and a rate
    init, run, _ = planned(PGBENCH)
    # Then the run's record has them as its own fields, once: the run section the command reads keeps neither
    assert (run.spec.warmup_s, run.spec.rate_tps, run.spec.duration_s, run.spec.slo) == (2, 50.0, 10, None)
    assert run.spec.run is not None and (run.spec.run.warmup_s, run.spec.run.rate_tps) == (0, None)
    # And the load's record holds the load's parameters and nothing of the run
    assert init.spec.run is None and init.spec.init is not None and init.spec.init.scale == 3
    assert (init.spec.warmup_s, init.spec.rate_tps) == (None, None)


def test_an_slo_searchs_record_makes_its_tool_runs():
    slo = {**PGBENCH, "run": {"clients": 4, "duration_s": 10, "slo": {"p95_ms": 5, "probes": 3}}}
    _, run = planned(slo)
    assert (run.tool_runs, run.spec.slo is not None) == (4, True)


def test_a_sysbench_records_connections_are_its_tools_count():
    # Given a sysbench workload loading 3 tables on 2 threads, then running 8 threads
    sysbench = {
        "name": "s",
        "tool": "sysbench",
        "prepare": {"tables": 3, "threads": 2},
        "run": {"threads": 8, "duration_s": 5},
    }
    init, run, cleanup = planned(sysbench)
    # Then prepare holds a connection per thread plus one per table being loaded, the run one per thread
    assert (init.connections, run.connections, cleanup.connections) == (4, 8, 1)


def test_aggregation_takes_the_warmup_the_worker_recorded():
    # Given a run whose worker recorded the warm-up it left out
    plan = plan_of(PGBENCH)
    run = plan.targets[0].steps[1]
    recorded = StepSummary(
        campaign_id="cid",
        step_id=run.step_id,
        target="a",
        workload="w",
        kind="run",
        tool="pgbench",
        clients=2,
        status="succeeded",
        started_at="t0",
        finished_at="t1",
        wall_s=10.0,
        tps=40.0,
        warmup_s=3,
    )
    outcome = TargetOutcome(name="a", steps=[{"step_id": run.step_id, "status": "succeeded"}])
    # When aggregated
    results = aggregate(plan, [outcome], [recorded], "s", "f")
    # Then the result has the summary's warm-up, and the rate from the step's record
    first = results.targets[0].workloads[0]
    assert (first.warmup_s, first.rate_tps) == (3, 50.0)
    # And a run that left no summary has its record's warm-up
    assert results.targets[0].workloads[1].warmup_s == 2


def test_every_tool_the_schemas_name_has_its_tool():
    assert tuple(TOOLS) == TOOL_NAMES
