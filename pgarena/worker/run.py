"""The worker: runs one step's benchmark tool next to the target and reports to the state machine.

The Fargate container's entrypoint and the local runtime's worker processes both run `main()`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import boto3
from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from pgarena.analysis.catch_up import replication_result, run_seconds
from pgarena.analysis.slo import probe_result, search
from pgarena.aws.barrier import DynamoBarrier
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.leases import LeaseStore
from pgarena.aws.settings import WorkerEnv
from pgarena.aws.store import ResultStore
from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.campaign.ports import Barrier as StartBarrier
from pgarena.campaign.ports import Store, WorkerSlots
from pgarena.campaign.preflight import preflight
from pgarena.model.errors import KILLED, ErrorInfo, ErrorKind, WorkerStopped, error_info, error_name
from pgarena.model.monitor import ConnectionReport
from pgarena.model.plan import PHASE_BARRIER_TIMEOUT_S, WORKER_HARD_STOP_GRACE_S, PreflightTask, Step, is_preflight
from pgarena.model.redact import Redactor
from pgarena.model.results import Barrier, PreflightOrigin, StepSummary, WorkerFacts, now_iso
from pgarena.model.slo import SloProbe
from pgarena.model.warm import (
    ASSIGNED,
    CLOSED,
    IDLE_TIMEOUT_S,
    LEFT_CLOSED,
    LEFT_IDLE_TIMEOUT,
    LEFT_LAST_STEP,
    LEFT_PREFLIGHT_FAILED,
    LEFT_STOPPED,
    SLOT_BEAT_S,
    Assignment,
    WorkerSlot,
    slot_poll_s,
)
from pgarena.server.credentials import local_ca, resolve_password
from pgarena.server.monitor import Monitor
from pgarena.server.replication import LAG_SERIES, ReplicationMonitor
from pgarena.server.restarts import RESTART_SUSPECTS, RESTART_WAIT_S, read_postmaster_start, restart_evidence
from pgarena.tools.processes import die_with_parent
from pgarena.tools.registry import tool_for
from pgarena.tools.runner import Measured, tool_environment
from pgarena.worker.evidence import Evidence
from pgarena.worker.facts import worker_facts, worker_identity
from pgarena.worker.harness import CostMeter

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

logger = Logger(service="pgarena-worker")

# The exit code of a worker ended by its hard stop (timeout(1)'s).
HARD_STOP_EXIT_CODE = 124

# Raw output is uploaded this often while the tool runs, so a killed worker leaves what it had.
UPLOAD_EVERY_S = 15.0


def tool_version(binary: str) -> str | None:
    try:
        return (
            subprocess.run(
                [binary, "--version"], capture_output=True, text=True, timeout=10, env=tool_environment({})
            ).stdout.strip()
            or None
        )
    except OSError:
        return None


def run_tool(  # noqa: PLR0913  # the tool's process and how its output is streamed
    argv: list[str],
    env: dict[str, str],
    raw_path: Path,
    timeout_s: float,
    on_chunk: Callable[[], object] | None = None,
    redactor: Callable[[str], str] = Redactor(),
    upload_every_s: float = UPLOAD_EVERY_S,
) -> int:
    """Run the tool with stdout and stderr merged into raw_path (secrets masked), echoing lines as they come.

    Anything raised while it runs (the worker stopped by SIGTERM) kills the tool first: no orphan keeps
    loading the target after its worker is gone."""
    last_upload = time.monotonic()
    deadline = time.monotonic() + timeout_s
    with (
        raw_path.open("w") as raw,
        # The tool dies with the worker, even a SIGKILLed one (this thread waits on it: it outlives the tool).
        subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
            bufsize=1,
            preexec_fn=die_with_parent(signal.SIGKILL),
        ) as proc,
    ):
        killer = threading.Timer(timeout_s, proc.kill)
        killer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = redactor(line)
                raw.write(line)
                raw.flush()
                print(line, end="", flush=True)
                if on_chunk and time.monotonic() - last_upload > upload_every_s:
                    _upload_chunk(on_chunk)
                    last_upload = time.monotonic()
            code = proc.wait()
        except BaseException:
            proc.kill()
            raise
        finally:
            killer.cancel()
    if time.monotonic() > deadline:
        return KILLED
    return code


def _upload_chunk(on_chunk: Callable[[], object]) -> None:
    try:
        on_chunk()
    except Exception as error:  # a missed chunk is not fatal: the next one, or the final upload, carries it
        logger.warning("raw output chunk not uploaded", error=str(error))


def summarize(  # noqa: PLR0913  # each field of a step's summary
    step: Step,
    measured: Measured,
    exit_code: int | None,
    started_at: str,
    finished_at: str,
    wall_s: float,
    raw: list[str],
    version: str | None,
    connections: ConnectionReport | None = None,
) -> StepSummary:
    """What the step measured: every figure is one the tool printed or logged in the raw output."""
    error = measured.error
    if error is not None and raw:
        error = error.model_copy(update={"raw": raw[0]})
    return StepSummary(
        campaign_id=step.campaign_id,
        step_id=step.step_id,
        target=step.target,
        workload=step.workload,
        kind=step.kind,
        tool=step.tool,
        repetition=step.repetition,
        clients=step.clients,
        requested_clients=step.requested_clients,
        status="failed" if error else "succeeded",
        started_at=started_at,
        finished_at=finished_at,
        wall_s=round(wall_s, 3),
        exit_code=exit_code,
        tool_version=version,
        tps=measured.tps,
        tps_including_connections=measured.tps_including_connections,
        latency_ms=measured.latency,
        transactions=measured.transactions,
        failed_transactions=measured.failed_transactions,
        progress=measured.progress,
        warmup_s=step.spec.warmup_s,
        load_s=measured.load_s,
        load_phases_s=measured.load_phases_s,
        latency_histogram=measured.histogram,
        series=measured.series,
        barrier=measured.barrier,
        tool_figures=measured.tool_figures,
        connections=connections,
        raw=raw,
        error=error,
    )


def with_lock_waits(error: ErrorInfo | None, connections: ConnectionReport | None) -> ErrorInfo | None:
    """A timed-out step says what its sessions were waiting on, when the monitor saw them wait on a lock."""
    if error is None or error.kind != ErrorKind.TIMEOUT or connections is None or not connections.lock_waits:
        return error
    waits = "; ".join(wait.describe() for wait in connections.lock_waits)
    return error.model_copy(update={"message": f"{error.message}; the monitor last saw {waits}"})


def run_step(  # noqa: PLR0913, PLR0915  # a step's whole life: start, stream, probes, upload; who ran it
    step: Step,
    store: Store,
    barriers: StartBarrier,
    workdir: Path,
    upload_every_s: float = UPLOAD_EVERY_S,
    served: tuple[str, int] | None = None,
) -> StepSummary:
    """`served`: the worker's identity and how many steps it has run with this one (its facts say so)."""
    meter = CostMeter()
    evidence = Evidence(store)  # the final uploads, with each file's size and sha256 for the summary
    step = step.model_copy(update={"endpoint": local_ca(step.endpoint)})  # the tool's libpq reads a CA file
    tool = tool_for(step.tool)
    password = resolve_password(step.endpoint)
    redactor = Redactor([password])
    argv, tool_env = tool.command(step, password, workdir)
    env = tool_environment(tool_env)  # never the worker's own: it holds the task token and AWS credentials
    raw_path = workdir / f"{step.tool}.log"
    raw_key = f"{step.raw_prefix}/{step.tool}.log"
    # argv holds no secret (the environment does); a custom script's text could, so it is masked anyway.
    logger.info("step starting", step_id=step.step_id, argv=[redactor(a) for a in argv])
    # The baseline for telling a restart: the server as this step found it (preflight's, if it is down).
    # Read before the shards' barrier, so that it delays no shard's start.
    postmaster_before = read_postmaster_start(step.endpoint) or step.postmaster_started_at
    version = tool_version(argv[0])
    facts = worker_facts(step.endpoint, {step.tool: version})  # before the barrier too: 20 round trips
    if served is not None:
        facts = facts.model_copy(update={"worker_id": served[0], "step_of_worker": served[1]})
    barrier = _barrier(step, barriers)
    started_at, t0 = now_iso(), time.monotonic()
    try:
        with _replication(step, workdir) as lag:
            with _monitor(step, workdir) as monitor, meter.load():
                exit_code = run_tool(
                    argv,
                    env,
                    raw_path,
                    step.tool_timeout_s,
                    on_chunk=lambda: store.put_file(raw_key, raw_path),
                    redactor=redactor,
                    upload_every_s=upload_every_s,
                )
            # Timed from the moment the tool exits, after the activity monitor stopped (its last sample
            # would otherwise see the clients gone and call it a drop).
            catch_ups = lag.catch_up() if lag is not None else None
    except WorkerStopped:  # stopped while the tool ran: what it printed until then is the evidence
        raise WorkerStopped(raw=store.put_file(raw_key, raw_path)) from None
    wall_s, finished_at = time.monotonic() - t0, now_iso()
    raw = [evidence.put_file(raw_key, raw_path)]  # upload before parsing: the raw output is the evidence
    raw.extend(evidence.put_logs(step.raw_prefix, tool.artifacts(workdir)))
    connections = None
    if monitor is not None:
        connections = monitor.report()
        if monitor.series_path.exists():  # absent when the monitor never got a connection (the server full)
            series_key = evidence.put_file(f"{step.raw_prefix}/monitor.jsonl", monitor.series_path, "application/x-ndjson")
            connections = connections.model_copy(update={"raw": series_key})
            raw.append(series_key)
    with meter.log_processing():
        measured = tool.measure(step, raw_path.read_text(errors="replace"), exit_code, workdir)
    measured.error = with_lock_waits(measured.error, connections)
    # A step that failed the way a restart makes steps fail waits a little for the server to answer
    # again, to tell a restart (a crash, a failover) from an outage; any other step is checked once
    # (sysbench reconnects, so its run can span a restart without failing).
    suspect = measured.error is not None and measured.error.kind in RESTART_SUSPECTS
    postmaster_after = read_postmaster_start(step.endpoint, RESTART_WAIT_S if suspect else 0.0)
    restarted = restart_evidence(postmaster_before, postmaster_after, step.postmaster_started_at)
    if restarted:
        said = f"; {step.tool} said: {measured.error.message}" if measured.error else ""
        measured.error = ErrorInfo(kind=ErrorKind.SERVER_RESTARTED, message=restarted + said)
    series = measured.per_second
    if series is not None:
        series_path = workdir / "upload" / "series.json"
        series_path.parent.mkdir(exist_ok=True)
        series_path.write_text(series.model_dump_json())
        measured.series = evidence.put_file(f"{step.raw_prefix}/series.json", series_path, "application/json")
        raw.append(measured.series)
    measured.barrier = barrier
    summary = summarize(step, measured, exit_code, started_at, finished_at, wall_s, raw, version, connections)
    summary = summary.model_copy(update={"worker": facts})
    if catch_ups is not None and lag is not None:
        lag_key = evidence.put_file(f"{step.raw_prefix}/{LAG_SERIES}", lag.series_path, "application/x-ndjson")
        window_s = measured.tool_figures.window_s  # a warm-up left out: the transactions are the window's
        run_s = float(window_s) if window_s else run_seconds(step.spec.duration_s, measured.transactions, measured.tps)
        summary = summary.model_copy(
            update={
                "replication": replication_result(catch_ups, measured.transactions, run_s, lag_key),
                "raw": [*summary.raw, lag_key],
            }
        )
    if step.tool_runs > 1:  # before the harness is metered: its probes are part of the step
        summary = _slo_search(
            step, summary, lambda rate, n: _probe(step, rate, n, evidence, workdir, password, upload_every_s, meter)
        )
    summary = summary.model_copy(update={"harness": meter.cost(), "raw_files": evidence.of(summary.raw)})
    store.put_json(f"{step.raw_prefix}/summary.json", summary.model_dump(mode="json"))
    store.put_summary(summary)
    logger.info("step finished", step_id=step.step_id, status=summary.status, tps=summary.tps, wall_s=summary.wall_s)
    return summary


