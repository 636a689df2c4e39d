"""The worker: runs one step's benchmark tool next to the target and reports to the state machine.

The Fargate container's entrypoint and the local runtime's worker processes both run `main()`. The
step's life is the use case's (pgarena.campaign.step); here are its adapters' wiring from the
environment, and the worker's signals: SIGTERM, its own stop, the hard stop's exit.
"""

from __future__ import annotations

import os
import signal
import sys
from functools import partial
from types import FrameType
from typing import TYPE_CHECKING

import boto3
from aws_lambda_powertools import Logger

from pgarena.aws.barrier import DynamoBarrier
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.leases import LeaseStore
from pgarena.aws.settings import WorkerEnv
from pgarena.aws.store import ResultStore
from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.campaign.step.serve import serve_preflight, serve_step
from pgarena.campaign.step.slot import Preflight, Seat, serve_slot
from pgarena.campaign.step.worker import HEARTBEAT_S, UPLOAD_EVERY_S, StepWorker
from pgarena.model.errors import WorkerStopped
from pgarena.model.plan import PreflightTask, Step, is_preflight
from pgarena.model.warm import Assignment, WorkerSlot
from pgarena.worker.facts import worker_facts, worker_identity
from pgarena.worker.processes import Subprocesses
from pgarena.worker.server_reads import PostgresReads
from pgarena.worker.task_token import SfnTaskToken

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

logger = Logger(service="pgarena-worker")

# The exit code of a worker ended by its hard stop (timeout(1)'s).
HARD_STOP_EXIT_CODE = 124


def stop_self() -> None:
    """The state machine gave the step up: the SIGTERM path kills the tool and records the step stopped."""
    os.kill(os.getpid(), signal.SIGTERM)


def exit_now() -> None:
    sys.stdout.flush()
    os._exit(HARD_STOP_EXIT_CODE)


def _stop_on_sigterm() -> None:
    """ECS StopTask (and the local runtime's) sends SIGTERM, then SIGKILL 30 s later: turn the first into a
    recorded failure (the tool killed, its output kept), told to the state machine at once rather than
    by a missed heartbeat; ignore any further SIGTERM meanwhile."""

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise WorkerStopped()

    signal.signal(signal.SIGTERM, stop)


def step_worker(store: ResultStore, sfn: SFNClient, worker_id: str = "", env: WorkerEnv | None = None) -> StepWorker:
    """The step use case's ports: the results bucket and table, Step Functions, subprocess and pg8000."""
    return StepWorker(
        store=store,
        barriers=DynamoBarrier(store.dynamodb, store.table),
        processes=Subprocesses(),
        server=PostgresReads(),
        facts=worker_facts,
        token=partial(SfnTaskToken, sfn),
        stop=stop_self,
        exit_now=exit_now,
        worker_id=worker_id,
        heartbeat_s=env.heartbeat_s if env else HEARTBEAT_S,
        upload_every_s=env.upload_every_s if env else UPLOAD_EVERY_S,
        records=CampaignState(store),
        leases=LeaseStore(store.dynamodb, store.table),
    )


def main() -> int:
    """Run the step the worker was started with (or its target's preflight); a warm worker (given its slot)
    then runs the phase's next steps on that slot as the launch function hands them over, until the slot's
    last or an idle time-out."""
    env = WorkerEnv.from_env()
    _stop_on_sigterm()
    # In another region's worker site the task's own region is not the results': name it for every client.
    region = env.results_region
    sfn = boto3.client("stepfunctions", region_name=region)
    store = ResultStore(
        env.results_bucket,
        env.results_table,
        s3=boto3.client("s3", region_name=region),
        dynamodb=boto3.client("dynamodb", region_name=region),
    )
    worker = step_worker(store, sfn, worker_identity(), env)
    first: Assignment | Preflight
    if is_preflight(env.step):
        first = partial(serve_preflight, PreflightTask.model_validate_json(env.step), env.task_token, worker)
    else:
        first = Assignment(step=Step.model_validate_json(env.step), task_token=env.task_token, last=env.last_step)
    if env.slot is None:  # started for one step
        return _serve_alone(first, worker)
    slot = WorkerSlot.model_validate_json(env.slot)
    slots = DynamoWorkerSlots(store.dynamodb, store.table)
    try:
        registered = slots.register(slot, worker.worker_id)
    except Exception as error:  # the slot is an optimisation: the step this worker was started with is still its own
        logger.warning("slot not registered: serving the first step alone", slot=slot.name, error=str(error))
        return _serve_alone(first, worker)
    if not registered:  # the target's phase or the campaign ended before this worker started
        logger.info("slot closed before the worker started: its step was given up", slot=slot.name, worker=worker.worker_id)
        return 0
    return serve_slot(
        first, Seat(slot, slots, worker.worker_id, exit_now), lambda step, n, renew: serve_step(step, worker, n, renew)
    )


def _serve_alone(first: Assignment | Preflight, worker: StepWorker) -> int:
    """The step (or preflight) the worker was started with, answered, and no other."""
    error = first(lambda: None) if callable(first) else serve_step(first, worker, 1)
    return 0 if error is None else 1
