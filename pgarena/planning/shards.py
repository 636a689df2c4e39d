"""Sharding: a run's clients split across workers that start together. Pure functions."""

from __future__ import annotations

from pydantic import BaseModel, Field

from pgarena.model.plan import Step, StepRef
from pgarena.model.results import ServerInfo


class StepGroup(BaseModel):
    """One logical step as the state machine runs it: its shards run at the same time."""

    step_id: str
    kind: str
    shards: list[Step] = Field(min_length=1)


class PreflightResult(BaseModel):
    """What preflight found and what the target runs: kept in the bucket (layout.preflight_key), never in
    the execution's state, which carries its `ref` only."""

    server: ServerInfo
    steps: list[StepGroup] = Field(description="the steps to run, in order, each split into its shards")

    def step_refs(self) -> list[StepRef]:
        """The items of Run Steps In Order: indices and the two timers its Task state reads from the state."""
        return [
            StepRef(
                index=i,
                last_shard=len(group.shards) - 1,
                timeout_s=group.shards[0].timeout_s,
                heartbeat_timeout_s=group.shards[0].heartbeat_timeout_s,
            )
            for i, group in enumerate(self.steps)
        ]


def split_clients(clients: int, workers: int) -> list[int]:
    """Clients per worker: as even as possible, larger shards first, never an empty shard."""
    if clients < 1 or workers < 1:
        raise ValueError("clients and workers must be >= 1")
    workers = min(workers, clients)
    base, extra = divmod(clients, workers)
    return [base + 1 if i < extra else base for i in range(workers)]


def workers_for(step: Step) -> int:
    """Workers asked for in the matrix (by the step's tool): a fixed count, or enough for a per-worker client cap."""
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
            update={"step_id": f"{step.step_id}/s{i}", "clients": n, "shard": i, "shards": len(counts), "group_id": step.step_id}
        )
        for i, n in enumerate(counts)
    ]
    return StepGroup(step_id=step.step_id, kind=step.kind, shards=shards)
