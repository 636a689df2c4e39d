"""Sharding: a run's clients split across workers that start together. Pure functions."""

from __future__ import annotations

from pgarena.model.plan import Step, StepGroup
from pgarena.tools.workloads import Workload


def split_clients(clients: int, workers: int) -> list[int]:
    """Clients per worker: as even as possible, larger shards first, never an empty shard."""
    if clients < 1 or workers < 1:
        raise ValueError("clients and workers must be >= 1")
    workers = min(workers, clients)
    base, extra = divmod(clients, workers)
    return [base + 1 if i < extra else base for i in range(workers)]


def run_workers(workload: Workload, clients: int) -> int:
    """Workers asked for in the matrix for a run of `clients`, as the workload's tool counts them: a fixed
    count, or enough for a per-worker client cap."""
    return workload.workers(clients)


def workers_for(step: Step) -> int:
    """Workers asked for in the matrix for the step, from its run record: one for a load or a cleanup."""
    if step.kind != "run":
        return 1
    assert step.clients is not None
    return step.spec.workers(step.clients)


def shard(step: Step) -> StepGroup:
    """The step's shards; an unsharded step is a group of one with the step's own id."""
    counts: list[int | None] = [None]
    if step.kind == "run":
        assert step.clients is not None
        counts = list(split_clients(step.clients, workers_for(step)))
    if len(counts) == 1:
        return StepGroup(step_id=step.step_id, kind=step.kind, shards=[step])
    shards = [
        step.model_copy(
            update={
                "step_id": f"{step.step_id}/s{i}",
                "clients": n,
                "shard": i,
                "shards": len(counts),
                "group_id": step.step_id,
                # the wait at the start barrier comes before the run: a shard that never starts delays the others by it
                "timeout_s": step.timeout_s + step.shard_barrier_timeout_s,
            }
        )
        for i, n in enumerate(counts)
    ]
    return StepGroup(step_id=step.step_id, kind=step.kind, shards=shards)
