"""Consolidation scaling (METHODOLOGY.md section 3). Pure.

A consolidation sweep runs the same workload on the first N targets at once, for each N of its
steps (1, 2, 4, ...), each step a phase of the campaign. Per workload point it reports the total
throughput of each step against ideal scaling, the first step's throughput per target x N, the
ratio measured / ideal, the first step where that ratio falls below a threshold (the study read
0.95 at 80% core saturation as 5% platform overhead), and a Universal Scalability Law fit with N =
targets running at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from pgarena.analysis.metrics import fit_usl, is_clamped, nominal_clients
from pgarena.model.results import ConsolidationStep, ConsolidationTable, TargetResult


@dataclass
class StepTotals:
    """What one step's targets measured at one workload point: tps per target (None: failed or clamped)."""

    phase: int
    per_target_tps: dict[str, float | None]
    together: bool = True  # every target's run started at the phase's barrier

    @property
    def complete(self) -> bool:
        return bool(self.per_target_tps) and all(v is not None for v in self.per_target_tps.values())

    @property
    def measured_tps(self) -> float | None:
        known = [v for v in self.per_target_tps.values() if v is not None]
        return sum(known) if known else None


def consolidation_table(workload: str, clients: int | None, steps: Sequence[StepTotals], threshold: float) -> ConsolidationTable:
    """Measured vs ideal per step; ideal scales the first complete step's throughput per target."""
    complete = [(len(s.per_target_tps), tps) for s in steps if s.complete and (tps := s.measured_tps) is not None]
    per_target = complete[0][1] / complete[0][0] if complete else None
    usl = fit_usl(complete)
    rows = []
    for s in steps:
        n = len(s.per_target_tps)
        ideal = per_target * n if per_target is not None else None
        notes = []
        if not s.complete:
            missing = [name for name, tps in s.per_target_tps.items() if tps is None]
            notes.append(f"no complete run on {', '.join(missing)}: the total covers the others only")
        if not s.together:
            notes.append("not every target reached the start barrier: the runs did not all overlap")
        rows.append(
            ConsolidationStep(
                phase=s.phase,
                targets=n,
                names=list(s.per_target_tps),
                measured_tps=s.measured_tps,
                ideal_tps=ideal,
                ratio=s.measured_tps / ideal if s.complete and ideal and s.measured_tps is not None else None,
                per_target_tps=s.per_target_tps,
                complete=s.complete,
                usl_tps=usl.predict(n) if usl is not None else None,
                note="; ".join(notes) or None,
            )
        )
    below = next((r.targets for r in rows if r.ratio is not None and r.ratio < threshold), None)
    return ConsolidationTable(
        workload=workload, clients=clients, threshold=threshold, steps=rows, below_threshold_at=below, usl=usl
    )


def _point_tps(target: TargetResult, phase: int, workload: str, clients: int | None) -> tuple[float | None, bool]:
    """A target's mean tps over the repetitions of one point in one phase: None unless every run
    succeeded unclamped. Also whether every run started with the phase's other targets."""
    runs = [w for w in target.workloads if w.phase == phase and w.name == workload and nominal_clients(w) == clients]
    ok = [w for w in runs if w.status == "succeeded" and w.tps is not None and not is_clamped(w)]
    together = all(w.barrier is None or w.barrier.all_arrived for w in runs)
    if not runs or len(ok) != len(runs):
        return None, together
    return fmean([w.tps for w in ok if w.tps is not None]), together


def consolidation_tables(
    phases: Sequence[tuple[int, list[str]]], targets: list[TargetResult], threshold: float
) -> list[ConsolidationTable]:
    """One table per workload point (workload x clients per target), from the phases' runs."""
    by_name = {t.name: t for t in targets}
    keys = list(dict.fromkeys((w.name, nominal_clients(w)) for t in targets for w in t.workloads if w.phase is not None))
    tables = []
    for workload, clients in keys:
        steps = []
        for phase, names in phases:
            measured = {name: _point_tps(by_name[name], phase, workload, clients) for name in names if name in by_name}
            steps.append(
                StepTotals(
                    phase=phase,
                    per_target_tps={n: tps for n, (tps, _) in measured.items()},
                    together=all(together for _, together in measured.values()),
                )
            )
        tables.append(consolidation_table(workload, clients, steps, threshold))
    return tables


__all__ = ["StepTotals", "consolidation_table", "consolidation_tables"]
