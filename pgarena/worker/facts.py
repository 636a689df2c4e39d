"""What a worker records about itself: its machine, its tools, its task (in AWS), and how far it is from
the database. A load generator with too little CPU, or far from the database, measures itself, not the
target: these facts let a reader tell."""

from __future__ import annotations

import json
import os
import platform
import secrets
import socket
import sys
import time
import urllib.request
from importlib import metadata
from pathlib import Path
from statistics import median
from typing import Any

from pgarena.model.matrix import Endpoint
from pgarena.model.results import EcsTask, WorkerFacts
from pgarena.server.postgres import connect, describe

# Round trips timed for the median (each a `select 1` on one open connection).
RTT_SAMPLES = 20
# Set in every ECS task (Fargate platform 1.4+): the task metadata endpoint, version 4.
ECS_METADATA_ENV = "ECS_CONTAINER_METADATA_URI_V4"
METADATA_TIMEOUT_S = 2.0
LIBRARIES = ("pgarena", "pg8000", "hdrhistogram")


def cpu_model(cpuinfo: str) -> str | None:
    """x86 names its CPU 'model name'; Arm (Graviton) gives only implementer and part numbers."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    if fields.get("model name"):
        return fields["model name"]
    if fields.get("CPU implementer"):
        return f"arm implementer {fields['CPU implementer']} part {fields.get('CPU part', '?')}"
    return None


def memory_bytes(meminfo: str, cgroup_max: str | None) -> int | None:
    """The container's limit (cgroup v2 memory.max, v1 memory.limit_in_bytes) when it has one, else the
    machine's MemTotal (v1 writes a huge number for no limit)."""
    total = next((int(line.split()[1]) * 1024 for line in meminfo.splitlines() if line.startswith("MemTotal:")), None)
    if cgroup_max and cgroup_max.strip().isdigit() and (total is None or int(cgroup_max.strip()) < total):
        return int(cgroup_max.strip())
    return total


# A container's CPU quota: cgroup v2's one file ("<quota> <period>", "max <period>" for none), else
# cgroup v1's two (cfs_quota_us -1 for none).
CPU_MAX = "/sys/fs/cgroup/cpu.max"
MEMORY_MAX, MEMORY_LIMIT_V1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
CFS_QUOTA, CFS_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"


def cpu_limit(cpu_max: str | None, cpus: int | None) -> float | None:
    """The CPUs a container may use: its quota "<quota> <period>" (cpu.max, or v1's two files joined);
    without a quota, the CPUs it may run on."""
    quota, _, period = (cpu_max or "").strip().partition(" ")
    if quota.isdigit() and period.strip().isdigit() and int(period) > 0:
        return round(int(quota) / int(period), 3)
    return float(cpus) if cpus else None


def _cpu_max() -> str | None:
    v2 = _read(CPU_MAX)
    if v2 is not None:
        return v2
    quota, period = _read(CFS_QUOTA), _read(CFS_PERIOD)
    return f"{quota.strip()} {period.strip()}" if quota and period else None


def ecs_task(document: dict[str, Any]) -> EcsTask:
    """The task metadata v4 `/task` answer: AZ, task size, launch type."""
    limits = document.get("Limits") or {}
    return EcsTask(
        availability_zone=document.get("AvailabilityZone"),
        cpu=limits.get("CPU"),
        memory_mib=limits.get("Memory"),
        launch_type=document.get("LaunchType"),
        task_arn=document.get("TaskARN"),
    )


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _versions(tool_versions: dict[str, str | None]) -> dict[str, str]:
    versions = {name: v.splitlines()[0] for name, v in tool_versions.items() if v}
    versions["python"] = sys.version.split()[0]
    for library in LIBRARIES:
        try:
            versions[library] = metadata.version(library)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _task(notes: list[str]) -> EcsTask | None:
    uri = os.environ.get(ECS_METADATA_ENV)
    if not uri:
        return None  # not in ECS (the local runtime, a laptop)
    try:
        with urllib.request.urlopen(f"{uri}/task", timeout=METADATA_TIMEOUT_S) as answer:
            return ecs_task(json.loads(answer.read()))
    except (OSError, ValueError) as error:
        notes.append(f"task metadata: {error}")
        return None


def worker_identity() -> str:
    """This worker, as the steps it runs record it: the ECS task's ARN, else host:pid:nonce (the nonce
    tells apart containers that share the host's name and network and each run as pid 1), so that a
    phase's steps tell whether they ran on one worker."""
    task = _task([])
    if task is not None and task.task_arn:
        return task.task_arn
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def round_trip_ms(endpoint: Endpoint, samples: int = RTT_SAMPLES, application_name: str = "pgarena-rtt") -> list[float]:
    """`samples` timed `select 1` round trips on one connection (connecting is not timed)."""
    times = []
    with connect(endpoint, application_name=application_name) as conn:
        cursor = conn.cursor()
        cursor.execute("select 1")  # the first statement may pay for catalog lookups
        cursor.fetchall()
        for _ in range(samples):
            t0 = time.perf_counter()
            cursor.execute("select 1")
            cursor.fetchall()
            times.append((time.perf_counter() - t0) * 1000)
    return times


def worker_facts(endpoint: Endpoint, tool_versions: dict[str, str | None]) -> WorkerFacts:
    """Everything readable; what is not is noted, never a reason to fail the step."""
    notes: list[str] = []
    try:
        rtts = round_trip_ms(endpoint)
    except Exception as error:  # the step's own connection will fail and say why; this is a fact, not a check
        notes.append(f"round trip not measured: {describe(error)}")
        rtts = []
    cpus: int | None
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count()
    return WorkerFacts(
        cpu_model=cpu_model(_read("/proc/cpuinfo") or "") or platform.processor() or None,
        cpu_count=cpus,
        cpu_limit=cpu_limit(_cpu_max(), cpus),
        memory_bytes=memory_bytes(_read("/proc/meminfo") or "", _read(MEMORY_MAX) or _read(MEMORY_LIMIT_V1)),
        platform=platform.platform(),
        tools=_versions(tool_versions),
        task=_task(notes),
        rtt_ms=round(median(rtts), 3) if rtts else None,
        rtt_samples=len(rtts),
        notes=notes,
    )
