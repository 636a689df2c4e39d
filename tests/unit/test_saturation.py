"""Client saturation: a load generator that ran out of CPU is flagged and its point is not ranked."""

from pgarena.analysis.metrics import point_metrics
from pgarena.analysis.saturation import CLIENT_SATURATED, saturation_incident
from pgarena.campaign.step.harness import cpu_periods, throttled_share
from pgarena.model.monitor import Incident
from pgarena.model.results import HarnessCost, WorkerFacts, WorkloadResult
from pgarena.worker.facts import cpu_limit, memory_bytes


def harness(load_cpu_s: float, load_wall_s: float = 10.0, throttled: float | None = None) -> HarnessCost:
    return HarnessCost(
        wall_s=12.0, cpu_s=1.0, tool_cpu_s=5.0, log_processing_s=0.1, load_wall_s=load_wall_s, load_cpu_s=load_cpu_s,
        throttled_share=throttled,
    )  # fmt: skip


def test_the_cgroup_quota_is_the_workers_cpu_else_its_cores():
    assert cpu_limit("25000 100000\n", 2) == 0.25  # a 0.25-vCPU Fargate task
    assert cpu_limit("max 100000\n", 2) == 2.0  # no quota: the CPUs it may run on
    assert cpu_limit(None, 4) == 4.0 and cpu_limit(None, None) is None
    assert cpu_limit("-1 100000", 2) == 2.0  # cgroup v1's quota files joined: -1 is no quota


def test_a_cgroup_v1_memory_limit_of_no_limit_is_the_machines_memory():
    meminfo = "MemTotal:       16318912 kB\n"
    assert memory_bytes(meminfo, "9223372036854771712\n") == 16318912 * 1024
    assert memory_bytes(meminfo, "536870912\n") == 536870912


def test_throttled_periods_are_counted_between_two_readings():
    before = cpu_periods("usage_usec 10\nnr_periods 100\nnr_throttled 10\nthrottled_usec 5\n")
    after = cpu_periods("usage_usec 90\nnr_periods 140\nnr_throttled 46\nthrottled_usec 9\n")
    assert (before, after) == ((100, 10), (140, 46))
    assert throttled_share(before, after) == 0.9
    assert cpu_periods("usage_usec 10\n") is None and throttled_share(None, after) is None  # no quota
    assert throttled_share(after, after) is None  # no period in between


def test_a_worker_that_used_nine_tenths_of_its_cpu_is_saturated():
    # Given a 0.25-vCPU worker that used 2.4 CPU-seconds in a 10 s run (96%)
    worker = WorkerFacts(cpu_count=2, cpu_limit=0.25)
    incident = saturation_incident(worker, harness(2.4))
    # Then it is flagged, with the figures and what to do
    assert incident is not None and incident.kind == CLIENT_SATURATED
    assert "96% of its 0.25 CPU" in incident.message and "2.4 CPU-seconds in 10.0 s" in incident.message
    assert "max_clients_per_worker" in incident.message and "pgarena:workerCpu" in incident.message
    # and one with room to spare is not
    assert saturation_incident(WorkerFacts(cpu_count=2, cpu_limit=2.0), harness(5.0)) is None  # 25%


def test_a_worker_its_quota_throttled_is_saturated_though_a_busy_host_kept_its_share_low():
    # Given a quota hit in 70% of the periods while the host gave the worker only 60% of its quota
    worker = WorkerFacts(cpu_limit=0.25)
    incident = saturation_incident(worker, harness(1.5, throttled=0.7))
    assert incident is not None and "throttled 70% of the periods" in incident.message
    assert saturation_incident(worker, harness(1.5, throttled=0.1)) is None


def test_an_unmeasured_worker_is_never_flagged():
    assert saturation_incident(None, harness(9.0)) is None
    assert saturation_incident(WorkerFacts(cpu_limit=1.0), None) is None
    unmeasured = HarnessCost(wall_s=1, cpu_s=1, tool_cpu_s=1, log_processing_s=0)  # a summary from before the meter
    assert saturation_incident(WorkerFacts(cpu_limit=1.0), unmeasured) is None


def test_a_saturated_run_leaves_its_point_out_of_the_ranking():
    run = WorkloadResult(
        name="sel", tool="pgbench", clients=4, repetition=1, status="succeeded", tps=900.0, transactions=9000,
        incidents=[Incident(kind=CLIENT_SATURATED, at_s=0.0, message="ran out of CPU")],
    )  # fmt: skip
    point = point_metrics("pg", "sel", 4, [run])
    assert point.client_saturated and not point.complete
    fine = point_metrics("pg", "sel", 4, [run.model_copy(update={"incidents": []})])
    assert not fine.client_saturated and fine.complete
