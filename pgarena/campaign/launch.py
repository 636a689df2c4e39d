"""Run Worker Task: start one worker for one shard of a step; the worker answers the task token itself."""

from __future__ import annotations

from pgarena.campaign.ports import Launcher, Records
from pgarena.model.errors import ErrorKind, failure
from pgarena.model.plan import ShardRef, Step


def launch(shard: ShardRef, task_token: str, records: Records, launcher: Launcher) -> tuple[Step, str]:
    """The shard's step from preflight's answer (the state never carries it), started; (step, worker id)."""
    planned = records.preflight(shard.campaign_id, shard.phase, shard.target).steps[shard.step].shards[shard.shard]
    worker, failures = launcher.launch(planned, task_token)
    if worker is None or failures:
        # A launch failure is transient more often than not: the state machine retries LaunchFailed.
        raise failure(ErrorKind.LAUNCH_FAILED, f"ECS could not start the worker: {failures}")
    return planned, worker
