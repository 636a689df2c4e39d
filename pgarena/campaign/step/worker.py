"""What a worker works through while it takes steps: its ports, who it is, and its pace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pgarena.campaign.leases import Leases
from pgarena.campaign.ports import Barrier, Records, ServerReads, Store, TaskToken, ToolProcesses
from pgarena.model.matrix import Endpoint
from pgarena.model.results import WorkerFacts

# Raw output is uploaded this often while the tool runs, so a killed worker leaves what it had.
UPLOAD_EVERY_S = 15.0
# Heartbeats' pace when none is configured (WorkerEnv's PGARENA_HEARTBEAT_S).
HEARTBEAT_S = 10.0


@dataclass(frozen=True)
class StepWorker:
    """A worker as the step use case sees it (pgarena.worker.run.step_worker builds it on AWS, subprocess
    and pg8000; tests on in-memory fakes)."""

    store: Store
    barriers: Barrier
    processes: ToolProcesses
    server: ServerReads
    # The machine, its tools' versions and its round trips to the target (pgarena.worker.facts).
    facts: Callable[[Endpoint, dict[str, str | None]], WorkerFacts]
    token: Callable[[str], TaskToken]  # the task a token names
    stop: Callable[[], None]  # stops the worker as a SIGTERM does: the state machine gave its step up
    exit_now: Callable[[], None]  # ends the process at once: the hard stop
    worker_id: str = ""
    heartbeat_s: float = HEARTBEAT_S
    upload_every_s: float = UPLOAD_EVERY_S
    # A target's preflight run here, on its site, reads the campaign's records and leases the server.
    records: Records | None = None
    leases: Leases | None = None
