"""A load generator that ran out of CPU measured itself, not the database. Pure.

While the tool ran, the worker (its monitor, streaming, uploads) and the tool shared the CPUs the
worker may use (WorkerFacts.cpu_limit: the container's cgroup quota, a Fargate task's size, else its
cores). A run was paced by its client when they used SATURATED_SHARE of that or more, or when its
cgroup hit its CPU quota in SATURATED_SHARE_THROTTLED of the quota's periods or more (the kernel's own
count: it holds when a busy host gives the container less than its quota, where the CPU share cannot
tell). Its tps is then a floor of the database's, not its capacity, so the point is not ranked.
"""

from __future__ import annotations

from pgarena.model.monitor import Incident
from pgarena.model.results import HarnessCost, WorkerFacts

CLIENT_SATURATED = "client_saturated"
SATURATED_SHARE = 0.9
SATURATED_SHARE_THROTTLED = 0.5


def cpu_share(worker: WorkerFacts | None, harness: HarnessCost | None) -> float | None:
    """The share of the worker's CPUs it and its tool used while the tool ran; None when not measured."""
    if worker is None or harness is None or not worker.cpu_limit:
        return None
    if harness.load_cpu_s is None or not harness.load_wall_s:
        return None
    return harness.load_cpu_s / (harness.load_wall_s * worker.cpu_limit)


def saturation_incident(worker: WorkerFacts | None, harness: HarnessCost | None) -> Incident | None:
    """A `client_saturated` incident for a run paced by its load generator; None otherwise or unmeasured."""
    share = cpu_share(worker, harness)
    throttled = harness.throttled_share if harness is not None else None
    if (share is None or share < SATURATED_SHARE) and (throttled is None or throttled < SATURATED_SHARE_THROTTLED):
        return None
    assert harness is not None  # a share or a throttled share was measured
    used = f"used {share:.0%} of its {worker.cpu_limit:g} CPU" if share is not None and worker and worker.cpu_limit else "ran"
    hit = f"; its CPU quota throttled {throttled:.0%} of the periods" if throttled is not None else ""
    return Incident(
        kind=CLIENT_SATURATED,
        at_s=0.0,
        message=(
            f"the load generator {used} while the tool ran ({harness.load_cpu_s or 0:.1f} CPU-seconds in "
            f"{harness.load_wall_s or 0:.1f} s{hit}): it, not the database, set the pace, so this point is not ranked; "
            "split the clients over more workers (run.workers or run.max_clients_per_worker) or give workers more CPU "
            "(pgarena:workerCpu)"
        ),
    )
