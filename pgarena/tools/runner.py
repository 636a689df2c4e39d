"""The benchmark tools a worker runs: how to call each, and what its output measured.

Every figure comes from the tool's own output (parsed by pgarena.tools) or, for percentiles,
from an HdrHistogram of the per-transaction log the tool wrote; both are uploaded as raw output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pgarena.analysis.latency import encode, percentiles_of
from pgarena.analysis.warmup import measured_progress, warmup_of, window_tps
from pgarena.model.errors import ErrorInfo, ErrorKind, ToolExit, error_info
from pgarena.model.matrix import PgbenchWorkload, SysbenchWorkload
from pgarena.model.plan import Step
from pgarena.model.results import Barrier, Latency, ProgressSample
from pgarena.model.series import ShardSeries
from pgarena.tools.pgbench.command import TRANSACTION_LOG_PREFIX, init_args, libpq_env, pgbench_binary, run_args
from pgarena.tools.pgbench.parser import parse_pgbench
from pgarena.tools.pgbench.txlog import TransactionLog, first_start_epoch, read_txlog
from pgarena.tools.sysbench import command as sysbench
from pgarena.tools.sysbench.parser import parse_sysbench

# What a tool inherits from the worker's environment: where programs and messages are, and the operator's
# TLS trust store. Nothing else: the worker's own environment holds the task token and AWS credentials.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "PGSSLROOTCERT")


def tool_environment(tool_env: Mapping[str, str], worker_env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The tool's whole environment, built from scratch: INHERITED_ENV plus the tool's own PG* settings."""
    env = {name: worker_env[name] for name in INHERITED_ENV if name in worker_env}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return {**env, **tool_env}


@dataclass
class Measured:
    tps: float | None = None
    tps_including_connections: float | None = None
    latency: Latency = field(default_factory=Latency)
    transactions: int | None = None
    failed_transactions: int | None = None
    progress: list[ProgressSample] = field(default_factory=list)
    load_s: float | None = None
    load_phases_s: dict[str, float] = field(default_factory=dict)
    histogram: str | None = None
    series: str | None = None
    per_second: ShardSeries | None = None  # a sharded run's per-second histograms, before upload (series is its key)
    barrier: Barrier | None = None
    extra: dict[str, float | int | None] = field(default_factory=dict)
    error: ErrorInfo | None = None


class Tool(Protocol):
    def binary(self) -> str: ...

    def command(self, step: Step, password: str | None, workdir: Path) -> tuple[list[str], dict[str, str]]: ...

    def measure(self, step: Step, text: str, exit_code: int, workdir: Path) -> Measured: ...

    def artifacts(self, workdir: Path) -> list[Path]: ...


class Pgbench:
    def binary(self) -> str:
        return pgbench_binary()

    def command(self, step: Step, password: str | None, workdir: Path) -> tuple[list[str], dict[str, str]]:
        spec = step.spec
        assert isinstance(spec, PgbenchWorkload)
        if step.kind == "init":
            args = init_args(spec.init)
        else:
            assert step.clients is not None  # the plan gives every run its clients
            args = run_args(spec.run, step.clients, workdir)
        return [self.binary(), *args], libpq_env(step.endpoint, password, step.application_name, step.hostaddr)

    def artifacts(self, workdir: Path) -> list[Path]:
        return sorted(workdir.glob(f"{TRANSACTION_LOG_PREFIX}.*"))

    def measure(self, step: Step, text: str, exit_code: int, workdir: Path) -> Measured:
        spec = step.spec
        assert isinstance(spec, PgbenchWorkload)
        report = parse_pgbench(text)
        s = report.summary
        measured = Measured(
            tps=s.tps if s else None,
            tps_including_connections=s.tps_including_connections if s else None,
            latency=Latency(avg=s.latency_avg_ms, stddev=s.latency_stddev_ms) if s else Latency(),
            transactions=s.transactions if s else None,
            failed_transactions=s.failed_transactions if s else None,
            progress=[
                ProgressSample(elapsed_s=p.elapsed_s, tps=p.tps, latency_avg_ms=p.latency_avg_ms, lag_ms=p.lag_ms)
                for p in report.progress
            ],
            load_s=report.init.total_s if report.init else None,
            load_phases_s=report.init.phases_s if report.init else {},
            extra={"lag_ms": report.progress[-1].lag_ms} if report.progress and report.progress[-1].lag_ms is not None else {},
        )
        logs = self.artifacts(workdir)
        warmup_s = warmup_of(spec) if step.kind == "run" else None
        if logs:
            start = first_start_epoch(logs) if warmup_s else None
            since = start + warmup_s if start is not None and warmup_s else None
            # One pass over the log gives the run's histogram and, for a shard, its per-second series.
            txlog = read_txlog(logs, per_second=step.shards > 1, since_epoch=since)
            histogram, not_done, measured.per_second = txlog.histogram, txlog.not_done, txlog.series
            percentiles = percentiles_of(histogram)
            measured.latency = measured.latency.model_copy(
                update={k: v for k, v in percentiles.model_dump().items() if k in ("p50", "p95", "p99", "max")}
            )
            measured.histogram = encode(histogram)
            measured.extra["logged_transactions"] = histogram.get_total_count()
            measured.extra["logged_not_done"] = not_done
            if since is not None and txlog.end_epoch is not None:
                self._window(measured, spec, histogram.get_total_count(), not_done, since, txlog)
        if exit_code != 0 or report.aborted:
            measured.error = error_info(ToolExit("pgbench", exit_code, text, report.errors, step.timeout_s))
        elif step.kind == "run" and measured.tps is None and measured.error is None:
            measured.error = ErrorInfo(kind=ErrorKind.TOOL_FAILED, message="pgbench exited 0 but printed no tps")
        return measured

    @staticmethod
    def _window(measured: Measured, spec: PgbenchWorkload, done: int, not_done: int, since: float, txlog: TransactionLog) -> None:  # noqa: PLR0913  # the window's counts and times, each a field of Measured
        """Every figure over the window after the warm-up; pgbench's own whole-run figures kept in extra."""
        assert txlog.end_epoch is not None
        warmup_s = spec.run.warmup_s
        measured.extra.update(
            {
                "run_tps": measured.tps,
                "run_transactions": measured.transactions,
                "warmup_transactions": txlog.warmup_transactions,
                "window_start_epoch": round(since, 6),
                "window_s": round(txlog.end_epoch - since, 6),
            }
        )
        measured.tps = window_tps(done, since, txlog.end_epoch)
        measured.tps_including_connections = None
        measured.transactions = done
        measured.failed_transactions = not_done
        if done:
            histogram = txlog.histogram
            measured.latency = measured.latency.model_copy(
                update={"avg": round(histogram.get_mean_value() / 1000, 3), "stddev": round(histogram.get_stddev() / 1000, 3)}
            )
        measured.progress = measured_progress(measured.progress, warmup_s, spec.run.progress_s)
        if measured.tps is None:
            measured.error = ErrorInfo(
                kind=ErrorKind.TOOL_FAILED, message=f"no transaction completed after the {warmup_s} s warm-up (warmup_s)"
            )


