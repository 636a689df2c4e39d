"""A worker task that ran and stopped mid-step fails its step at once, whatever ECS's stop code (issue 34,
finding 4): task_stopped finds the step in the worker's slot (pgarena.aws.worker_slots, a moto table here),
which names the task its worker runs in and the step and token it holds; a worker that held no step is
left alone."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from pgarena.aws.deployment import rule_pattern
from pgarena.aws.executions import StepFunctionsExecutions
from pgarena.aws.task_stopped import TaskStateChange, matches, stopped_worker
from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.campaign.stopped_worker import fail_step
from pgarena.model.errors import ErrorKind
from pgarena.model.plan import Step
from pgarena.model.warm import Assignment, WorkerSlot
from pgarena.planning.shards import shard
from tests.unit.test_warm_workers import TABLE, aws, sweep

__all__ = ["aws"]  # the moto fixture, shared

CLUSTER = "arn:aws:ecs:us-east-1:111122223333:cluster/PgarenaCluster"
TASK = "arn:aws:ecs:us-east-1:111122223333:task/PgarenaCluster/0123"
SLOT = WorkerSlot(campaign_id="c1", phase=1, target=0, shard=0)


def _steps() -> list[Step]:
    return [shard(step).shards[0] for step in sweep(targets=1, repetitions=1, workers=1).phases[0].targets[0].steps]


def _stop(first: Step, first_token: str, stop_code: str = "EssentialContainerExited", **detail: Any) -> TaskStateChange:
    """ECS's state change for the task started with `first` (its slot SLOT), which ran and stopped."""
    environment = {
        "PGARENA_STEP": first.model_dump_json(),
        "PGARENA_TASK_TOKEN": first_token,
        "PGARENA_WORKER_SLOT": SLOT.model_dump_json(),
        "RESULTS_TABLE": TABLE,
        "RESULTS_REGION": "us-east-1",
        **detail.pop("environment", {}),
    }
    return TaskStateChange.model_validate(
        {
            "detail": {
                "clusterArn": CLUSTER,
                "taskArn": TASK,
                "lastStatus": "STOPPED",
                "startedBy": "pgarena",
                "stopCode": stop_code,
                "stoppedReason": "Essential container in task exited",
                "startedAt": "2026-11-27T10:00:00Z",
                "containers": [{"name": "worker", "exitCode": 137}],
                "overrides": {
                    "containerOverrides": [
                        {"name": "worker", "environment": [{"name": k, "value": v} for k, v in environment.items()]}
                    ]
                },
                **detail,
            }
        }
    )


def _warm_worker_on_step_3(slots: DynamoWorkerSlots, steps: list[Step]) -> None:
    """A worker started by RunTask (TASK) for step 0, which served it, then claimed step 3."""
    assert slots.launching(SLOT, Assignment(step=steps[0], task_token="token-0", last=False))
    slots.started(SLOT, "token-0", TASK)
    assert slots.register(SLOT, "w1")
    slots.finishing(SLOT, "w1")
    assert slots.idle(SLOT, "w1")
    offered = slots.offer(SLOT, Assignment(step=steps[3], task_token="token-3", last=False))
    assert offered is not None and slots.claim(SLOT, "w1", offered.seq)


def _reader(slots: DynamoWorkerSlots):
    def read(region, table, slot):
        assert (region, table) == ("us-east-1", TABLE)  # the home table the task's overrides name
        return slots.read(slot)

    return read


@pytest.mark.parametrize("stop_code", ["EssentialContainerExited", "UserInitiated", "SpotInterruption", "TerminationNotice"])
def test_a_warm_worker_that_stops_mid_step_fails_the_step_its_slot_holds(aws, stop_code):
    # Given a warm worker busy on step 3 (it was started for step 0)
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    steps = _steps()
    _warm_worker_on_step_3(slots, steps)
    # When its task stops, whatever the stop code
    worker = stopped_worker(_stop(steps[0], "token-0", stop_code), _reader(slots))
    # Then step 3 is failed, with its own token (not the one the task was started with), as worker_lost
    assert worker is not None
    assert (worker.step_id, worker.task_token, worker.task_arn) == (steps[3].step_id, "token-3", TASK)
    assert worker.error.kind == ErrorKind.WORKER_LOST
    assert f"stopped while its step ran ({stop_code})" in worker.error.message
    assert "exit code 137" in worker.error.message
    # And the rule on the cluster takes the stop: its pattern does not filter on stop code or start
    assert matches(rule_pattern(CLUSTER), {"source": "aws.ecs", "detail-type": "ECS Task State Change", **_raw(worker)})


