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


# nr_periods counts the quota's periods the cgroup ran in, nr_throttled those it hit its quota (v2, v1).
CPU_STATS = ("/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup/cpu/cpu.stat")


def _cpu_stat() -> str | None:
    return next((text for path in CPU_STATS if (text := _read(path)) is not None and "nr_periods" in text), None)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def cpu_periods(cpu_stat: str | None) -> tuple[int, int] | None:
    """(nr_periods, nr_throttled) from cgroup v2 cpu.stat; None without a quota (no such lines)."""
    fields = dict(line.split(maxsplit=1) for line in (cpu_stat or "").splitlines() if " " in line)
    periods, throttled = fields.get("nr_periods", "").strip(), fields.get("nr_throttled", "").strip()
    return (int(periods), int(throttled)) if periods.isdigit() and throttled.isdigit() else None


def throttled_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of the quota's periods in between that hit the quota; None without a quota or a period."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    return (after[1] - before[1]) / (after[0] - before[0])


class CostMeter:
    """Started when the worker takes a step. The worker's own CPU is RUSAGE_SELF (every thread: monitor,
    heartbeat, uploads, parsing); the tool's is RUSAGE_CHILDREN, counted once it has exited and been
    waited for, so the two never overlap."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self._self0 = _cpu_s(resource.RUSAGE_SELF)
        self._children0 = _cpu_s(resource.RUSAGE_CHILDREN)
        self._processing_s = 0.0
        self._load: tuple[float, float, float | None] | None = None  # wall, CPU, throttled share while the tool ran

    @contextmanager
    def load(self) -> Iterator[None]:
        """Around the tool's measured run: its wall time, the CPU the worker and the tool used in it, and
        the share of CPU periods its cgroup's quota throttled, to tell a load generator that ran out of
        CPU (pgarena.analysis.saturation)."""
        t0, cpu0 = time.monotonic(), _cpu_s(resource.RUSAGE_SELF) + _cpu_s(resource.RUSAGE_CHILDREN)
        periods0 = cpu_periods(_cpu_stat())
        try:
            yield
        finally:
            cpu = _cpu_s(resource.RUSAGE_SELF) + _cpu_s(resource.RUSAGE_CHILDREN) - cpu0
            self._load = (time.monotonic() - t0, cpu, throttled_share(periods0, cpu_periods(_cpu_stat())))

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
            load_wall_s=round(self._load[0], 3) if self._load else None,
            load_cpu_s=round(self._load[1], 3) if self._load else None,
            throttled_share=round(self._load[2], 3) if self._load and self._load[2] is not None else None,
        )
