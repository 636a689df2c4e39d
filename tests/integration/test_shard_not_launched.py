"""Issue 26.3: a sharded step one of whose shards ECS never starts ends `degraded` once the others have
waited at the start barrier as long as a cold start may take (heartbeat_timeout_s), never as a whole-step timeout."""

import json

import pytest

from pgarena.aws.launch import container_environment
from pgarena.aws.settings import STEP_VAR
from pgarena.local.endpoints import EcsEndpoint
from pgarena.local.runtime import run_local
from pgarena.model.errors import ErrorKind
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

# The survivor waits this long at the barrier: the shortest heartbeat timeout a worker starved of CPU on a
# loaded 2-core machine still beats within (test_faults.py's lost-worker campaign), not a cold start's 300 s.
MATRIX = {
    "campaign": "shard-not-launched",
    "heartbeat_timeout_s": 20,
    "connections": {"monitor_interval_s": 1},
    "targets": [{"name": "pg", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 4, "jobs": 1, "duration_s": 3, "progress_s": 1, "workers": 2},
        }
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    # Given ECS refusing every launch of the run's second shard, as it does without Fargate capacity
    refused = []
    launch = EcsEndpoint.run_task

    def run_task(self, request, *where):  # RunTask's request, and where it was sent
        step = json.loads(container_environment(request["overrides"])[STEP_VAR])
        if step["shards"] > 1 and step["shard"] == 1:
            refused.append(step["step_id"])
            return {"tasks": [], "failures": [{"arn": "arn:aws:ecs:task", "reason": "RESOURCE:MEMORY"}]}
        return launch(self, request, *where)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(EcsEndpoint, "run_task", run_task)
        # launch_worker's own retries on capacity are tested apart (test_launch): here one RunTask per attempt
        patch.setattr("pgarena.aws.launch.LAUNCH_ATTEMPTS", 1)
        # When the campaign runs
        result = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("results"))
    assert refused, "the second shard was never launched"
    return result


def test_the_step_is_degraded_with_the_launch_failure_and_not_timed_out(run):
    assert run.status == "SUCCEEDED", run.error
    (target,) = run.results.targets
    (workload,) = target.workloads
    # Then the run succeeded on the shard that started, degraded, naming the one that never did
    assert workload.status == "succeeded" and workload.degraded
    assert workload.error.kind == ErrorKind.DEGRADED and "covers 2 of 4 clients" in workload.error.message
    survivor, missing = workload.shards
    assert survivor.status == "succeeded" and survivor.tps > 0
    assert missing.status == "failed" and missing.error.kind == ErrorKind.LAUNCH_FAILED
    assert "RESOURCE:MEMORY" in missing.error.message


def test_the_survivor_started_alone_after_the_barrier_s_wait(run):
    (workload,) = run.results.targets[0].workloads
    survivor = workload.shards[0]
    # The barrier gave up on the missing shard (its wait is the heartbeat timeout), then the run went on
    assert survivor.barrier is not None and not survivor.barrier.all_arrived
    assert survivor.barrier.released_epoch >= survivor.barrier.start_epoch