def _raw(worker) -> dict[str, Any]:
    return {"detail": {"clusterArn": CLUSTER, "lastStatus": "STOPPED", "startedBy": "pgarena", "taskArn": worker.task_arn}}


def test_a_worker_that_held_no_step_is_left_alone(aws):
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    steps = _steps()
    _warm_worker_on_step_3(slots, steps)
    slots.finishing(SLOT, "w1")
    assert slots.idle(SLOT, "w1")
    # Idle between steps (its step answered)
    assert stopped_worker(_stop(steps[0], "token-0"), _reader(slots)) is None
    # Gone from its slot (after its last step, its idle time-out)
    assert slots.leave(SLOT, "w1", "last_step")
    assert stopped_worker(_stop(steps[0], "token-0"), _reader(slots)) is None


def test_a_worker_replaced_at_its_slot_is_left_alone(aws):
    # Given the slot's step handed to another task (the first was taken for dead between steps)
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    steps = _steps()
    _warm_worker_on_step_3(slots, steps)
    assert slots.launching(SLOT, Assignment(step=steps[4], task_token="token-4", last=False))
    slots.started(SLOT, "token-4", "arn:aws:ecs:us-east-1:111122223333:task/PgarenaCluster/other")
    # When the first task's stop comes / Then the new worker's step is not failed
    assert stopped_worker(_stop(steps[0], "token-0"), _reader(slots)) is None


def test_a_worker_that_died_before_taking_its_first_step_fails_it(aws):
    # Given a task RunTask started for step 0 that stopped before its worker registered at the slot
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    steps = _steps()
    assert slots.launching(SLOT, Assignment(step=steps[0], task_token="token-0", last=False))
    # When its stop comes before the launch function recorded the task, and after
    before = stopped_worker(_stop(steps[0], "token-0"), _reader(slots))
    slots.started(SLOT, "token-0", TASK)
    after = stopped_worker(_stop(steps[0], "token-0"), _reader(slots))
    # Then step 0 fails either way
    assert before is not None and after is not None
    assert {(w.step_id, w.task_token, w.error.kind) for w in (before, after)} == {(steps[0].step_id, "token-0", "worker_lost")}


def test_a_worker_killed_while_finishing_fails_its_step_unless_it_answered(aws):
    # Given a worker about to answer step 3 (its summary written, its beat renewed)
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    steps = _steps()
    _warm_worker_on_step_3(slots, steps)
    slots.finishing(SLOT, "w1")
    worker = stopped_worker(_stop(steps[0], "token-0"), _reader(slots))
    assert worker is not None and worker.task_token == "token-3"
    # When Step Functions refuses the failure (the worker answered before it died) / Then that is no error
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    with Stubber(sfn) as stub:
        stub.add_client_error("send_task_failure", service_error_code="TaskTimedOut")
        assert fail_step(worker, lambda region: StepFunctionsExecutions(sfn)).failed is False
    # And otherwise it fails the step as WorkerLost, which the campaign reads back as worker_lost
    with Stubber(sfn) as stub:
        stub.add_response("send_task_failure", {}, {"taskToken": "token-3", "error": "WorkerLost", "cause": worker.error.cause()})
        assert fail_step(worker, lambda region: StepFunctionsExecutions(sfn)).failed is True


def test_a_preflight_worker_that_stops_mid_preflight_fails_the_preflight(aws):
    # Given a worker started for its target's preflight on its site, registered at shard 0's slot
    slots = DynamoWorkerSlots(aws.dynamodb, TABLE)
    steps = _steps()
    assert slots.register(SLOT, "w1")
    preflight = json.dumps({"kind": "preflight", "step_id": "t0/preflight"})
    # When its task stops / Then the preflight's token (the task's own) is failed
    change = _stop(steps[0], "preflight-token", environment={"PGARENA_STEP": preflight})
    worker = stopped_worker(change, _reader(slots))
    assert worker is not None and worker.task_token == "preflight-token"


def test_a_slot_that_cannot_be_read_fails_the_tasks_first_step(aws):
    # Given a site's function that may not read the home table
    def denied(region, table, slot):
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetItem")

    steps = _steps()
    # When its worker's task stops / Then the step it was started with is failed (refused if answered)
    worker = stopped_worker(_stop(steps[0], "token-0"), denied)
    assert worker is not None and worker.task_token == "token-0"
