"""The outcomes the state machine's Maps used to return, rebuilt from what it recorded (outcome items
in the results table, each preflight's answer). Pure."""

from __future__ import annotations

import json
from typing import Any

from pgarena.model import layout
from pgarena.model.outcomes import StepOutcome, TargetOutcome
from pgarena.model.plan import Plan, PreflightResult


def _failure(item: dict[str, Any] | None) -> dict[str, Any] | None:
    text = (item or {}).get(layout.OUTCOME_FAILURE_ATTRIBUTE)
    if not text:
        return None
    try:
        failure: dict[str, Any] = json.loads(text)
    except ValueError:
        return {"Error": "States.Runtime", "Cause": str(text)}
    return failure


def target_outcomes(
    plan: Plan, preflights: dict[tuple[int, int], PreflightResult], items: dict[str, dict[str, Any]]
) -> list[TargetOutcome]:
    """The outcomes the state machine's Maps used to return, rebuilt from what it recorded. Pure.

    A target has an outcome once preflight answered or a target item was written. Its steps are
    preflight's shards: failed where a shard item records the Catch's failure; succeeded when the
    target finished (every shard either succeeded or was recorded failed); otherwise unknown (the
    execution stopped meanwhile: the workers' summaries tell)."""
    outcomes = []
    for phase in plan.phases:
        for index, planned in enumerate(phase.targets):
            pre = preflights.get((phase.phase, index))
            item = items.get(layout.outcome_target_sk(phase.phase, index))
            if pre is None and item is None:
                continue
            finished = item is not None and _failure(item) is None
            steps = []
            for s, group in enumerate(pre.steps if pre else []):
                for k, shard in enumerate(group.shards):
                    failed = _failure(items.get(layout.outcome_shard_sk(phase.phase, index, s, k)))
                    if failed is not None:
                        steps.append(StepOutcome(step_id=shard.step_id, status="failed", failure=failed))
                    elif finished:
                        steps.append(StepOutcome(step_id=shard.step_id, status="succeeded"))
            outcomes.append(
                TargetOutcome(
                    name=planned.name,
                    server=pre.server if pre else None,
                    steps=steps,
                    failure=_failure(item),
                    phase=phase.phase,
                )
            )
    return outcomes
