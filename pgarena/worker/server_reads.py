"""The server reads port on pgarena.server (pg8000): the postmaster's start, the counters, the activity and lag
monitors."""

from __future__ import annotations

from pathlib import Path

from pgarena.model.matrix import Endpoint
from pgarena.model.plan import Step
from pgarena.model.server_counters import CounterSnapshot
from pgarena.model.tool_figures import ConsistencyCheck, DataChecks
from pgarena.server.checks import run_checks
from pgarena.server.counters import SESSIONS_GONE_WAIT_S, read_counters
from pgarena.server.monitor import Monitor
from pgarena.server.replication import ReplicationMonitor
from pgarena.server.restarts import read_postmaster_start


class PostgresReads:
    def postmaster_start(self, endpoint: Endpoint, wait_s: float = 0.0) -> str | None:
        return read_postmaster_start(endpoint, wait_s)

    def counters(self, step: Step, closing: bool = False) -> CounterSnapshot | None:
        own_name = step.application_name.rsplit("/", 1)[0] + "/counters"  # tagged with the campaign, as the monitor's
        return read_counters(step.endpoint, step.application_name, own_name, SESSIONS_GONE_WAIT_S if closing else 0.0)

    def monitor(self, step: Step, series_path: Path) -> Monitor:
        # A load's connections close as its parts finish (sysbench prepare's threads): no collapse to flag.
        return Monitor(step.endpoint, step.application_name, step.monitor_interval_s, series_path, run=step.kind == "run")

    def replication(self, step: Step, series_path: Path) -> ReplicationMonitor:
        return ReplicationMonitor(step.endpoint, step.replicas, step.monitor_interval_s, series_path)

    def check(self, step: Step, checks: DataChecks) -> list[ConsistencyCheck]:
        return run_checks(step.endpoint, step.application_name.rsplit("/", 1)[0] + "/checks", checks)
