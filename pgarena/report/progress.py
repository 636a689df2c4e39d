"""Live progress in a campaign's terms: which target, workload, client count and repetition a step is,
its place among the campaign's steps, and the time left; never the state machine's state names.

Pure: the CLI feeds it the state machine's events (a worker task entered, a step's summary) and prints
what it returns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pgarena.model.plan import Plan, Step
from pgarena.model.results import StepSummary

# A sharded step's workers are its own id with /s<n>: progress counts the step once.
_SHARD = re.compile(r"/s\d+$")


class StepLike(Protocol):
    """What a planned step and a step's summary both say about the step."""

    @property
    def target(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def clients(self) -> int | None: ...
    @property
    def repetition(self) -> int: ...


def step_label(step: StepLike, repetitions: int, phase: int | None = None, adaptive: bool = False) -> str:
    """'target tuned · tpcb · 16 clients · repetition 2/5' ('load' and 'cleanup' for the other kinds); an
    adaptive campaign's repetitions are its phases, run while needed: 'phase 4 of up to 12'."""
    parts = [f"phase {phase}"] if phase is not None else []
    parts += [f"target {step.target}", step.workload]
    if step.kind == "init":
        parts.append("load")
    elif step.kind == "cleanup":
        parts.append("cleanup")
    else:
        if step.clients is not None:
            parts.append(f"{step.clients} client{'s' * (step.clients != 1)}")
        if adaptive:
            parts.append(f"phase {step.repetition} of up to {repetitions}")
        elif repetitions > 1:
            parts.append(f"repetition {step.repetition}/{repetitions}")
    return " · ".join(parts)


def left_text(seconds: float | None) -> str:
    """'~3 min left', '~40 s left'; '' while there is nothing to go on."""
    return "" if seconds is None else f"~{_amount(seconds)} left"


def _amount(seconds: float) -> str:
    """'3 min', '40 s': left_text's figure."""
    seconds = max(0.0, seconds)
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{max(5, round(seconds / 5) * 5):.0f} s"


def left_range_text(least_s: float | None, most_s: float | None) -> str:
    """An adaptive campaign's time left: '~40 s-6 min left' when the phases still to decide may add time,
    one figure when both ends read the same; each end in its own unit."""
    most = left_text(most_s)
    if least_s is None or most_s is None or left_text(least_s) == most:
        return most
    least, upper = _amount(least_s), _amount(most_s)
    if least.endswith(" min") and upper.endswith(" min"):
        return f"~{least.removesuffix(' min')}-{upper} left"
    if least.endswith(" s") and upper.endswith(" s"):
        return f"~{least.removesuffix(' s')}-{upper} left"
    return f"~{least}-{upper} left"


def time_left_s(
    elapsed_s: float, done_s: float, total_s: float, planned_wall_s: float | None, steps_from_s: float = 0.0
) -> float | None:
    """Time left, at the pace measured so far: the planned seconds still to run, scaled by how long the
    finished ones took (since the first step started, `steps_from_s`: servers starting are not a pace)
    against their plan (parallel targets, a slow machine). Before any step has finished, the planned
    wall time minus what has passed."""
    if done_s > 0:
        return (total_s - done_s) * max(0.0, elapsed_s - steps_from_s) / done_s
    if planned_wall_s is not None:
        return planned_wall_s - elapsed_s
    return None


def result_text(summary: StepSummary) -> str:
    """A finished step's figures: tps (and tps at SLO), a load's time, or its error."""
    if summary.error is not None:
        return f"{summary.error.kind}: {summary.error.message}"
    figure = f"{summary.tps:,.1f} tps" if summary.tps is not None else ""
    if not figure and summary.load_s:
        figure = f"loaded in {summary.load_s:.2f} s"
    slo = summary.slo
    if slo is not None and slo.slo_tps is not None:  # the search's answer, not only its ceiling
        figure += f", {slo.slo_tps:,.1f} tps at p{slo.percentile} <= {slo.limit_ms:g} ms"
    return figure


def logical_step_id(worker_id: str) -> str:
    return _SHARD.sub("", worker_id)


@dataclass
class CampaignProgress:
    """Where a campaign stands: fed the steps as they start and finish, it says 'step 7 of 22, ~3 min left'.
    Without a plan (a resume's re-runs) it still names each step from its summary."""

    plan: Plan | None = None
    step_s: Callable[[Step], float] | None = None  # a step's expected seconds (local or in AWS)
    planned_wall_s: float | None = None
    numbers: dict[str, int] = field(default_factory=dict)  # step id -> its place, in the order steps started
    done: set[str] = field(default_factory=set)
    first_started_s: float | None = None  # when the first step started: the pace is measured from there
    steps: dict[str, Step] = field(init=False)
    planned_s: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.steps = {s.step_id: s for t in self.plan.targets for s in t.steps} if self.plan else {}
        self.planned_s = {i: self.step_s(s) if self.step_s else 1.0 for i, s in self.steps.items()}

    def _label(self, step_id: str, summary: StepSummary | None = None) -> str:
        step = self.steps.get(step_id)
        repetitions = self.plan.repetitions if self.plan else 1
        if step is not None:
            return step_label(step, repetitions, step.phase, adaptive=bool(self.plan and self.plan.adaptive))
        if summary is not None:  # not in the plan (a resume's re-run): its repetition count is not known
            return step_label(summary, 1)
        return step_id

    def _place(self, step_id: str) -> str:
        """'step 7 of 22': steps are numbered as they start."""
        number = self.numbers.setdefault(step_id, len(self.numbers) + 1)
        if not self.steps:
            return f"step {number}"
        # An adaptive campaign's steps are planned to its maximum: the phases past min may not run.
        return f"step {number} of {'up to ' if self.plan and self.plan.adaptive else ''}{len(self.steps)}"

    def _left(self, elapsed_s: float) -> str:
        done_s = sum(self.planned_s.get(s, 0.0) for s in self.done)
        total_s = sum(self.planned_s.values())
        most = time_left_s(elapsed_s, done_s, total_s, self.planned_wall_s, self.first_started_s or 0.0)
        if not (self.plan and self.plan.adaptive) or done_s <= 0:
            return left_text(most)
        # An adaptive campaign's phases past the ones begun (and past min) run only while needed: the least
        # left is the steps of those phases, the most every step to max.
        begun = [self.steps[i].repetition for i in self.numbers if i in self.steps]
        reached = max([self.plan.min_repetitions or 1, *begun])
        least_total = sum(v for i, v in self.planned_s.items() if self.steps[i].repetition <= reached)
        least = time_left_s(elapsed_s, done_s, least_total, None, self.first_started_s or 0.0)
        return left_range_text(least, most)

    def _slo_probes(self, step_id: str) -> int | None:
        step = self.steps.get(step_id)
        return step.spec.slo.probes if step is not None and step.spec.slo is not None else None

    def started(self, worker_id: str, elapsed_s: float) -> str:
        """The running step's line (a status line, replaced by the next): 'target tuned · tpcb · 16 clients ·
        repetition 2/5 — step 7 of 22, ~3 min left'."""
        step_id = logical_step_id(worker_id)
        if self.first_started_s is None:
            self.first_started_s = elapsed_s
        line = f"{self._label(step_id)} — {self._place(step_id)}"
        left = self._left(elapsed_s)
        probes = self._slo_probes(step_id)
        search = f" · SLO search: ceiling run, then up to {probes} probes" if probes else ""
        return f"{line}, {left}{search}" if left else f"{line}{search}"

    def probing(self, worker_id: str, probes: int, elapsed_s: float) -> str:
        """The running SLO search's line, counting the probes it has finished."""
        step_id = logical_step_id(worker_id)
        most = self._slo_probes(step_id)
        counted = f"{probes} of up to {most}" if most else str(probes)
        left = self._left(elapsed_s)
        return f"{self._label(step_id)} — {self._place(step_id)}{', ' + left if left else ''} · SLO search: {counted} probes done"

    def finished(self, summary: StepSummary, elapsed_s: float) -> str:
        """The step's own line with its result: 'target tuned · tpcb · 4 clients · repetition 2/5 — step 7 of
        22: 3,749.4 tps (~2 min left)'."""
        step_id = logical_step_id(summary.step_id)
        self.done.add(step_id)
        left = self._left(elapsed_s) if len(self.done) < len(self.steps) else ""
        line = f"{self._label(step_id, summary)} — {self._place(step_id)}: {result_text(summary)}"
        return f"{line} ({left})" if left else line