def _slo_search(step: Step, ceiling: StepSummary, run_probe: Callable[[float, int], SloProbe]) -> StepSummary:
    """The step's SLO search (pgarena.analysis.slo): the step's own run is its closed-loop ceiling, then
    the probes run one after the other in this worker (heartbeats go on), each kept under probe-<n>/."""
    slo = step.spec.slo
    assert slo is not None  # tool_runs > 1
    ceiling_point = probe_result(slo, None, ceiling.tps, ceiling.latency_ms, ceiling.progress, ceiling.raw, ceiling.error)
    count = iter(range(1, slo.probes + 1))
    found = search(slo, ceiling_point, lambda rate: run_probe(rate, next(count)))
    logger.info("slo search finished", step_id=step.step_id, slo_tps=found.slo_tps, probes=len(found.curve) - 1)
    return ceiling.model_copy(update={"slo": found, "raw": [*ceiling.raw, *(k for p in found.curve[1:] for k in p.raw)]})


def _probe(  # noqa: PLR0913  # run_step's context, passed down to one probe
    step: Step,
    rate_tps: float,
    index: int,
    evidence: Evidence,
    workdir: Path,
    password: str | None,
    upload_every_s: float,
    meter: CostMeter,
) -> SloProbe:
    """One open-loop run of an SLO search at rate_tps (--rate): its output and log under probe-<index>/."""
    slo = step.spec.slo
    assert slo is not None  # tool_runs > 1
    # The step's record with the probe's rate: the tool builds its command from the record.
    probe_step = step.model_copy(update={"spec": step.spec.model_copy(update={"rate_tps": rate_tps, "slo": None})})
    tool = tool_for(step.tool)
    probe_dir = workdir / f"probe-{index}"
    probe_dir.mkdir(exist_ok=True)
    prefix = f"{step.raw_prefix}/probe-{index}"
    argv, tool_env = tool.command(probe_step, password, probe_dir)
    raw_path, raw_key = probe_dir / f"{step.tool}.log", f"{prefix}/{step.tool}.log"
    logger.info("slo probe starting", step_id=step.step_id, probe=index, rate_tps=rate_tps)
    try:
        exit_code = run_tool(
            argv,
            tool_environment(tool_env),
            raw_path,
            step.tool_timeout_s,
            on_chunk=lambda: evidence.store.put_file(raw_key, raw_path),
            redactor=Redactor([password]),
            upload_every_s=upload_every_s,
        )
    except WorkerStopped:
        raise WorkerStopped(raw=evidence.store.put_file(raw_key, raw_path)) from None
    raw = [evidence.put_file(raw_key, raw_path)]
    raw.extend(evidence.put_logs(prefix, tool.artifacts(probe_dir)))
    with meter.log_processing():
        measured = tool.measure(probe_step, raw_path.read_text(errors="replace"), exit_code, probe_dir)
    return probe_result(slo, rate_tps, measured.tps, measured.latency, measured.progress, raw, measured.error)


