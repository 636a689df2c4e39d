"""sysbench as the worker runs it: its command lines, and what its output measured."""

from __future__ import annotations

from pathlib import Path

from pgarena.model.errors import ErrorInfo, ErrorKind, ToolExit, error_info
from pgarena.model.figures import Latency
from pgarena.model.plan import Step
from pgarena.model.results import ProgressSample
from pgarena.model.tool_figures import DataChecks
from pgarena.tools.runner import Measured
from pgarena.tools.sysbench import command as sysbench
from pgarena.tools.sysbench.figures import SysbenchFigures
from pgarena.tools.sysbench.parser import SysbenchReport, parse_sysbench
from pgarena.tools.sysbench.spec import SysbenchStep


class Sysbench:
    name = "sysbench"
    binary_env = sysbench.BINARY_ENV

    def binary(self) -> str:
        return sysbench.sysbench_binary()

    def command(self, step: Step, password: str | None, workdir: Path) -> tuple[list[str], dict[str, str]]:
        spec = step.spec
        assert isinstance(spec, SysbenchStep)
        if step.kind == "init":
            args = sysbench.prepare_args(spec.prepare)
        elif spec.run is not None:
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
            progress=[
                ProgressSample(elapsed_s=i.elapsed_s, tps=i.tps, percentile=i.percentile, latency_pct_ms=i.latency_pct_ms)
                for i in report.intervals
            ],
            tool_figures=SysbenchFigures(
                qps=s.qps,
                queries_read=s.queries_read,
                queries_write=s.queries_write,
                queries_other=s.queries_other,
                ignored_errors=s.ignored_errors,
                reconnects=s.reconnects,
                latency_min_ms=s.latency_min_ms,
                percentile=pct,
                latency_pct_ms=s.latency_pct_ms,
            )
            if s
            else SysbenchFigures(),
        )
        if exit_code != 0 or (step.kind == "run" and not report.finished):
            measured.error = error_info(ToolExit(self.name, exit_code, text, report.errors, step.timeout_s))
        elif step.kind == "run" and measured.tps is None:
            measured.error = ErrorInfo(kind=ErrorKind.TOOL_FAILED, message="sysbench exited 0 but printed no tps")
        return measured

    def checks(self, step: Step) -> DataChecks | None:
        return None

    def parse(self, text: str) -> SysbenchReport:
        return parse_sysbench(text)
