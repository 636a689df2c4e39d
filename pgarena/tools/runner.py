"""What every tool's worker side shares: the tool's environment and what a run measured.

Every figure comes from the tool's own output (parsed by pgarena.tools) or, for percentiles,
from an HdrHistogram of the per-transaction log the tool wrote; both are uploaded as raw output.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from pgarena.model.errors import ErrorInfo
from pgarena.model.figures import Latency
from pgarena.model.results import Barrier, ProgressSample
from pgarena.model.series import ShardSeries
from pgarena.model.tool_figures import ToolFigures

# What a tool inherits from the worker's environment: where programs and messages are, and the operator's
# TLS trust store. Nothing else: the worker's own environment holds the task token and AWS credentials.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "PGSSLROOTCERT")


# A module run by this interpreter, isolated (-I -S: no PYTHON* variable, no folder of the caller's), with this
# process's import path given by hand: a local worker is a system interpreter given pgarena's packages at
# start (pgarena.local.task_env), which a plain `python -m` would not find. Each folder's .pth files are read
# (site.addsitedir), as an editable install's are at start.
_RUN_MODULE = (
    "import os, runpy, site, sys; [site.addsitedir(p) for p in sys.argv.pop(1).split(os.pathsep) if p]; "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def python_module_command(module: str, *args: str) -> list[str]:
    """The command that runs `module` as `python -m` would, in this interpreter with this process's import path."""
    return [sys.executable, "-I", "-S", "-c", _RUN_MODULE, os.pathsep.join(sys.path), module, *args]


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
    tool_figures: ToolFigures = field(default_factory=ToolFigures)  # the tool's subclass, filled in by its Tool
    error: ErrorInfo | None = None
