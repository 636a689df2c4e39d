"""pgbench as the worker runs it: its command lines, and what its output and per-transaction log measured."""

from __future__ import annotations

from pathlib import Path

from pgarena.analysis.latency import encode, percentiles_of
from pgarena.analysis.warmup import measured_progress, window_tps
from pgarena.model.errors import ErrorInfo, ErrorKind, ToolExit, error_info
from pgarena.model.figures import Latency
from pgarena.model.plan import Step
from pgarena.model.results import ProgressSample
from pgarena.model.tool_figures import DataChecks
from pgarena.tools.pgbench.command import (
    BINARY_ENV,
    TRANSACTION_LOG_PREFIX,
    init_args,
    libpq_env,
    pgbench_binary,
    run_args,
    tpcc_load_args,
)
from pgarena.tools.pgbench.figures import PgbenchFigures
from pgarena.tools.pgbench.parser import PgbenchReport, PgbenchSummary, parse_pgbench
from pgarena.tools.pgbench.spec import TPROCC, PgbenchStep
from pgarena.tools.pgbench.tpcc.figures import SCRIPTS, consistency, order_entry
from pgarena.tools.pgbench.txlog import TransactionLog, first_start_epoch, read_txlog
from pgarena.tools.runner import Measured


class Pgbench:
    name = "pgbench"
    binary_env = BINARY_ENV

    def binary(self) -> str:
        return pgbench_binary()

    def command(self, step: Step, password: str | None, workdir: Path) -> tuple[list[str], dict[str, str]]:
        spec = step.spec
        assert isinstance(spec, PgbenchStep)
        env = libpq_env(step.endpoint, password, step.application_name, step.hostaddr)
        if spec.init is not None and spec.init.warehouses is not None:
            return tpcc_load_args(spec.init), env
        if spec.init is not None:
            args = init_args(spec.init)
        else:
            assert spec.run is not None and step.clients is not None  # the plan gives every run its clients
            args = run_args(spec.run, step.clients, workdir, spec.rate_tps, spec.warehouses)
        return [self.binary(), *args], env

    def artifacts(self, workdir: Path) -> list[Path]:
        return sorted(workdir.glob(f"{TRANSACTION_LOG_PREFIX}.*"))

    def measure(self, step: Step, text: str, exit_code: int, workdir: Path) -> Measured:
        spec = step.spec
        assert isinstance(spec, PgbenchStep)
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
        )
        measured.tool_figures = figures = summary_figures(s)
        logs = self.artifacts(workdir)
        warmup_s = spec.warmup_s
        if logs:
            start = first_start_epoch(logs) if warmup_s else None
            since = start + warmup_s if start is not None and warmup_s else None
            # One pass over the log gives the run's histogram and its per-second series (a shard's merge, and
            # every run's latency per interval: analysis.latency_intervals), and a mix's counts per script.
            mix = spec.run is not None and spec.run.builtin == TPROCC
            txlog = read_txlog(logs, per_second=step.kind == "run", since_epoch=since, scripts=SCRIPTS if mix else 0)
            histogram, failed, measured.per_second = txlog.histogram, txlog.not_done - txlog.skipped, txlog.series
            percentiles = percentiles_of(histogram)
            measured.latency = measured.latency.model_copy(
                update={k: v for k, v in percentiles.model_dump().items() if k in ("p50", "p95", "p99", "max")}
            )
            measured.histogram = encode(histogram)
            figures.logged_transactions = histogram.get_total_count()
            figures.logged_failed = failed
            figures.logged_skipped = txlog.skipped
            if since is not None and txlog.end_epoch is not None:
                self._window(measured, figures, spec, since, txlog)
            if txlog.scripts is not None:
                _order_entry(figures, txlog, since)
        if exit_code != 0 or report.aborted:
            measured.error = error_info(ToolExit(self.name, exit_code, text, report.errors, step.timeout_s))
        elif step.kind == "run" and measured.tps is None and measured.error is None:
            measured.error = ErrorInfo(kind=ErrorKind.TOOL_FAILED, message="pgbench exited 0 but printed no tps")
        return measured

    @staticmethod
    def _window(measured: Measured, figures: PgbenchFigures, spec: PgbenchStep, since: float, txlog: TransactionLog) -> None:
        """Every figure over the window after the warm-up; pgbench's own whole-run figures kept in its figures."""
        assert txlog.end_epoch is not None and spec.run is not None and spec.warmup_s is not None
        assert figures.logged_transactions is not None and figures.logged_failed is not None  # the log was read
        warmup_s, done = spec.warmup_s, figures.logged_transactions
        figures.run_tps, figures.run_transactions = measured.tps, measured.transactions
        figures.warmup_transactions = txlog.warmup_transactions
        figures.window_start_epoch = round(since, 6)
        figures.window_s = round(txlog.end_epoch - since, 6)
        measured.tps = window_tps(done, since, txlog.end_epoch)
        measured.tps_including_connections = None
        measured.transactions = done
        measured.failed_transactions = figures.logged_failed
        if figures.skipped_transactions is not None:  # the window's count, as failed's; pgbench's whole-run one kept beside it
            figures.run_skipped_transactions, figures.skipped_transactions = figures.skipped_transactions, txlog.skipped
        if figures.above_latency_limit is not None and spec.run.latency_limit_ms:  # the window's too: every count covers it
            limit_us = spec.run.latency_limit_ms * 1000  # the histogram records microseconds
            late = sum(
                i.count_at_value_iterated_to for i in txlog.histogram.get_recorded_iterator() if i.value_iterated_to > limit_us
            )
            figures.run_above_latency_limit, figures.above_latency_limit = figures.above_latency_limit, late
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

    def checks(self, step: Step) -> DataChecks | None:
        """TPROC-C's consistency conditions 1-4 after a tprocc run (the kit's check)."""
        spec = step.spec
        assert isinstance(spec, PgbenchStep)
        if step.kind != "run" or spec.run is None or spec.run.builtin != TPROCC:
            return None
        return consistency

    def parse(self, text: str) -> PgbenchReport:
        return parse_pgbench(text)


def _order_entry(figures: PgbenchFigures, txlog: TransactionLog, since: float | None) -> None:
    """TPROC-C's NOPM, TPM and per-type figures, over the log's measured window."""
    assert txlog.scripts is not None  # the caller's condition
    start = since if since is not None else txlog.start_epoch
    if start is None or txlog.end_epoch is None:
        return
    found = order_entry(txlog.scripts, txlog.end_epoch - start)
    if found is not None:
        figures.new_orders_per_minute, figures.transactions_per_minute = found.nopm, found.tpm
        figures.rollbacks, figures.mix_window_s = found.rollbacks, found.window_s
        figures.transaction_types = found.transaction_types


def summary_figures(summary: PgbenchSummary | None) -> PgbenchFigures:
    """pgbench's own whole-run figures for a rate, a latency limit or retries, as its summary printed them
    (the progress lines' are per interval); a figure pgbench did not print is None (left out of the JSON)."""
    if summary is None:
        return PgbenchFigures()
    return PgbenchFigures(
        lag_avg_ms=summary.schedule_lag_avg_ms,
        lag_max_ms=summary.schedule_lag_max_ms,
        skipped_transactions=summary.transactions_skipped,
        above_latency_limit=summary.transactions_above_latency_limit,
        retried=summary.transactions_retried,
        retries=summary.total_retries,
        scale=summary.scaling_factor,
    )