def _barrier(step: Step, barriers: StartBarrier) -> Barrier | None:
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
    return Barrier(start_epoch=start_at, all_arrived=complete, released_epoch=time.time())


@contextmanager
def _replication(step: Step, workdir: Path) -> Iterator[ReplicationMonitor | None]:
    """Runs on a target with replicas sample their lag and time their catch-up (the first shard does, for all)."""
    if step.kind != "run" or not step.replicas or step.shard != 0:
        yield None
        return
    with ReplicationMonitor(step.endpoint, step.replicas, step.monitor_interval_s, workdir / LAG_SERIES) as lag:
        yield lag


@contextmanager
def _monitor(step: Step, workdir: Path) -> Iterator[Monitor | None]:
    """Runs are watched by the live monitor; loads are not (one connection, nothing to watch)."""
    if step.kind != "run":
        yield None
        return
    with Monitor(step.endpoint, step.application_name, step.monitor_interval_s, workdir / "monitor.jsonl") as monitor:
        yield monitor


# Step Functions' answers to a heartbeat once it has stopped waiting for this task (timed out, the
# execution stopped or failed): the step is over for the campaign, so the load must stop too.
TASK_GONE = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})


def _stop_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # the SIGTERM path kills the tool and records the step stopped


@contextmanager
def heartbeat(sfn: SFNClient, task_token: str, every_s: float, on_gone: Callable[[], None] = _stop_self) -> Iterator[None]:
    """Tell Step Functions the worker is alive; a worker that dies stops beating and is detected. A beat
    refused because the state machine moved on stops the worker at once: two steps never overlap on one
    server because a worker kept loading it after its step was given up."""
    stop = threading.Event()

    def beat() -> None:
        while True:  # the first beat at once: starting up already used some of the heartbeat timeout
            try:
                sfn.send_task_heartbeat(taskToken=task_token)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") in TASK_GONE:
                    logger.warning("the state machine gave this step up: stopping", error=str(error))
                    on_gone()
                    return
                logger.warning("heartbeat failed", error=str(error))  # a missed beat is not fatal
            except Exception as error:  # nor is a network error: the next beat may pass
                logger.warning("heartbeat failed", error=str(error))
            if stop.wait(every_s):
                return

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def _exit_now() -> None:
    sys.stdout.flush()
    os._exit(HARD_STOP_EXIT_CODE)


