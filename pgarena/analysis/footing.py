"""Equal footing: whether two targets' load generators stood alike, so that their figures compare the
databases and not the distance or the client machine. Pure.

Two targets are not on equal footing when their median round trips (each the median of its workers'
medians of 20 `select 1`) differ by more than RTT_GAP_MS *and* by more than RTT_RATIO, or when their
workers differ in size: vCPU, or memory by more than MEMORY_TOLERANCE. The CPU model is shown beside
each target but not compared: Fargate places a task on whatever host it has, so two tasks of one
definition may get different models. A target whose round trip or size was not measured is not refused
on what is unknown.

pgbench's tpcb-like transaction makes 7 round trips: at 2 ms more per trip a single client loses ~14 ms
per transaction, which a ranking would otherwise credit to the database.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from pgarena.model.matrix import Placement
from pgarena.model.pairwise import FootingProblem
from pgarena.model.results import TargetResult, WorkerFacts, WorkerSize

RTT_GAP_MS = 1.0
RTT_RATIO = 2.0
MEMORY_TOLERANCE = 0.05  # a machine's MemTotal moves with its kernel's reservations
LOCAL_SITE = "local"
MIB = 1024 * 1024
ALLOW = '"ranking": {"allow_unequal_footing": true}'


def worker_size(workers: Sequence[WorkerFacts | None]) -> WorkerSize | None:
    """The size most of a target's workers had: the task's limits in AWS, the worker's own elsewhere."""
    sizes = []
    for w in workers:
        if w is None:
            continue
        task = w.task
        vcpu = task.cpu if task and task.cpu else w.cpu_limit
        memory = task.memory_mib if task and task.memory_mib else (w.memory_bytes // MIB if w.memory_bytes else None)
        sizes.append(WorkerSize(vcpu=vcpu, memory_mib=memory, cpu_model=w.cpu_model))
    if not sizes:
        return None
    counts = Counter(s.model_dump_json() for s in sizes)
    return WorkerSize.model_validate_json(counts.most_common(1)[0][0])


def site(placement: Placement | None, workers: Sequence[WorkerFacts | None]) -> str | None:
    """Where a target's workers ran: its placement's external site or region, else the region of the task's
    availability zone (ECS), else this machine (the local runtime reports no task); None when no worker reported."""
    if placement is not None and (placement.site or placement.region):
        return placement.site or placement.region
    zones = [w.task.availability_zone for w in workers if w is not None and w.task and w.task.availability_zone]
    if zones:
        return Counter(zones).most_common(1)[0][0].rstrip("abcdefghijklmnopqrstuvwxyz")
    return LOCAL_SITE if any(w is not None for w in workers) else None


def describe_size(size: WorkerSize | None) -> str:
    if size is None:
        return "worker size not measured"
    vcpu = f"{size.vcpu:g} vCPU" if size.vcpu is not None else "? vCPU"
    memory = f"{size.memory_mib / 1024:.1f} GiB" if size.memory_mib is not None else "? GiB"
    return f"{vcpu}, {memory}" + (f", {size.cpu_model}" if size.cpu_model else "")


def describe(target: TargetResult) -> str:
    """Site, round trip and worker size, as the report and the CLI print them beside a target ('-' when
    no worker measured anything: a target that failed first, a results.json from before they were kept)."""
    if target.site is None and target.rtt_ms is None and target.worker_size is None:
        return "-"
    rtt = f"{target.rtt_ms:.2f} ms" if target.rtt_ms is not None else "RTT ?"
    return f"{target.site or '?'} · {rtt} · {describe_size(target.worker_size)}"


def rtt_apart(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return False
    low, high = sorted((a, b))
    return high - low > RTT_GAP_MS and (low <= 0 or high / low > RTT_RATIO)


def sizes_differ(a: WorkerSize | None, b: WorkerSize | None) -> bool:
    if a is None or b is None:
        return False
    if a.vcpu is not None and b.vcpu is not None and abs(a.vcpu - b.vcpu) > 0.001:
        return True
    if a.memory_mib is not None and b.memory_mib is not None:
        return abs(a.memory_mib - b.memory_mib) > MEMORY_TOLERANCE * max(a.memory_mib, b.memory_mib)
    return False


def footing_problem(a: TargetResult, b: TargetResult) -> FootingProblem | None:
    """What keeps a and b from being ranked as equals, and what to change; None when they stood alike."""
    reasons, fixes = [], []
    if rtt_apart(a.rtt_ms, b.rtt_ms):
        near, far = (a, b) if (a.rtt_ms or 0) <= (b.rtt_ms or 0) else (b, a)
        assert near.rtt_ms is not None and far.rtt_ms is not None  # rtt_apart compared both
        ratio = f"{far.rtt_ms / near.rtt_ms:.0f}x" if near.rtt_ms > 0 else "far"
        reasons.append(
            f"median round trip {far.rtt_ms:.2f} ms from {far.site or '?'} to {far.name} against {near.rtt_ms:.2f} ms "
            f"to {near.name} ({far.rtt_ms - near.rtt_ms:.2f} ms apart, {ratio}; more than {RTT_GAP_MS:g} ms and "
            f"{RTT_RATIO:g}x)"
        )
        fixes.append(
            f"run {far.name}'s workers next to it (placement.region, or a site in its cloud) so that the round trips "
            f"are within {RTT_GAP_MS:g} ms or {RTT_RATIO:g}x of each other"
        )
    if sizes_differ(a.worker_size, b.worker_size):
        reasons.append(
            f"workers of {describe_size(a.worker_size)} for {a.name} against {describe_size(b.worker_size)} for {b.name}"
        )
        fixes.append("give both targets' workers the same task size (vCPU and memory)")
    if not reasons:
        return None
    return FootingProblem(a=a.name, b=b.name, reasons=reasons, fix=f"{'; '.join(fixes)}; or set {ALLOW} to rank them anyway")


def footing_problems(targets: Sequence[TargetResult]) -> list[FootingProblem]:
    """Every pair of the given targets not on equal footing, in their order."""
    return [p for a, b in combinations(targets, 2) if (p := footing_problem(a, b)) is not None]


def comparable_group(targets: Sequence[TargetResult]) -> list[str]:
    """The largest set of targets all on equal footing with each other, nearest first on a tie (the one a
    ranking without allow_unequal_footing compares). Grown greedily from each target in order of round trip:
    for round trips alone this finds the largest group, as a window of sorted round trips whose ends are
    comparable is comparable throughout."""
    ordered = sorted(targets, key=lambda t: t.rtt_ms if t.rtt_ms is not None else 0.0)
    best: list[TargetResult] = []
    for i, anchor in enumerate(ordered):
        group = [anchor]
        for other in ordered[i + 1 :]:
            if all(footing_problem(member, other) is None for member in group):
                group.append(other)
        if len(group) > len(best):
            best = group
    return [t.name for t in best]
