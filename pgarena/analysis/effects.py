"""A comparison in the user's units: "2.19x the tps [1.70, 2.80]", "p95 latency 28% lower [20%, 35%]". Pure."""

from __future__ import annotations

from pgarena.model.pairwise import MetricComparison

Key = tuple[str, int | None]


def effect(c: MetricComparison) -> str:
    """Target a's figure against b's, with the decision's interval when there is one."""
    if c.higher_is_better:
        interval = f" [{c.ci_low:.2f}, {c.ci_high:.2f}]" if c.ci_low is not None and c.ci_high is not None else ""
        return f"{c.ratio:.2f}x the {c.figure}{interval}"
    # Lower is better (latency): a change in percent reads as the DBA thinks of it.
    lower = c.ratio < 1
    size = 1 - c.ratio if lower else c.ratio - 1
    interval = ""
    if c.ci_low is not None and c.ci_high is not None:
        ends = (1 - c.ci_high, 1 - c.ci_low) if lower else (c.ci_low - 1, c.ci_high - 1)
        interval = f" [{ends[0]:.0%}, {ends[1]:.0%}]"
    return f"{c.figure} {size:.0%} {'lower' if lower else 'higher'}{interval}"


def where(key: Key, single_workload: bool) -> str:
    workload, clients = key
    count = f"{clients} client{'s' if clients != 1 else ''}" if clients is not None else "its client count"
    return f"at {count}" if single_workload else f"on {workload} at {count}"


def by_point(comparisons: list[MetricComparison]) -> dict[Key, list[MetricComparison]]:
    """The comparisons grouped by workload point, in their order."""
    grouped: dict[Key, list[MetricComparison]] = {}
    for c in comparisons:
        grouped.setdefault((c.workload, c.clients), []).append(c)
    return grouped


def effects(comparisons: list[MetricComparison], than: str, single_workload: bool) -> str:
    """'2.19x the tps [1.70, 2.80] and p95 latency 28% lower [..] than b at 4 clients; at 16 clients 1.58x ...'."""
    parts = []
    for i, (key, found) in enumerate(by_point(comparisons).items()):
        said = " and ".join(effect(c) for c in found)
        # "2.02x the tps [..] of b", "p95 latency 28% lower [..] than b": the last effect takes b
        joined = "of" if found[-1].higher_is_better else "than"
        parts.append(
            f"{said} {joined} {than} {where(key, single_workload)}" if i == 0 else f"{where(key, single_workload)} {said}"
        )
    return "; ".join(parts)
