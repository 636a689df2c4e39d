"""What every report shows, read from results.json as aggregation computed it: the ranking with its
reasons, the metrics per point, scaling, findings and a one-paragraph verdict. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from pgarena.analysis.effects import effect
from pgarena.analysis.footing import describe
from pgarena.analysis.headline import headline, names, phase_cost
from pgarena.analysis.intervals import METHOD, SINGLE_RUN_NOTE
from pgarena.analysis.metrics import nominal_clients, stored_metrics
from pgarena.analysis.ranking import METRICS, unranked_reasons
from pgarena.model.metrics import Finding, PointMetrics, Scaling, TargetMetrics
from pgarena.model.pairwise import NoiseWarning
from pgarena.model.results import CampaignResults, ConsolidationTable, ReplicationPoint, TargetResult
from pgarena.model.slo import SloSearch
from pgarena.report.charts import colour

Key = tuple[str, int | None]


@dataclass
class RankRow:
    target: str
    provider: str
    status: str
    rank: int | None = None
    score: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    metric_ranks: dict[str, int] = field(default_factory=dict)
    tied_with: list[str] = field(default_factory=list)
    undecided_with: list[str] = field(default_factory=list)
    provisional: bool = False
    flags: list[str] = field(default_factory=list)
    reason: str = ""
    footing: str = ""  # site, round trip and worker size (pgarena.analysis.footing.describe)

    @property
    def reason_head(self) -> str:
        """A failure's kind ("failed: connection_refused"), its message folded under it; any other reason whole."""
        if not self.reason.startswith("failed: "):
            return self.reason
        kind, sep, _ = self.reason.removeprefix("failed: ").partition(": ")
        return f"failed: {kind}" if sep else self.reason

    @property
    def reason_detail(self) -> str:
        """What reason_head leaves out ("" when nothing)."""
        return self.reason.removeprefix(self.reason_head).removeprefix(": ")


@dataclass
class SloRun:
    """One run's SLO search, for the report's curve and table."""

    target: str
    workload: str
    clients: int | None
    repetition: int
    search: SloSearch


def repetitions_note(results: CampaignResults) -> str | None:
    """An adaptive campaign's repetitions: how many ran, and the phases not needed (not failures)."""
    adaptive = results.adaptive
    if adaptive is None:
        return None
    workloads = list(dict.fromkeys(look.workload for look in adaptive.looks if look.workload))
    ran = "; ".join(f"{w} ran {adaptive.repetitions_run(w)}" for w in workloads) or f"ran {adaptive.repetitions_run()}"
    skipped = ", ".join(str(n) for n in adaptive.not_needed)
    not_needed = f"; phases {skipped} not needed: the verdict was decided without them" if skipped else ""
    return f"Repetitions until decided: {adaptive.min} to {adaptive.max}; {ran}{not_needed}"