@contextmanager
def hard_stop(after_s: float, on_expiry: Callable[[], None] = _exit_now) -> Iterator[None]:
    """End the process `after_s` from now, whatever it is doing (a hung upload, a wedged monitor): the
    container's only process exits, so the Fargate task stops and stops billing."""

    def expire() -> None:
        logger.error("hard stop: the worker outlived its step's timeout", after_s=after_s)
        on_expiry()

    timer = threading.Timer(after_s, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _record_failure(step: Step, store: Store, error: ErrorInfo, served: tuple[str, int]) -> None:
    """A failure before the tool produced a summary is still written down, with its kind and message and
    the worker that had it: the summary, not the task token's cause, is what results.json is built from
    (moto also drops the cause of SendTaskFailure: moto/stepfunctions/responses.py passes only `error`)."""
    now = now_iso()
    try:
        summary = summarize(step, Measured(error=error), None, now, now, 0.0, [error.raw] if error.raw else [], None)
        store.put_summary(summary.model_copy(update={"worker": WorkerFacts(worker_id=served[0], step_of_worker=served[1])}))
    except Exception:  # best effort: the state machine still gets the failure
        logger.exception("could not record the failure", step_id=step.step_id)


def _stop_on_sigterm() -> None:
    """ECS StopTask (and the local runtime's) sends SIGTERM, then SIGKILL 30 s later: turn the first into a
    recorded failure (the tool killed, its output kept), told to the state machine at once rather than
    by a missed heartbeat; ignore any further SIGTERM meanwhile."""

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise WorkerStopped()

    signal.signal(signal.SIGTERM, stop)


def heartbeat_every_s(env_s: float, timeout_s: int) -> float:
    """Beat at the configured pace, but at least three times per heartbeat timeout."""
    return min(env_s, timeout_s / 3)


def _serve(  # noqa: PLR0913  # one step's life in a worker: its assignment, the clients, who runs it
    assignment: Assignment,
    env: WorkerEnv,
    sfn: SFNClient,
    store: ResultStore,
    served: tuple[str, int],
    before_answer: Callable[[], object] = lambda: None,
) -> ErrorInfo | None:
    """Run one assigned step under its heartbeat and hard stop, record it, call `before_answer` (a warm
    worker renews its slot's beat, so that the next step's offer finds it live), then answer the task
    token. The step's error, None when it succeeded."""
    step, task_token = assignment.step, assignment.task_token
    with hard_stop(step.timeout_s + WORKER_HARD_STOP_GRACE_S):
        beat_s = heartbeat_every_s(env.heartbeat_s, step.heartbeat_timeout_s)
        with heartbeat(sfn, task_token, beat_s), tempfile.TemporaryDirectory(prefix="pgarena-") as tmp:
            summary = None
            try:
                barriers = DynamoBarrier(store.dynamodb, store.table)
                summary = run_step(step, store, barriers, Path(tmp), env.upload_every_s, served)
                error = summary.error
            except (WorkerStopped, Exception) as failure:  # told to the state machine rather than leave it waiting
                error = error_info(failure)
                if error.kind == ErrorKind.WORKER_CRASHED:
                    logger.exception("worker crashed", step_id=step.step_id)
            if summary is None:
                assert error is not None  # every way out without a summary set it
                _record_failure(step, store, error, served)
        if error is None or error.kind != ErrorKind.WORKER_STOPPED:
            _best_effort(before_answer)
        try:
            if error is None:
                sfn.send_task_success(taskToken=task_token, output=json.dumps({"step_id": step.step_id}))
            else:
                sfn.send_task_failure(taskToken=task_token, error=error.kind, cause=error.cause())
        except Exception as unsent:  # the execution was stopped or timed out: the summary is what counts
            logger.warning("state machine not told", step_id=step.step_id, error=str(unsent))
    return error


def _best_effort(call: Callable[[], object]) -> object:
    try:
        return call()
    except Exception as error:  # the slot is an optimisation: the step's answer matters more
        logger.warning("worker slot not updated", error=str(error))
        return None


def next_assignment(  # noqa: PLR0913  # the slot, its worker, and the clock and sleep tests drive
    slots: WorkerSlots,
    slot: WorkerSlot,
    worker: str,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
) -> Assignment | None:
    """Wait at the slot (marked idle already) for the phase's next step; None when another worker holds
    the slot, when the slot was closed (the target's phase or the campaign ended: no step will come), or
    after idle_timeout_s with none (the slot is then marked gone, so that a step dispatched at that
    moment starts a new worker instead of waiting on this one)."""
    deadline = last_beat = since = clock()
    deadline += idle_timeout_s
    while True:
        state = slots.read(slot)
        if state is None or state.worker != worker:
            return None
        if state.state == CLOSED:
            _best_effort(lambda: slots.leave(slot, worker, LEFT_CLOSED))
            return None
        if state.state == ASSIGNED and state.assignment is not None:
            if slots.claim(slot, worker, state.seq):
                return state.assignment
            continue  # withdrawn meanwhile: read again
        if clock() > deadline and slots.leave(slot, worker, LEFT_IDLE_TIMEOUT):
            return None
        if clock() - last_beat > SLOT_BEAT_S:
            slots.beat(slot, worker)
            last_beat = clock()
        sleep(slot_poll_s(clock() - since))


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
    worker = worker_identity()
    first: Assignment | Callable[[Callable[[], object]], ErrorInfo | None]
    if is_preflight(env.step):
        task = PreflightTask.model_validate_json(env.step)
        first = lambda finishing: _serve_preflight(task, env, sfn, store, worker, finishing)  # noqa: E731  # bound here, served below
    else:
        first = Assignment(step=Step.model_validate_json(env.step), task_token=env.task_token, last=env.last_step)
    if env.slot is None:  # started for one step
        error = first(lambda: None) if callable(first) else _serve(first, env, sfn, store, (worker, 1))
        return 0 if error is None else 1
    slot = WorkerSlot.model_validate_json(env.slot)
    slots = DynamoWorkerSlots(store.dynamodb, store.table)
    if not slots.register(slot, worker):  # the target's phase or the campaign ended before this worker started
        logger.info("slot closed before the worker started: its step was given up", slot=slot.name, worker=worker)
        return 0
    return serve_slot(first, slot, slots, worker, lambda a, n, finishing: _serve(a, env, sfn, store, (worker, n), finishing))


def _serve_preflight(  # noqa: PLR0913  # the task, the worker's clients, who runs it, and its slot's renewal
    task: PreflightTask,
    env: WorkerEnv,
    sfn: SFNClient,
    store: ResultStore,
    worker: str,
    before_answer: Callable[[], object],
) -> ErrorInfo | None:
    """The target's preflight here, on its site (pgarena.campaign.preflight: the same use case as the home
    function's, leasing in the results table), under a heartbeat and hard stop as a step; the task token
    answered with preflight's answer, or with its failure named as the function's would be."""
    origin = PreflightOrigin(site=task.site, runner="worker", worker_id=worker)
    error, answer = None, None
    with hard_stop(task.timeout_s + WORKER_HARD_STOP_GRACE_S):
        with heartbeat(sfn, env.task_token, heartbeat_every_s(env.heartbeat_s, task.heartbeat_timeout_s)):
            try:
                ref, server = preflight(task.ref, store, CampaignState(store), LeaseStore(store.dynamodb, store.table), origin)
                answer = ref.model_dump_json()
                logger.info("preflight passed", target=task.target, site=task.site, allowed=server.allowed)
            except (WorkerStopped, Exception) as failure:  # told to the state machine rather than leave it waiting
                error = error_info(failure)
                logger.warning("preflight failed", target=task.target, kind=error.kind, error=error.message)
        if error is None:
            _best_effort(before_answer)
        try:
            if answer is not None:
                sfn.send_task_success(taskToken=env.task_token, output=answer)
            else:
                assert error is not None
                sfn.send_task_failure(taskToken=env.task_token, error=error_name(error.kind), cause=error.cause())
        except Exception as unsent:  # the execution was stopped or timed out meanwhile
            logger.warning("state machine not told", target=task.target, error=str(unsent))
    return error


def serve_slot(
    first: Assignment | Callable[[Callable[[], object]], ErrorInfo | None],
    slot: WorkerSlot,
    slots: WorkerSlots,
    worker: str,
    serve: Callable[[Assignment, int, Callable[[], object]], ErrorInfo | None],
) -> int:
    """The warm worker's loop: each assignment served, then the next one waited for at the slot; the
    exit code of the last step (0: it succeeded). `first` may be the target's preflight on its site
    (a callable given the slot's renewal): the phase's steps then follow here, unless it failed."""
    assignment: Assignment | None
    served, error, left = 0, None, ""
    if callable(first):
        error = first(lambda: slots.finishing(slot, worker))
        if error is not None:  # no step follows a failed preflight
            _best_effort(lambda: slots.leave(slot, worker, LEFT_PREFLIGHT_FAILED))
            return 1
        assignment, left = _next(slot, slots, worker)
    else:
        assignment = first
    while assignment is not None:
        served += 1
        error = serve(assignment, served, lambda: slots.finishing(slot, worker))
        stopped = error is not None and error.kind == ErrorKind.WORKER_STOPPED
        if assignment.last or stopped:
            left = LEFT_STOPPED if stopped else LEFT_LAST_STEP
            break
        assignment, left = _next(slot, slots, worker)
    if left:  # the slot says why its worker left (the wait recorded its own); a next step starts a new one at once
        _best_effort(lambda: slots.leave(slot, worker, left))
    return 0 if error is None else 1


def _next(slot: WorkerSlot, slots: WorkerSlots, worker: str) -> tuple[Assignment | None, str]:
    """Shown idle at the slot, the phase's next step when one comes; else None and why the worker leaves
    ("" when the wait recorded its own: the idle time-out, the slot closed or taken)."""
    try:
        with hard_stop(IDLE_TIMEOUT_S + WORKER_HARD_STOP_GRACE_S):
            # Not idle there (replaced, the slot closed): the first read of the wait says which.
            if _best_effort(lambda: slots.idle(slot, worker)) is not None:
                return next_assignment(slots, slot, worker), ""
    except WorkerStopped:  # stopped between steps (a cancelled campaign): no step of its to record
        logger.info("stopped while waiting for the next step", worker=worker)
        return None, LEFT_STOPPED
    return None, ""
