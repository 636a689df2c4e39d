"""The most workers a plan has running at once: what the account's Fargate vCPU and Lambda concurrency
quotas must allow (pgarena.aws.quotas). Pure."""

from __future__ import annotations

from pgarena.model.plan import Plan, PlannedTarget
from pgarena.planning.shards import shard


def target_peak(target: PlannedTarget) -> int:
    """A target's largest step, in workers: its steps run one after the other, each step's shards together."""
    return max((len(shard(step).shards) for step in target.steps), default=0)


def peak_workers(plan: Plan) -> int:
    """Workers at once: in each phase, its `concurrency` largest targets together; the largest phase."""
    peaks = []
    for phase in plan.phases:
        largest = sorted((target_peak(t) for t in phase.targets), reverse=True)
        peaks.append(sum(largest[: phase.concurrency]))
    return max(peaks, default=0)
