"""Where preflight runs: at home in the preflight function, or, for a target on a site that is not home (a
worker site's region, an external site), as a worker task on that site, launched as a step is, answering the
task token with preflight's answer. The state machine chooses by the phase's `on_site` indices."""

import json
from pathlib import Path

import pytest

from pgarena.aws.launch import EcsLauncher
from pgarena.aws.settings import STEP_VAR
from pgarena.campaign.launch import launch_preflight
from pgarena.campaign.step.slot import Seat, serve_slot
from pgarena.model.errors import RAISED, ErrorInfo, ErrorKind, InvalidMatrix, error_name
from pgarena.model.plan import PREFLIGHT_HEARTBEAT_TIMEOUT_S, PREFLIGHT_TIMEOUT_S, PlanRef, PreflightTask, TargetRef, is_preflight
from pgarena.model.sites import SiteMap
from pgarena.model.warm import WorkerSlot
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.unit.test_campaign_use_cases import MemoryRecords, MemoryStore
from tests.unit.test_external_sites import EXTERNAL_ENV, GCP, RecordingEcs
from tests.unit.test_sites import FAR, HOME, environment, matrix

ASL = Path(__file__).resolve().parents[2] / "statemachines" / "campaign.asl.json"
SITES = SiteMap(home_region=HOME, regions=frozenset({FAR}), external=frozenset({GCP}))


def target_states() -> dict:
    asl = json.loads(ASL.read_text())
    return asl["States"]["Run Phases In Order"]["ItemProcessor"]["States"]["Benchmark Targets"]["ItemProcessor"]


def test_the_plan_lists_the_targets_preflighted_on_their_site_in_each_phase():
    # Given targets at home, in the home region, in a worker site's region and on an external site
    plan = plan_campaign(parse_campaign(matrix(None, {"region": HOME}, {"region": FAR}, {"site": GCP})), "c1")

    # When Validate And Plan answers with the stack's sites
    (phase,) = PlanRef.of(plan, SITES).phases

    # Then only the site's targets are listed, by their index in the phase (its order is shuffled): the
    # home region is home
    names = [t.name for t in plan.phases[0].targets]
    assert phase.on_site == sorted([names.index("t2"), names.index("t3")])
    assert PlanRef.of(plan).phases[0].on_site == []  # no sites known: every preflight at home