class Sysbench:
    def binary(self) -> str:
        return sysbench.sysbench_binary()

    def command(self, step: Step, password: str | None, workdir: Path) -> tuple[list[str], dict[str, str]]:
        spec = step.spec
        assert isinstance(spec, SysbenchWorkload)
        if step.kind == "init":
            args = sysbench.prepare_args(spec.prepare)
        elif step.kind == "run":
            args = sysbench.run_args(spec.run.model_copy(update={"threads": step.clients}), spec.prepare)
        else:
            args = sysbench.cleanup_args(spec.prepare)
        e = step.endpoint
        env = {**sysbench.sysbench_env(password, e.sslmode), "PGAPPNAME": step.application_name}
        if e.sslrootcert:  # sysbench's pgsql driver is libpq: it reads PGSSLROOTCERT as pgbench does
            env["PGSSLROOTCERT"] = e.sslrootcert
        if step.hostaddr:  # libpq inside sysbench reads it beside --pgsql-host (the name, for TLS)
            env["PGHOSTADDR"] = step.hostaddr
        return [self.binary(), *sysbench.connection_args(e.host, e.port, e.user, e.dbname), *args], env

    def artifacts(self, workdir: Path) -> list[Path]:
        return []

    def measure(self, step: Step, text: str, exit_code: int, workdir: Path) -> Measured:
        report = parse_sysbench(text)
        s = report.summary
        pct = s.percentile if s else None
        latency = Latency()
        if s:
            latency = Latency(
                avg=s.latency_avg_ms, max=s.latency_max_ms, **({f"p{int(pct)}": s.latency_pct_ms} if pct in (50, 95, 99) else {})
            )
        measured = Measured(
            tps=s.tps if s else None,
            latency=latency,
            transactions=s.transactions if s else None,
            failed_transactions=None,  # sysbench counts ignored errors, not failed transactions
            progress=[ProgressSample(elapsed_s=i.elapsed_s, tps=i.tps) for i in report.intervals],
            extra={
                "qps": s.qps,
                "queries_read": s.queries_read,
                "queries_write": s.queries_write,
                "queries_other": s.queries_other,
                "ignored_errors": s.ignored_errors,
                "reconnects": s.reconnects,
                "latency_min_ms": s.latency_min_ms,
                f"latency_p{pct}_ms" if pct else "latency_pct_ms": s.latency_pct_ms,
            }
            if s
            else {},
        )
        if exit_code != 0 or (step.kind == "run" and not report.finished):
            measured.error = error_info(ToolExit("sysbench", exit_code, text, report.errors, step.timeout_s))
        elif step.kind == "run" and measured.tps is None:
            measured.error = ErrorInfo(kind=ErrorKind.TOOL_FAILED, message="sysbench exited 0 but printed no tps")
        return measured


TOOL_RUNNERS: dict[str, Tool] = {"pgbench": Pgbench(), "sysbench": Sysbench()}
