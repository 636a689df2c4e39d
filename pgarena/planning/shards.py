"""Sharding: a run's clients split across workers that start together. Pure functions."""

from __future__ import annotations

from pgarena.model.matrix import PgbenchWorkload
from pgarena.model.plan import Step, StepGroup


def split_clients(clients: int, workers: int) -> list[int]:
    """Clients per worker: as even as possible, larger shards first, never an empty shard."""
    if clients < 1 or workers < 1:
        raise ValueError("clients and workers must be >= 1")
    workers = min(workers, clients)
    base, extra = divmod(clients, workers)
    return [base + 1 if i < extra else base for i in range(workers)]


def workers_for(step: Step) -> int:
    """Workers asked for in the matrix: a fixed count, or enough for a per-worker client cap."""
    if step.kind != "run" or not isinstance(step.spec, PgbenchWorkload):
        return 1
    run = step.spec.run
    assert step.clients is not None
    if run.max_clients_per_worker:
        return max(run.workers, -(-step.clients // run.max_clients_per_worker))
    return run.workers


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
            update={"step_id": f"{step.step_id}/s{i}", "clients": n, "shard": i, "shards": len(counts), "group_id": step.step_id}
        )
        for i, n in enumerate(counts)
    ]
    return StepGroup(step_id=step.step_id, kind=step.kind, shards=shards)
