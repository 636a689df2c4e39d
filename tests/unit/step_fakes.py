"""In-memory fakes of the step use case's ports (pgarena.campaign.ports): no moto, no boto3, no tool
process, no server. A fake tool prints canned lines; its stop and kill are recorded."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgarena.campaign.ports import SlotState
from pgarena.campaign.step.worker import StepWorker
from pgarena.model.errors import WorkerStopped
from pgarena.model.matrix import Endpoint
from pgarena.model.monitor import ConnectionReport
from pgarena.model.plan import Step
from pgarena.model.results import StepSummary, WorkerFacts
from pgarena.model.server_counters import CheckpointCounters, CounterSnapshot, DatabaseCounters
from pgarena.model.warm import ASSIGNED, BUSY, IDLE, Assignment, WorkerSlot
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign

# Long enough for any loaded machine: a fake tool waiting to be stopped fails the test past it.
STOP_DEADLINE_S = 60.0


class FakeStore:
    def __init__(self) -> None:
        self.files: dict[str, str] = {}  # key -> the file's text when it was put (the last put wins)
        self.puts: list[str] = []
        self.documents: dict[str, dict[str, Any]] = {}
        self.stored: list[StepSummary] = []

    def put_file(self, key: str, path: Path, content_type: str = "text/plain") -> str:
        self.files[key] = path.read_bytes().decode(errors="replace")
        self.puts.append(key)
        return key

    def put_bytes(self, key: str, data: bytes, content_type: str) -> str:
        self.files[key] = data.decode(errors="replace")
        return key

    def put_json(self, key: str, data: dict[str, Any]) -> str:
        self.documents[key] = data
        return key

    def get_json(self, key: str) -> dict[str, Any]:
        return self.documents[key]

    def keys(self, prefix: str) -> list[str]:
        return sorted(k for k in [*self.files, *self.documents] if k.startswith(prefix))

    def url(self, key: str) -> str:
        return f"memory://{key}"

    def put_summary(self, summary: StepSummary) -> None:
        self.stored.append(summary)

    def summaries(self, campaign_id: str) -> list[StepSummary]:
        return [s for s in self.stored if s.campaign_id == campaign_id]

    def campaign_traces(self, campaign_id: str) -> list[str]:
        return []


class FakeBarrier:
    def wait(self, campaign_id: str, group_id: str, shard: int, shards: int, timeout_s: float) -> tuple[float, bool]:
        return time.time(), True


@dataclass
class FakeTool:
    """A tool process printing `lines`, then exiting with `exit_code`. After `stop_after` lines it is
    stopped as SIGTERM stops the worker (WorkerStopped raised where the worker reads it); `wait_for_stop`
    makes it wait there until `interrupt()` (the worker's stop) instead of at once."""

    lines_out: list[str]
    exit_code: int = 0
    stop_after: int | None = None
    wait_for_stop: bool = False
    killed: bool = False
    interrupted: threading.Event = field(default_factory=threading.Event)

    def lines(self) -> Iterator[str]:
        for n, line in enumerate(self.lines_out):
            if n == self.stop_after:
                if self.wait_for_stop and not self.interrupted.wait(STOP_DEADLINE_S):
                    raise AssertionError("the worker was never stopped")
                raise WorkerStopped()
            yield line

    def wait(self) -> int:
        return self.exit_code

    def kill(self) -> None:
        self.killed = True

    def interrupt(self) -> None:
        self.interrupted.set()


class FakeProcesses:
    def __init__(self, *tools: FakeTool):
        self.tools = list(tools)
        self.started: list[tuple[list[str], dict[str, str]]] = []

    @contextmanager
    def start(self, argv: list[str], env: dict[str, str]) -> Iterator[FakeTool]:
        self.started.append((argv, env))
        yield self.tools.pop(0)

    def version(self, binary: str) -> str | None:
        return f"{Path(binary).name} (fake) 1.0"


class FakeMonitor:
    def __init__(self, series_path: Path):
        self.series_path = series_path  # never written: the server was not reached

    def report(self) -> ConnectionReport:
        return ConnectionReport(
            interval_s=1.0, samples=3, peak_benchmark=4, peak_total=5, peak_by_state={"active": 4}, longest_s_by_state={}
        )


class FakeServer:
    """A server that never restarted (the same postmaster start before and after)."""

    def __init__(self) -> None:
        self.reads: list[float] = []
        self.counter_reads: list[bool] = []  # closing, per read

    def postmaster_start(self, endpoint: Endpoint, wait_s: float = 0.0) -> str | None:
        self.reads.append(wait_s)
        return "2026-11-27 10:00:00+00"

    def counters(self, step: Step, closing: bool = False) -> CounterSnapshot | None:
        """Counters that grew by one requested checkpoint and 100 commits over the window."""
        self.counter_reads.append(closing)
        n = len(self.counter_reads)
        return CounterSnapshot(
            taken_at=f"2026-11-27T10:00:0{n}+00:00",
            epoch=1_800_000_000.0 + n,
            server_version_num=180006,
            database=DatabaseCounters(xact_commit=100 * n, blks_hit=1000 * n, blks_read=0),
            checkpoints=CheckpointCounters(checkpoints_req=n, checkpoints_timed=5),
            unreadable={"io": "permission denied for view pg_stat_io"},
        )

    def monitor(self, step: Step, series_path: Path) -> nullcontext[FakeMonitor]:
        return nullcontext(FakeMonitor(series_path))

    def replication(self, step: Step, series_path: Path) -> Any:
        raise AssertionError("no replicas in these steps")

    def check(self, step: Step, checks: Any) -> list[Any]:
        raise AssertionError("no data checks in these steps")


class FakeToken:
    def __init__(self, gone: bool = False):
        self.gone = gone
        self.beats = 0
        self.succeeded: list[str] = []
        self.failed: list[tuple[str, str]] = []

    def beat(self) -> bool:
        self.beats += 1
        return not self.gone

    def succeed(self, output: str) -> None:
        self.succeeded.append(output)

    def fail(self, error: str, cause: str) -> None:
        self.failed.append((error, cause))


class FakeSlots:
    """One slot's record in memory, with the calls made on it."""

    def __init__(self, worker: str):
        self.state = SlotState(state=BUSY, worker=worker, seq=0)
        self.calls: list[str] = []

    def read(self, slot: WorkerSlot) -> SlotState | None:
        self.calls.append("read")
        return self.state

    def finishing(self, slot: WorkerSlot, worker: str) -> None:
        self.calls.append("finishing")

    def idle(self, slot: WorkerSlot, worker: str) -> bool:
        self.calls.append("idle")
        if self.state.worker != worker:
            return False
        self.state = SlotState(state=IDLE, worker=worker, seq=self.state.seq)
        return True

    def beat(self, slot: WorkerSlot, worker: str) -> None:
        self.calls.append("beat")

    def claim(self, slot: WorkerSlot, worker: str, seq: int) -> bool:
        self.calls.append("claim")
        return self.state.worker == worker and self.state.state == ASSIGNED and self.state.seq == seq

    def leave(self, slot: WorkerSlot, worker: str, why: str) -> bool:
        self.calls.append(f"leave {why}")
        return self.state.worker == worker

    def register(self, slot: WorkerSlot, worker: str) -> bool:
        self.state = SlotState(state=BUSY, worker=worker, seq=self.state.seq)
        return True

    def replace(self, worker: str, offered: Assignment) -> None:
        """Another worker took the slot (the first taken for lost) and was offered the next step."""
        self.state = SlotState(state=ASSIGNED, worker=worker, seq=self.state.seq + 1, assignment=offered)


@dataclass
class Fakes:
    store: FakeStore = field(default_factory=FakeStore)
    server: FakeServer = field(default_factory=FakeServer)
    tokens: dict[str, FakeToken] = field(default_factory=dict)
    hard_stops: list[str] = field(default_factory=list)
    stops: list[str] = field(default_factory=list)

    def worker(self, processes: FakeProcesses, stop: Any = None) -> StepWorker:
        def stopped() -> None:
            self.stops.append("stop")
            if stop is not None:
                stop()

        return StepWorker(
            store=self.store,
            barriers=FakeBarrier(),
            processes=processes,
            server=self.server,
            facts=lambda endpoint, versions: WorkerFacts(cpu_model="fake cpu", tools={k: v for k, v in versions.items() if v}),
            token=lambda token: self.tokens.setdefault(token, FakeToken()),
            stop=stopped,
            exit_now=lambda: self.hard_stops.append("fired"),
            worker_id="w1",
            heartbeat_s=0.05,
            upload_every_s=3600.0,
        )


FIXTURES = Path(__file__).parents[1] / "fixtures"


def canned(name: str) -> list[str]:
    """A real pgbench's output, line by line, as the fake tool prints it."""
    return (FIXTURES / "pgbench" / name).read_text().splitlines(keepends=True)


def a_run_step() -> Step:
    """The first run step of the minimal matrix's target a (pgbench, 4 clients, 10 s; its password from
    PGARENA_PW_A)."""
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    steps = plan_campaign(parse_campaign(data), "cid").targets[0].steps
    return next(step for step in steps if step.kind == "run")
