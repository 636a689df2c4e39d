"""Running one step: its tool next to the target (streamed, uploaded in chunks, watched by the server's
monitors), then its evidence, the restart check, the summary, the SLO search's probes and the
replicas' catch-up, the summary stored."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aws_lambda_powertools import Logger

from pgarena.analysis.catch_up import replication_result, run_seconds
from pgarena.analysis.slo import probe_result
from pgarena.campaign.ports import ActivityMonitor, Barrier, LagMonitor, ServerReads
from pgarena.campaign.step.evidence import Evidence
from pgarena.campaign.step.harness import CostMeter
from pgarena.campaign.step.slo import slo_search
from pgarena.campaign.step.summary import ToolExit, summarize, with_lock_waits
from pgarena.campaign.step.tool_run import ToolRun, run_tool
from pgarena.campaign.step.worker import StepWorker
from pgarena.model.errors import ErrorInfo, ErrorKind, WorkerStopped
from pgarena.model.monitor import ConnectionReport
from pgarena.model.plan import PHASE_BARRIER_TIMEOUT_S, Step
from pgarena.model.redact import Redactor
from pgarena.model.replication import ReplicaCatchUp
from pgarena.model.results import Barrier as BarrierRecord
from pgarena.model.results import StepSummary, WorkerFacts, now_iso
from pgarena.model.server_counters import CounterSnapshot, CounterSnapshots, ServerCounters, counter_deltas
from pgarena.model.slo import SloProbe
from pgarena.server.counters import COUNTERS_FILE
from pgarena.server.credentials import local_ca, resolve_password
from pgarena.server.replication import LAG_SERIES
from pgarena.server.restarts import RESTART_SUSPECTS, RESTART_WAIT_S, restart_evidence
from pgarena.tools.registry import tool_for
from pgarena.tools.runner import Measured, tool_environment

logger = Logger(service="pgarena-worker")


def run_step(step: Step, worker: StepWorker, workdir: Path, step_of_worker: int | None = None) -> StepSummary:
    """Run `step` in workdir and store its summary. `step_of_worker`: how many steps the worker has run
    with this one (its facts say so, with the worker's id)."""
    return _StepRun(step, worker, workdir).run(step_of_worker)


@dataclass(frozen=True)
class _Ran:
    """The measured tool run, and the monitors that watched it."""

    code: int
    exit: ToolExit
    monitor: ActivityMonitor | None
    lag: LagMonitor | None
    catch_ups: list[ReplicaCatchUp] | None
    counters: CounterSnapshots | None = None


class _StepRun:
    """One step's run: its parts share the step, the worker's ports, the work directory, the tool and
    the meters."""

    def __init__(self, step: Step, worker: StepWorker, workdir: Path):
        self.meter = CostMeter()
        self.evidence = Evidence(worker.store)  # the final uploads, with each file's size and sha256 for the summary
        self.step = step.model_copy(update={"endpoint": local_ca(step.endpoint)})  # the tool's libpq reads a CA file
        self.worker, self.workdir = worker, workdir
        self.tool = tool_for(step.tool)
        self.password = resolve_password(self.step.endpoint)

    def run(self, step_of_worker: int | None) -> StepSummary:
        step, store = self.step, self.worker.store
        run, raw_key = self._tool_run(step, self.workdir, step.raw_prefix)
        # argv holds no secret (the environment does); a custom script's text could, so it is masked anyway.
        logger.info("step starting", step_id=step.step_id, argv=[run.redactor(a) for a in run.argv])
        # The baseline for telling a restart: the server as this step found it (preflight's, if it is down).
        # Read before the shards' barrier, so that it delays no shard's start.
        postmaster_before = self.worker.server.postmaster_start(step.endpoint) or step.postmaster_started_at
        # The tool's own version, also where its command is the worker's interpreter (a SQL task: the TPROC-C load).
        version = self.worker.processes.version(self.tool.binary())
        facts = self._facts(version, step_of_worker)  # before the barrier too: 20 round trips
        # The window's opening edge, outside it: before the barrier, so that no shard starts later for it.
        before = _counters(step, self.worker.server)
        barrier = _barrier(step, self.worker.barriers)
        ran = self._measured_run(run, raw_key, version, before)
        raw = [self.evidence.put_file(raw_key, run.raw_path)]  # upload before parsing: the raw output is the evidence
        raw.extend(self.evidence.put_logs(step.raw_prefix, self.tool.artifacts(self.workdir)))
        connections = self._connections(ran.monitor, raw)
        server_counters = self._server_counters(ran.counters, raw)
        with self.meter.log_processing():
            measured = self.tool.measure(step, run.raw_path.read_text(errors="replace"), ran.code, self.workdir)
        measured.error = self._restarted(with_lock_waits(measured.error, connections), postmaster_before)
        self._checked(measured)
        self._series(measured, raw)
        measured.barrier = barrier
        summary = summarize(step, measured, ran.exit, raw, connections).model_copy(
            update={"worker": facts, "server_counters": server_counters}
        )
        summary = self._with_replication(summary, measured, ran)
        if step.tool_runs > 1:  # before the harness is metered: its probes are part of the step
            summary = slo_search(step, summary, self._probe)
        summary = summary.model_copy(update={"harness": self.meter.cost(), "raw_files": self.evidence.of(summary.raw)})
        store.put_json(f"{step.raw_prefix}/summary.json", summary.model_dump(mode="json"))
        store.put_summary(summary)
        logger.info("step finished", step_id=step.step_id, status=summary.status, tps=summary.tps, wall_s=summary.wall_s)
        return summary

    def _tool_run(self, step: Step, directory: Path, prefix: str) -> tuple[ToolRun, str]:
        """`step`'s command (a probe's has its rate) run in directory; its raw output's key, under prefix."""
        argv, tool_env = self.tool.command(step, self.password, directory)
        raw_path, raw_key = directory / f"{step.tool}.log", f"{prefix}/{step.tool}.log"
        return ToolRun(
            argv,
            tool_environment(tool_env),  # never the worker's own: it holds the task token and AWS credentials
            raw_path,
            self.step.tool_timeout_s,
            Redactor([self.password]),
            on_chunk=lambda: self.worker.store.put_file(raw_key, raw_path),
            upload_every_s=self.worker.upload_every_s,
        ), raw_key

    def _facts(self, version: str | None, step_of_worker: int | None) -> WorkerFacts:
        facts = self.worker.facts(self.step.endpoint, {self.step.tool: version})
        if step_of_worker is None:
            return facts
        return facts.model_copy(update={"worker_id": self.worker.worker_id, "step_of_worker": step_of_worker})

    def _measured_run(self, run: ToolRun, raw_key: str, version: str | None, before: CounterSnapshot | None) -> _Ran:
        step, server = self.step, self.worker.server
        started_at, t0 = now_iso(), time.monotonic()
        try:
            with _replication(step, server, self.workdir) as lag:
                with _monitor(step, server, self.workdir) as monitor, self.meter.load():
                    code = run_tool(self.worker.processes, run)
                # Timed from the moment the tool exits, after the activity monitor stopped (its last sample
                # would otherwise see the clients gone and call it a drop).
                catch_ups = lag.catch_up() if lag is not None else None
        except WorkerStopped:  # stopped while the tool ran: what it printed until then is the evidence
            raise WorkerStopped(raw=self.worker.store.put_file(raw_key, run.raw_path)) from None
        wall_s, finished_at = time.monotonic() - t0, now_iso()
        # The closing edge, once the tool and the monitors are done: it adds no load inside the window either.
        after = _counters(step, server, closing=True) if before is not None else None
        counters = CounterSnapshots(before=before, after=after) if before is not None and after is not None else None
        return _Ran(code, ToolExit(code, started_at, finished_at, wall_s, version), monitor, lag, catch_ups, counters)

    def _checked(self, measured: Measured) -> None:
        """The data set's conditions after a run that succeeded (the first shard's, for all: one snapshot
        holds whatever the others still finish), in the run's figures."""
        step = self.step
        checks = self.tool.checks(step) if step.kind == "run" and step.shard == 0 and measured.error is None else None
        if checks is not None:
            measured.tool_figures.consistency = self.worker.server.check(step, checks)
            logger.info("data checked", step_id=step.step_id, passed=all(c.passed for c in measured.tool_figures.consistency))

    def _connections(self, monitor: ActivityMonitor | None, raw: list[str]) -> ConnectionReport | None:
        """The monitor's report, its series uploaded (and appended to raw)."""
        if monitor is None:
            return None
        connections = monitor.report()
        if monitor.series_path.exists():  # absent when the monitor never got a connection (the server full)
            key = self.evidence.put_file(f"{self.step.raw_prefix}/monitor.jsonl", monitor.series_path, "application/x-ndjson")
            connections = connections.model_copy(update={"raw": key})
            raw.append(key)
        return connections

    def _server_counters(self, snapshots: CounterSnapshots | None, raw: list[str]) -> ServerCounters | None:
        """The window's counter deltas; the two snapshots they come from uploaded (and appended to raw)."""
        if snapshots is None:
            return None
        path = self.workdir / "upload" / COUNTERS_FILE
        path.parent.mkdir(exist_ok=True)
        path.write_text(snapshots.model_dump_json())
        key = self.evidence.put_file(f"{self.step.raw_prefix}/{COUNTERS_FILE}", path, "application/json")
        raw.append(key)
        return counter_deltas(snapshots, key)

    def _restarted(self, error: ErrorInfo | None, postmaster_before: str | None) -> ErrorInfo | None:
        """The step's error, or that the server restarted under it. A step that failed the way a restart
        makes steps fail waits a little for the server to answer again, to tell a restart (a crash, a
        failover) from an outage; any other step is checked once (sysbench reconnects, so its run can
        span a restart without failing)."""
        suspect = error is not None and error.kind in RESTART_SUSPECTS
        postmaster_after = self.worker.server.postmaster_start(self.step.endpoint, RESTART_WAIT_S if suspect else 0.0)
        restarted = restart_evidence(postmaster_before, postmaster_after, self.step.postmaster_started_at)
        if not restarted:
            return error
        said = f"; {self.step.tool} said: {error.message}" if error else ""
        return ErrorInfo(kind=ErrorKind.SERVER_RESTARTED, message=restarted + said)

    def _series(self, measured: Measured, raw: list[str]) -> None:
        """The tool's per-second series, uploaded as its own file (and appended to raw)."""
        series = measured.per_second
        if series is None:
            return
        path = self.workdir / "upload" / "series.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(series.model_dump_json())
        measured.series = self.evidence.put_file(f"{self.step.raw_prefix}/series.json", path, "application/json")
        raw.append(measured.series)

    def _with_replication(self, summary: StepSummary, measured: Measured, ran: _Ran) -> StepSummary:
        """The replicas' catch-up after the run, their lag series kept."""
        if ran.catch_ups is None or ran.lag is None:
            return summary
        lag_key = self.evidence.put_file(f"{self.step.raw_prefix}/{LAG_SERIES}", ran.lag.series_path, "application/x-ndjson")
        window_s = measured.tool_figures.window_s  # a warm-up left out: the transactions are the window's
        run_s = float(window_s) if window_s else run_seconds(self.step.spec.duration_s, measured.transactions, measured.tps)
        replication = replication_result(ran.catch_ups, measured.transactions, run_s, lag_key)
        return summary.model_copy(update={"replication": replication, "raw": [*summary.raw, lag_key]})

    def _probe(self, rate_tps: float, index: int) -> SloProbe:
        """One open-loop run of an SLO search at rate_tps (--rate): its output and log under probe-<index>/."""
        step = self.step
        slo = step.spec.slo
        assert slo is not None  # tool_runs > 1
        # The step's record with the probe's rate: the tool builds its command from the record.
        probe_step = step.model_copy(update={"spec": step.spec.model_copy(update={"rate_tps": rate_tps, "slo": None})})
        probe_dir = self.workdir / f"probe-{index}"
        probe_dir.mkdir(exist_ok=True)
        prefix = f"{step.raw_prefix}/probe-{index}"
        run, raw_key = self._tool_run(probe_step, probe_dir, prefix)
        logger.info("slo probe starting", step_id=step.step_id, probe=index, rate_tps=rate_tps)
        try:
            code = run_tool(self.worker.processes, run)
        except WorkerStopped:
            raise WorkerStopped(raw=self.worker.store.put_file(raw_key, run.raw_path)) from None
        raw = [self.evidence.put_file(raw_key, run.raw_path)]
        raw.extend(self.evidence.put_logs(prefix, self.tool.artifacts(probe_dir)))
        with self.meter.log_processing():
            measured = self.tool.measure(probe_step, run.raw_path.read_text(errors="replace"), code, probe_dir)
        return probe_result(slo, rate_tps, measured.tps, measured.latency, measured.progress, raw, measured.error)


def _barrier(step: Step, barriers: Barrier) -> BarrierRecord | None:
    """Shards of one step start their measured run together; so do the targets of a consolidation step."""
    if step.shards > 1:
        assert step.group_id is not None  # sharding sets it
        start_at, complete = barriers.wait(step.campaign_id, step.group_id, step.shard, step.shards, step.shard_barrier_timeout_s)
    elif step.phase_barrier is not None:
        together = step.phase_barrier
        start_at, complete = barriers.wait(
            step.campaign_id, together.group, together.index, together.size, PHASE_BARRIER_TIMEOUT_S
        )
    else:
        return None
    return BarrierRecord(start_epoch=start_at, all_arrived=complete, released_epoch=time.time())


def _counters(step: Step, server: ServerReads, closing: bool = False) -> CounterSnapshot | None:
    """A run's counters at one edge of its window (the first shard reads them: they are the server's)."""
    if step.kind != "run" or step.shard != 0:
        return None
    return server.counters(step, closing)


@contextmanager
def _replication(step: Step, server: ServerReads, workdir: Path) -> Iterator[LagMonitor | None]:
    """Runs on a target with replicas sample their lag and time their catch-up (the first shard does, for all)."""
    if step.kind != "run" or not step.replicas or step.shard != 0:
        yield None
        return
    with server.replication(step, workdir / LAG_SERIES) as lag:
        yield lag


@contextmanager
def _monitor(step: Step, server: ServerReads, workdir: Path) -> Iterator[ActivityMonitor | None]:
    """Runs and loads are watched by the live monitor (a load held up by a lock says so); cleanups are not."""
    if step.kind == "cleanup":
        yield None
        return
    with server.monitor(step, workdir / "monitor.jsonl") as monitor:
        yield monitor