@dataclass
class Report:
    results: CampaignResults
    targets: list[TargetMetrics]
    colours: dict[str, str]
    rows: list[RankRow]
    keys: list[Key]
    points: dict[Key, list[PointMetrics]]
    scaling: list[Scaling]
    findings: list[Finding]
    verdict: str
    basis: str
    duration_s: float | None
    metrics: tuple[str, ...] = METRICS
    intervals: str = METHOD
    intervals_note: str | None = None
    consolidation: list[ConsolidationTable] = field(default_factory=list)
    replication: list[ReplicationPoint] = field(default_factory=list)
    slo_runs: list[SloRun] = field(default_factory=list)
    matrices: list[Matrix] = field(default_factory=list)
    noise: list[NoiseWarning] = field(default_factory=list)

    @property
    def repetitions_note(self) -> str | None:
        return repetitions_note(self.results)

    @property
    def noise_summary(self) -> str:
        """The noise warnings in one line; each warning's message is shown on demand."""
        single = len({w for w, _ in self.keys}) <= 1
        where = "; ".join(f"{w.target} at {point_label((w.workload, w.clients), single)}" for w in self.noise)
        count = len(self.noise)
        return f"Noisy at {count} point{'s' if count != 1 else ''}, where small differences cannot be told apart: {where}"

    @cached_property
    def tool_versions(self) -> dict[str, list[tuple[str, str]]]:
        return {t.name: tool_versions(t) for t in self.results.targets}

    @property
    def has_costs(self) -> bool:
        return any(p.tps_per_usd_hour is not None for points in self.points.values() for p in points)

    @property
    def has_latency(self) -> bool:
        return any(p.latency_ms.avg is not None for points in self.points.values() for p in points)

    @property
    def has_slo(self) -> bool:
        return bool(self.slo_runs)

    @property
    def has_mix(self) -> bool:
        """A transaction mix's figures (TPROC-C's NOPM and per-type latency) at some point."""
        return any(p.nopm is not None or p.consistency is not None for points in self.points.values() for p in points)

    @property
    def has_qps(self) -> bool:
        return any(p.qps is not None for points in self.points.values() for p in points)

    @property
    def has_percentiles(self) -> bool:
        return any(p.latency_ms.p95 is not None for points in self.points.values() for p in points)

    @property
    def loads(self) -> list[tuple[str, str, float]]:
        return [(t.target, workload, seconds) for t in self.targets for workload, seconds in t.load_s.items()]


def short_version(tool: str, printed: str) -> str:
    """What `<tool> --version` printed, its parenthesised words dropped: "pgbench (PostgreSQL) 15.20 (Debian
    15.20-0+deb12u1)" -> "pgbench 15.20"; named for its tool when it does not name it."""
    short = " ".join(re.sub(r"\([^)]*\)", " ", printed.splitlines()[0] if printed else "").split())
    return short if short.startswith(tool) else f"{tool} {short}".strip()


def tool_versions(target: TargetResult) -> list[tuple[str, str]]:
    """The client tool versions its runs' workers reported (their facts' `tools`), each as (short, as
    printed), in the order first seen: the client, shown beside the server it measured."""
    seen: dict[str, str] = {}
    for w in target.workloads:
        printed = w.worker.tools.get(w.tool) if w.worker else None
        if printed:
            seen.setdefault(printed, short_version(w.tool, printed))
    return [(short, printed) for printed, short in seen.items()]


def point_label(key: Key, single_workload: bool) -> str:
    workload, clients = key
    count = f"{clients} client{'s' if clients != 1 else ''}" if clients is not None else "?"
    return count if single_workload else f"{workload} · {count}"


def _seconds_between(start: str, end: str) -> float | None:
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return None


def _kind(reason: str) -> str:
    """'failed: too_many_clients: ...' -> 'too_many_clients'."""
    return reason.removeprefix("failed: ").split(":")[0]


def single_run(targets: list[TargetMetrics]) -> bool:
    """Every measured point rests on one run: no interval, no measured run-to-run noise."""
    return all(p.runs < 2 for t in targets for p in t.points)


def verdict(results: CampaignResults, rows: list[RankRow], single: bool = False) -> str:
    """The stored ranking's headline (pgarena.analysis.headline), then what was not ranked and why."""
    ranked = [r for r in rows if r.rank is not None]
    failed = [r for r in rows if r.status != "succeeded"]
    parts = []
    if not ranked:
        parts.append("No target could be ranked: none has a complete measurement to compare.")
    else:
        parts.append(headline(results.ranking, results.comparisons, results.footing, phase_cost(results)))
        if single:
            parts.append(f"{SINGLE_RUN_NOTE[0].upper()}{SINGLE_RUN_NOTE[1:]}: run repetitions >= 3 to measure the noise.")
    if failed:
        parts.append(
            f"{len(failed)} target(s) failed and are not ranked: "
            + "; ".join(f"{r.target} ({_kind(r.reason)})" for r in failed)
            + "."
        )
    unranked = [r for r in rows if r.rank is None and r.status == "succeeded"]
    unranked = [r for r in unranked if r.target not in {n for p in results.footing for n in (p.a, p.b)}]
    if unranked:  # those left out for their footing, the headline named
        parts.append(f"Not ranked for lack of a comparable complete run: {names([r.target for r in unranked])}.")
    return " ".join(parts)


