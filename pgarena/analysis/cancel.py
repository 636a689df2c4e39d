"""A cancelled campaign still ends with a results.json: what finished, and what the cancellation stopped.

When an execution is stopped (Ctrl-C locally, StopExecution in AWS) Aggregate And Rank never runs.
finalize_stopped reads back what the execution had recorded (pgarena.aws.campaign_state: the plan,
each target's outcome where the target had finished, its preflight where it had got that far) and
the workers' summaries; here every step that did not finish is `cancelled`. Pure.
"""

from __future__ import annotations

import json

from pgarena.model.errors import ErrorKind
from pgarena.model.outcomes import StepOutcome, TargetOutcome
from pgarena.model.plan import Plan
from pgarena.model.results import StepSummary

CANCELLED_KIND = ErrorKind.CANCELLED
CANCELLED_MESSAGE = "the campaign was cancelled before this step finished"
STOPPED_MESSAGE = "the campaign was cancelled while this step ran: its worker was stopped, its output until then kept"
# What a worker records when it is stopped (pgarena.worker): here, it was stopped by the cancellation.
WORKER_STOPPED_KIND = ErrorKind.WORKER_STOPPED


def stopped_outcomes(
    plan: Plan, outcomes: list[TargetOutcome], summaries: list[StepSummary]
) -> tuple[list[TargetOutcome], list[StepSummary]]:
    """Every planned step accounted for: finished ones as they ended, the rest `cancelled` (the execution
    stopped before they finished). A worker stopped by the cancellation says so."""
    summaries = [_cancelled(s) for s in summaries]
    cause = json.dumps({"errorType": CANCELLED_KIND, "errorMessage": CANCELLED_MESSAGE})
    failure = {"Error": CANCELLED_KIND, "Cause": cause}
    # Steps accounted for: a worker wrote their summary, or a finished target's outcome lists them.
    known = {s.step_id for s in summaries} | {step.step_id for outcome in outcomes for step in outcome.steps}
    failed_targets = {outcome.name for outcome in outcomes if outcome.failure}
    completed = list(outcomes)
    for target in plan.targets:
        if target.name in failed_targets:  # failed before its steps (preflight): they are not_run, not cancelled
            continue
        steps = [
            StepOutcome(step_id=step.step_id, status="failed", failure=failure)
            for step in target.steps
            if step.step_id not in known and not any(i.startswith(f"{step.step_id}/s") for i in known)
        ]
        completed.append(TargetOutcome(name=target.name, steps=steps))
    return completed, summaries


def _cancelled(summary: StepSummary) -> StepSummary:
    if summary.error is None or summary.error.kind != WORKER_STOPPED_KIND:
        return summary
    error = summary.error.model_copy(update={"kind": CANCELLED_KIND, "message": STOPPED_MESSAGE})
    return summary.model_copy(update={"error": error})
