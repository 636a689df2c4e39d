"""What the worker itself costs while it runs a step, measured apart from the tool it runs."""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pgarena.model.results import HarnessCost


def _cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float | None:
    """This process's peak resident memory (VmHWM, Linux; a worker process takes one step). Not ru_maxrss:
    Linux carries the forking parent's peak over fork and exec, so a worker the local runtime started
    would report the runtime's size."""
    try:
        status = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return None
    peak_kib = next((int(line.split()[1]) for line in status if line.startswith("VmHWM:")), None)
    return None if peak_kib is None else round(peak_kib / 1024, 1)


class CostMeter:
    """Started when the worker takes a step. The worker's own CPU is RUSAGE_SELF (every thread: monitor,
    heartbeat, uploads, parsing); the tool's is RUSAGE_CHILDREN, counted once it has exited and been
    waited for, so the two never overlap."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self._self0 = _cpu_s(resource.RUSAGE_SELF)
        self._children0 = _cpu_s(resource.RUSAGE_CHILDREN)
        self._processing_s = 0.0

    @contextmanager
    def log_processing(self) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self._processing_s += time.monotonic() - t0

    def cost(self) -> HarnessCost:
        return HarnessCost(
            wall_s=round(time.monotonic() - self._t0, 3),
            cpu_s=round(_cpu_s(resource.RUSAGE_SELF) - self._self0, 3),
            tool_cpu_s=round(_cpu_s(resource.RUSAGE_CHILDREN) - self._children0, 3),
            log_processing_s=round(self._processing_s, 3),
            peak_rss_mib=peak_rss_mib(),
        )