@dataclass
class Matrix:
    """One workload point's pairwise comparisons: each cell, the row's figures against the column's."""

    label: str
    targets: list[str]
    cells: dict[tuple[str, str], list[tuple[str, bool]]]  # (row, column) -> (effect, significant)

    def cell(self, row: str, column: str) -> list[tuple[str, bool]]:
        return self.cells.get((row, column), [])


def matrices(results: CampaignResults) -> list[Matrix]:
    """The stored comparisons, one matrix per point, rows and columns in rank order."""
    order = [e.target for e in results.ranking]
    single = len({c.workload for p in results.comparisons for c in p.comparisons}) <= 1
    out: dict[Key, Matrix] = {}
    for pair in results.comparisons:
        for c in pair.comparisons:
            key = (c.workload, c.clients)
            matrix = out.setdefault(key, Matrix(point_label(key, single), order, {}))
            matrix.cells.setdefault((pair.a, pair.b), []).append((effect(c), c.significant))
            matrix.cells.setdefault((pair.b, pair.a), []).append((effect(c.flipped()), c.significant))
    return list(out.values())


def _never_ran(point: PointMetrics) -> bool:
    """A point whose runs were all skipped because their target had already failed: its row would say nothing."""
    return point.runs == 0 and bool(point.error_kinds) and all(kind == "not_run" for kind in point.error_kinds)


def build_report(results: CampaignResults) -> Report:
    targets = stored_metrics(results)
    colours = {t.name: colour(i) for i, t in enumerate(results.targets)}
    providers = {t.name: t for t in results.targets}
    rows = [
        RankRow(
            target=e.target,
            provider=providers[e.target].provider,
            status=providers[e.target].status,
            rank=e.rank,
            score=e.score,
            metrics=e.metrics,
            metric_ranks=e.metric_ranks,
            tied_with=e.tied_with,
            undecided_with=e.undecided_with,
            provisional=e.provisional,
            flags=e.flags,
            footing=describe(providers[e.target]),
        )
        for e in results.ranking
        if e.target in providers
    ]
    for name, reason in unranked_reasons(results.targets, results.ranking, targets, results.footing).items():
        target = providers[name]
        rows.append(RankRow(target=name, provider=target.provider, status=target.status, reason=reason, footing=describe(target)))
    keys: list[Key] = []
    points: dict[Key, list[PointMetrics]] = {}
    for t in targets:
        for p in t.points:
            if _never_ran(p):
                continue
            if p.key not in points:
                keys.append(p.key)
                points[p.key] = []
            points[p.key].append(p)
    workloads = list(dict.fromkeys(w for w, _ in keys))
    keys.sort(key=lambda k: (workloads.index(k[0]), k[1] or 0))
    return Report(
        results=results,
        targets=targets,
        colours=colours,
        rows=rows,
        keys=keys,
        points=points,
        scaling=[s for t in targets for s in t.scaling],
        findings=[f for t in targets for f in t.findings],
        verdict=verdict(results, rows, single_run(targets)),
        matrices=matrices(results),
        noise=results.noise,
        basis=results.ranking[0].basis if results.ranking else "",
        duration_s=_seconds_between(results.started_at, results.finished_at),
        intervals=results.statistics.method if results.statistics else METHOD,
        intervals_note=SINGLE_RUN_NOTE if single_run(targets) else (results.statistics.note if results.statistics else None),
        # Sustainable throughput and tps at SLO have a column only where some target was scored on them.
        metrics=tuple(m for m in METRICS if m not in ("sustainable", "slo_tps", "nopm") or any(m in r.metrics for r in rows)),
        consolidation=results.scenarios.consolidation if results.scenarios else [],
        replication=results.scenarios.replication if results.scenarios else [],
        slo_runs=[
            SloRun(t.name, w.name, nominal_clients(w), w.repetition, w.slo) for t in results.targets for w in t.workloads if w.slo
        ],
    )
