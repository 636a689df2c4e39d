"""How long a campaign takes with `pgarena run --local`, beside the AWS wall time the cost guard prices.

Locally there is no Fargate start-up (45 s a task in AWS): a worker is a process, a load goes over
the loopback, and the steps wait only for the state machine's polling. The constants were measured
on the 2-core development machine with examples/local-demo.json (12 steps, 171 s measured).
"""

from __future__ import annotations

from pgarena.model.plan import Plan, Step
from pgarena.planning.cost import CLEANUP_S, expected_work_s, init_size, makespan

LOCAL_CAMPAIGN_FIXED_S = 8.0  # the moto server, Validate And Plan, the cost check, Aggregate And Rank, the reports
LOCAL_TARGET_FIXED_S = 3.5  # a target pass's preflight and lease release
LOCAL_STEP_OVERHEAD_S = 3.5  # a worker process's start and uploads, the state machine's transitions and polling
LOCAL_INIT_PER_SIZE_S = 1.0  # per pgbench scale unit (100,000 rows) or sysbench equivalent, over the loopback
EMBEDDED_START_S = 3.0  # initdb and start of one embedded server


def local_step_s(step: Step) -> float:
    """One step's expected time on this machine: the tool's run (every probe of an SLO search), or a load."""
    if step.kind == "run":
        work = expected_work_s(step)
    elif step.kind == "init":
        work = LOCAL_INIT_PER_SIZE_S * init_size(step)
    else:
        work = CLEANUP_S / 3  # dropping tables without a network in between
    return LOCAL_STEP_OVERHEAD_S + work


def local_wall_s(plan: Plan, embedded_targets: int) -> float:
    """The campaign's expected wall time locally: phases one after the other, each running its targets
    `concurrency` at a time, after the embedded servers have started."""
    return (
        LOCAL_CAMPAIGN_FIXED_S
        + EMBEDDED_START_S * embedded_targets
        + sum(
            makespan([LOCAL_TARGET_FIXED_S + sum(local_step_s(s) for s in t.steps) for t in phase.targets], phase.concurrency)
            for phase in plan.phases
        )
    )