def test_the_state_machine_sends_a_site_s_target_to_a_worker_preflight_and_the_rest_to_the_function():
    processor = target_states()
    states = processor["States"]
    choice = states[processor["StartAt"]]

    # The choice reads the item's on_site flag, made from the phase's indices
    assert choice["Type"] == "Choice" and choice["Default"] == "Preflight Target"
    assert choice["Choices"] == [{"Variable": "$.on_site", "BooleanEquals": True, "Next": "Preflight On Site"}]
    asl = json.loads(ASL.read_text())
    benchmark = asl["States"]["Run Phases In Order"]["ItemProcessor"]["States"]["Benchmark Targets"]
    assert benchmark["ItemSelector"]["on_site.$"] == "States.ArrayContains($.on_site, $$.Map.Item.Value)"

    # On site: the launch function with a token and no step, its timers the model's
    on_site, home = states["Preflight On Site"], states["Preflight Target"]
    assert on_site["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken"
    assert on_site["Parameters"]["FunctionName"] == "${LaunchWorkerFunctionArn}"
    assert "step.$" not in on_site["Parameters"]["Payload"]
    assert (on_site["HeartbeatSeconds"], on_site["TimeoutSeconds"]) == (PREFLIGHT_HEARTBEAT_TIMEOUT_S, PREFLIGHT_TIMEOUT_S)

    # Both answer alike (name, steps), retry the same connection errors, and fail into the same release
    assert on_site["ResultSelector"] == {"name.$": "$.name", "steps.$": "$.steps"}
    assert home["ResultSelector"] == {"name.$": "$.Payload.name", "steps.$": "$.Payload.steps"}
    assert on_site["ResultPath"] == home["ResultPath"] == "$.preflight"
    assert on_site["Next"] == home["Next"] == "Run Steps In Order"
    assert on_site["Catch"] == home["Catch"]
    assert on_site["Retry"][-1] == home["Retry"][-1]
    assert "LaunchFailed" in on_site["Retry"][0]["ErrorEquals"]


def test_a_site_s_preflight_is_launched_there_as_a_warm_worker_of_shard_0():
    # Given a planned target on an external site
    store = MemoryStore()
    records = MemoryRecords(store)
    plan = plan_campaign(parse_campaign(matrix(None, {"site": GCP})), "c1")
    records.put_plan(plan, "e1")
    ecs = RecordingEcs()

    # When Preflight On Site launches it
    index = [t.name for t in plan.phases[0].targets].index("t1")
    ref = TargetRef(campaign_id="c1", phase=1, target=index)
    on_site = launch_preflight(ref, "token-1", records, EcsLauncher(ecs, EXTERNAL_ENV), SITES)  # type: ignore[arg-type]  # a stand-in with run_task only
    task, worker = on_site.task, on_site.worker

    # Then RunTask starts it on the site's machines, given the task token and the slot of the phase's shard 0
    (request,) = ecs.requests
    assert worker.endswith("task/home/1")
    assert request["launchType"] == "EXTERNAL"
    assert request["placementConstraints"][0]["expression"] == f"attribute:pgarena.site == {GCP}"
    env = environment(request)
    assert env["PGARENA_TASK_TOKEN"] == "token-1"
    assert WorkerSlot.model_validate_json(env["PGARENA_WORKER_SLOT"]) == WorkerSlot(
        campaign_id="c1", phase=1, target=index, shard=0
    )
    assert env["PGARENA_LAST_STEP"] == "false"

    # And what it carries is the preflight, read back as the worker reads it
    assert is_preflight(env[STEP_VAR]) and not is_preflight('{"kind": "run"}') and not is_preflight("not json")
    carried = PreflightTask.model_validate_json(env[STEP_VAR])
    assert carried == task and carried.ref == ref and (carried.target, carried.site) == ("t1", GCP)


def test_a_target_the_stack_now_calls_home_is_refused_as_an_invalid_matrix():
    store = MemoryStore()
    records = MemoryRecords(store)
    records.put_plan(plan_campaign(parse_campaign(matrix({"region": HOME})), "c1"), "e1")
    launcher = EcsLauncher(RecordingEcs(), EXTERNAL_ENV)  # type: ignore[arg-type]  # a stand-in with run_task only
    with pytest.raises(InvalidMatrix, match="the stack has no site for its placement"):
        launch_preflight(TargetRef(campaign_id="c1", phase=1, target=0), "t", records, launcher, SITES)


def test_a_worker_names_a_failure_as_the_function_s_exception_would():
    # The state machine's Retry and Catch match the Lambda's errorType: the exception's name
    for kind, cls in RAISED.items():
        assert error_name(kind) == cls.__name__
    assert error_name("budget_refused") == "BudgetRefused"


class Slots:
    """A slot's calls, recorded; offers none."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def finishing(self, slot, worker):
        self.calls.append("finishing")

    def leave(self, slot, worker, why):
        self.calls.append(f"leave {why}")
        return True

    def idle(self, slot, worker):
        self.calls.append("idle")
        return False

    def read(self, slot):
        self.calls.append("read")
        return None  # another worker holds it now: no step waited for


SLOT = WorkerSlot(campaign_id="c1", phase=1, target=0, shard=0)


def _no_hard_stop() -> None:
    raise AssertionError("the hard stop fired")


def test_a_worker_whose_preflight_failed_leaves_its_slot_and_waits_for_no_step():
    slots = Slots()
    served = []
    code = serve_slot(
        lambda finishing: ErrorInfo(kind=ErrorKind.BUDGET_REFUSED, message="refused"),
        Seat(SLOT, slots, "w1", exit_now=_no_hard_stop),  # type: ignore[arg-type]  # the calls serve_slot makes
        lambda assignment, n, finishing: served.append(assignment),
    )
    assert code == 1 and served == [] and slots.calls == ["leave preflight_failed"]


def test_a_worker_whose_preflight_passed_renews_its_slot_then_waits_there_for_the_first_step():
    slots = Slots()

    def preflight(finishing):
        finishing()  # before answering: the first step's offer finds it live
        return None

    seat = Seat(SLOT, slots, "w1", exit_now=_no_hard_stop)  # type: ignore[arg-type]  # the calls serve_slot makes
    code = serve_slot(preflight, seat, lambda assignment, n, finishing: None)
    assert code == 0 and slots.calls == ["finishing", "idle", "read"]
