"""The access map against the code: every table and bucket call a component makes is granted by the map,
every grant is used, and no key prefix is spelled outside the map.

Each component's calls are recorded from its real code under moto (its handler where one can run
without a database; the functions the worker and preflight call otherwise), through a botocore hook
on the session every client is made from.
"""

from __future__ import annotations

import ast
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from pgarena.analysis.history.index import indexed_run
from pgarena.analysis.significance import MIN_RUNS
from pgarena.aws import access
from pgarena.aws.access import ACCESS, BUCKET_ACTIONS, Action, BucketGrant, Component, TableGrant, allows
from pgarena.aws.alerts import EventAlerts
from pgarena.aws.barrier import wait_at_barrier
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.cloudwatch import CloudWatchMetrics
from pgarena.aws.history_index import HistoryIndex
from pgarena.aws.items import marshal
from pgarena.aws.leases import LeaseStore
from pgarena.aws.ledger import Ledger
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.campaign.finalize import StoppedExecution, finalize_stopped
from pgarena.campaign.launch import launch, launch_preflight
from pgarena.campaign.leases import Request, holder_id, lease_key
from pgarena.campaign.ports import EndPorts
from pgarena.campaign.preflight import preflight
from pgarena.local.endpoints import LambdaContext
from pgarena.model import layout
from pgarena.model.errors import PgarenaError
from pgarena.model.history import HISTORY
from pgarena.model.plan import ShardRef, TargetRef
from pgarena.model.results import CampaignResults, PreflightOrigin, ProgressSample, StepSummary
from pgarena.model.sites import SiteMap
from pgarena.model.warm import WorkerSlot
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.report import REPORT_FILES
from pgarena.server.credentials import local_ca
from tests.conftest import FIXTURES
from tests.unit.test_campaign_state import preflight_result

REPO_ROOT = Path(__file__).resolve().parents[2]
BUCKET, TABLE, REGION = "results", "results", "us-east-1"
# Each recorded call: (action, the item's partition key or the object's key / the listing's prefix).
Call = tuple[str, str]
TRANSACT_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _partition(params: dict) -> str:
    if "Key" in params:
        return params["Key"][access.PARTITION_KEY]["S"]
    if "Item" in params:
        return params["Item"][access.PARTITION_KEY]["S"]
    return params["ExpressionAttributeValues"][":pk"]["S"]  # a query's partition


def _calls_of(operation: str, params: dict) -> list[Call]:
    """The IAM actions one API call needs, each with what it touches."""
    if operation == "TransactWriteItems":
        return [
            (f"dynamodb:{TRANSACT_ACTIONS[kind]}", _partition(body))
            for item in params["TransactItems"]
            for kind, body in item.items()
        ]
    if operation in {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query"}:
        return [(f"dynamodb:{operation}", _partition(params))]
    if operation == "ListObjectsV2":
        return [(Action.LIST_BUCKET, params.get("Prefix", ""))]
    if operation == "PutObject":
        tagged = [(Action.PUT_OBJECT_TAGGING, params["Key"])] if params.get("Tagging") else []
        return [(Action.PUT_OBJECT, params["Key"]), *tagged]
    if operation in {"GetObject", "HeadObject"}:  # HeadObject is authorized as GetObject
        return [(Action.GET_OBJECT, params["Key"])]
    return []  # not the table's or the bucket's (Step Functions, ECS)


class Recorder:
    def __init__(self, session: boto3.Session):
        self.calls: list[Call] = []
        self.recording = False
        session.events.register("provide-client-params.*.*", self._record)

    def _record(self, params: dict, model, **_) -> None:
        if self.recording and model.service_model.service_name == "cloudwatch":  # a service action: on "*"
            self.calls.append((f"cloudwatch:{model.name}", "*"))
        elif self.recording and params.get("TableName", TABLE) == TABLE and params.get("Bucket", BUCKET) == BUCKET:
            self.calls.extend((str(action), key) for action, key in _calls_of(model.name, params))

    def take(self) -> list[Call]:
        calls, self.calls = self.calls, []
        return calls


@pytest.fixture
def aws(monkeypatch) -> Iterator[Recorder]:
    for name, value in {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "RESULTS_BUCKET": BUCKET,
        "RESULTS_TABLE": TABLE,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "CRITICAL",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        # Handlers call boto3.client(): a fresh default session, hooked before any client is made.
        boto3.setup_default_session(region_name=REGION)
        recorder = Recorder(boto3.DEFAULT_SESSION)
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        create_results_table(boto3.client("dynamodb"), TABLE)
        yield recorder
    boto3.DEFAULT_SESSION = None


def _plan(campaign_id: str = "c1", placement: dict | None = None):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    if placement:
        data["targets"][0]["placement"] = placement
    data["targets"][0]["hourly_cost_usd"] = 1.0
    data["targets"][0]["cloudwatch"] = {"instance": "db-1"}  # finalize reads its runs' CloudWatch metrics
    data["targets"][0]["endpoint"]["port"] = 1  # nothing listens: preflight fails at once
    data["cost"] = {"monthly_cap_usd": 100.0}
    return plan_campaign(parse_campaign(data), campaign_id)


def _adaptive_plan(campaign_id: str = "c4"):
    """repetitions {min 2, max 3}: after phase 2, Decide More Phases evaluates the results so far."""
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["repetitions"] = {"min": 2, "max": 3}
    return plan_campaign(parse_campaign(data), campaign_id)


def _decisions(plan) -> dict:
    return {"min": 1, "max": plan.repetitions, "looks": [], "not_needed": []}


def _summary(step, **changes) -> StepSummary:
    fields = {
        "campaign_id": step.campaign_id,
        "step_id": step.step_id,
        "target": step.target,
        "workload": step.workload,
        "kind": step.kind,
        "tool": step.tool,
        "status": "succeeded",
        "started_at": "2026-11-22T12:00:00+00:00",
        "finished_at": "2026-11-22T12:00:10+00:00",
        "wall_s": 10.0,
    }
    return StepSummary(**{**fields, **changes})


class _Started:
    """ECS RunTask as the launch function sees it (no results call of its own)."""

    def launch(self, step, task_token, slot=None, last=True):
        return "arn:aws:ecs:us-east-1:123456789012:task/c/1", []


class _History:
    """The Executions port's history read (Step Functions' history is no part of the access map)."""

    def __init__(self, events):
        self.events = HISTORY.validate_python(events)

    def history(self, execution_arn):
        return self.events


def _stopped(name: str, ending, started_at: str) -> StoppedExecution:
    return StoppedExecution(f"arn:aws:states:us-east-1:123456789012:execution:m:{name}", ending, started_at)


def _handler(name: str):
    module = __import__(f"functions.{name}.handler", fromlist=["handler"])
    return lambda event: module.handler(event, LambdaContext(f"pgarena-{name}"))


def _index_earlier_runs(store: ResultStore, campaign: str, runs: int = 2 * MIN_RUNS) -> None:
    """Earlier runs of the campaign's name, indexed with their results.json: enough for finalize to read
    them back, looking for the change points its run finds first (pgarena.campaign.alerting)."""
    nightly = CampaignResults.model_validate_json((FIXTURES / "results" / "nightly" / "results.json").read_text())
    index = HistoryIndex(store.dynamodb, TABLE)
    for day in range(1, runs + 1):
        run = nightly.model_copy(
            update={"campaign": campaign, "campaign_id": f"earlier-{day}", "started_at": f"2026-11-{day:02d}T02:00:00.000+00:00"}
        )
        store.put_json(layout.results_key(run.campaign_id), json.loads(run.model_dump_json()))
        index.record(indexed_run(run, layout.results_key(run.campaign_id)))


def _record(aws: Recorder, component: Component, plan) -> list[Call]:  # noqa: C901, PLR0912, PLR0915  # one branch per component's calls, listed in full
    """Run `component`'s code as it runs in AWS and return its table and bucket calls (its setup, what
    the states before it kept, is not recorded)."""
    store = ResultStore(BUCKET, TABLE, s3=boto3.client("s3"), dynamodb=boto3.client("dynamodb"))
    state = CampaignState(store)
    target = plan.targets[0]
    load, run = target.steps
    aws.recording = False
    if component in {Component.AGGREGATE, Component.FINALIZE_STOPPED}:
        # An adaptive campaign's (repetitions {min, max}): its decisions are read back, its phases not needed left out.
        plan = plan.model_copy(update={"min_repetitions": 1})
        store.put_json(layout.decisions_key(plan.campaign_id), _decisions(plan))
    if component is Component.DECIDE:
        plan = _adaptive_plan()
        target = plan.phases[0].targets[0]
        load, run = target.steps
    if component is not Component.VALIDATE:
        state.put_plan(plan, "e1")
    started_at = "2026-11-22T12:00:00+00:00"
    if component in {Component.AGGREGATE, Component.FINALIZE_STOPPED, Component.DECIDE}:
        _handler("cost_guard")({"campaign_id": plan.campaign_id})
        for phase in plan.phases[:2]:  # an adaptive plan's phases past the first two have not run
            state.put_preflight(plan.campaign_id, phase.phase, 0, preflight_result(phase.targets[0]))
            store.dynamodb.put_item(
                TableName=TABLE,
                Item=marshal({"pk": access.OUTCOMES.pk(plan.campaign_id), "sk": layout.outcome_target_sk(phase.phase, 0)}),
            )
        # A shard's per-second series, which aggregate reads back to merge the shards; its progress series,
        # which the summary's item points to.
        series = store.put_json(f"{run.raw_prefix}/s0/series.json", {"start_epoch": 0.0, "end_epoch": 1.0, "seconds": []})
        store.put_summary(_summary(load))
        progress = [ProgressSample(elapsed_s=1.0, tps=10.0)]
        store.put_summary(_summary(run, step_id=f"{run.step_id}/s0", series=series, progress=progress))
    if component in {Component.RELEASE_LEASE, Component.AGGREGATE, Component.FINALIZE_STOPPED}:
        LeaseStore(store.dynamodb, TABLE).acquire(
            lease_key(target.endpoint), Request(holder_id(plan.campaign_id, target.name)), 5, 100, 60
        )
    slots, slot = DynamoWorkerSlots(store.dynamodb, TABLE), WorkerSlot(campaign_id=plan.campaign_id, phase=1, target=0, shard=0)
    if component is Component.LAUNCH_WORKER:
        state.put_preflight(plan.campaign_id, 1, 0, preflight_result(target))
        state.put_plan(_plan("c3", {"site": "gcp"}), "e3")  # a target preflighted on its site
    # An endpoint's CA bundle kept in the bucket (sslrootcert s3://...), which preflight and the worker fetch.
    ca = target.endpoint.model_copy(update={"sslrootcert": f"s3://{BUCKET}/{layout.CA_BUNDLE_PREFIX}{uuid.uuid4().hex}.pem"})
    if component in {Component.PREFLIGHT, Component.WORKER}:
        store.put_bytes(ca.sslrootcert.removeprefix(f"s3://{BUCKET}/"), b"-----BEGIN CERTIFICATE-----", "text/plain")
    if component in {Component.LAUNCH_WORKER, Component.RELEASE_LEASE, Component.AGGREGATE, Component.FINALIZE_STOPPED}:
        slots.register(slot, "w1")  # a warm worker, idle at its slot: handed a step, or its slot closed
        slots.idle(slot, "w1")
    if component is Component.AGGREGATE:  # its target's release closed the slot: aggregate reads when its worker left
        slots.leave(slot, "w1", "slot_closed")
        slots.close(slot, "target_finished")
    if component is Component.COST_GUARD:
        over_cap = _plan("c2").model_copy(update={"cost": plan.cost.model_copy(update={"cap_usd": 0.0001})})
        state.put_plan(over_cap, "e2")
    if component is Component.START_CAMPAIGN:
        boto3.client("s3").put_object(Bucket=BUCKET, Key=layout.matrix_key("nightly.json"), Body=b"{}")
    if component in {Component.AGGREGATE, Component.FINALIZE_STOPPED}:
        _index_earlier_runs(store, plan.campaign)
    aws.take()
    aws.recording = True
    if component is Component.VALIDATE:
        matrix = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
        matrix["targets"] = matrix["targets"][:1]  # the endpoint target: AWS plans have no embedded ones
        for _ in range(2):  # retried: the second finds the plan its own execution wrote
            _handler("validate")({"input": matrix, "execution_name": plan.campaign_id})
    elif component is Component.COST_GUARD:
        _handler("cost_guard")({"campaign_id": plan.campaign_id})
        _handler("cost_guard")({"campaign_id": "c2"})  # refused: recorded
    elif component is Component.PREFLIGHT:
        # preflight() reads the others' slots and takes its own (a live server is an integration test's)...
        leases = LeaseStore(store.dynamodb, TABLE)
        key, holder = lease_key(target.endpoint), holder_id(plan.campaign_id, target.name)
        leases.held_by_others(key, holder)
        leases.join(key, Request(holder))
        leases.acquire(key, Request(holder), 5, 100, 60.0)
        # ...the handler records the target it could not reach...
        with pytest.raises(PgarenaError):
            _handler("preflight")({"campaign_id": plan.campaign_id, "phase": 1, "target": 0})
        # ...and keeps the steps of one it reached, whose CA bundle it read to verify the server.
        state.put_preflight(plan.campaign_id, 1, 0, preflight_result(target))
        local_ca(ca)
    elif component is Component.LAUNCH_WORKER:
        # The shard's step, offered to the slot's worker, which never takes it: withdrawn, then ecs:RunTask
        # (not the results').
        ticks = iter(range(0, 1000, 5))
        ref = ShardRef(campaign_id=plan.campaign_id, phase=1, target=0, step=0, shard=0)
        launch(ref, "token", state, _Started(), slots, clock=lambda: float(next(ticks)), sleep=lambda s: None)
        # A target's preflight on its site: its placement from the plan, then ecs:RunTask there.
        sites = SiteMap(home_region="us-east-1", external=frozenset({"gcp"}))
        launch_preflight(TargetRef(campaign_id="c3", phase=1, target=0), "token", state, _Started(), sites)
    elif component is Component.RELEASE_LEASE:
        # Its lease back and the target's worker slots closed; retried (the state's Retry), it finds them closed.
        for _ in range(2):
            _handler("release_lease")({"campaign_id": plan.campaign_id, "phase": 1, "target": 0, "failed": True})
    elif component is Component.WORKER:
        # What the step use case (pgarena.campaign.step.run) does around its tool: raw output (tagged), the series, the barrier, the summary.
        local_ca(ca)  # the CA bundle its tool verifies the server with
        raw = store.put_file(f"{run.raw_prefix}/pgbench.log", FIXTURES.parent / "conftest.py")
        store.put_json(f"{run.raw_prefix}/summary.json", {})
        wait_at_barrier(store.dynamodb, TABLE, plan.campaign_id, "group", 0, 1, sleep=lambda s: None)
        store.put_summary(_summary(run, raw=[raw], progress=[ProgressSample(elapsed_s=1.0, tps=10.0)]))
        # A warm worker at its slot: registered, free, beating, waiting for a step, then leaving.
        slots.register(slot, "w1")
        slots.finishing(slot, "w1")
        slots.idle(slot, "w1")
        slots.beat(slot, "w1")
        slots.read(slot)
        slots.claim(slot, "w1", 1)
        slots.leave(slot, "w1", "last_step")
        # A later worker of the slot, which finds it closed: it does not register, or notes its leaving.
        slots.register(slot, "w2")
        slots.close(slot, "target_finished")  # what Release Connection Lease does (an update, as the worker's)
        slots.register(slot, "w3")
        slots.leave(slot, "w2", "slot_closed")
        # A target's preflight on its site (run._serve_preflight): what the preflight function does, the
        # others' slots read and its own taken, a target it could not reach recorded, one it reached kept.
        leases = LeaseStore(store.dynamodb, TABLE)
        key, holder = lease_key(target.endpoint), holder_id(plan.campaign_id, target.name)
        leases.held_by_others(key, holder)
        leases.join(key, Request(holder))
        leases.acquire(key, Request(holder), 5, 100, 60.0)
        origin = PreflightOrigin(site="eu-west-1", runner="worker", worker_id="w1")
        with pytest.raises(PgarenaError):
            preflight(TargetRef(campaign_id=plan.campaign_id, phase=1, target=0), store, state, leases, origin)
        state.put_preflight(plan.campaign_id, 1, 0, preflight_result(target))
    elif component is Component.AGGREGATE:
        _handler("aggregate")({"campaign_id": plan.campaign_id, "started_at": started_at})
    elif component is Component.DECIDE:
        for _ in range(2):  # retried: the second reads back the decision the first kept
            _handler("decide")({"campaign_id": plan.campaign_id, "through": 2, "started_at": started_at})
    elif component is Component.FINALIZE_STOPPED:
        matrix = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
        matrix["targets"] = matrix["targets"][:1]
        leases = LeaseStore(store.dynamodb, TABLE)
        ports = EndPorts(store, leases=leases)
        # stopped before Validate answered: is the id another campaign's?
        started = {"id": 1, "type": "ExecutionStarted", "executionStartedEventDetails": {"input": json.dumps(matrix)}}
        finalize_stopped(_stopped("c9", "failed", started_at), CampaignState(store), _History([started]), ports)
        # stopped after: what its states kept, read back
        started["executionStartedEventDetails"] = {"input": json.dumps({"campaign_id": plan.campaign_id, "matrix": matrix})}
        ports = EndPorts(
            store,
            Ledger(store.dynamodb, TABLE),
            leases,
            DynamoWorkerSlots(store.dynamodb, TABLE),
            HistoryIndex(store.dynamodb, TABLE),
            CloudWatchMetrics(lambda region: boto3.client("cloudwatch", region_name=region)),  # as the handler's
            EventAlerts(boto3.client("events"), "default", BUCKET),
        )
        for _ in range(2):  # EventBridge delivers at least once: the second finds the worker slots closed
            finalize_stopped(_stopped("e1", "cancelled", started_at), CampaignState(store), _History([started]), ports)
    elif component is Component.START_CAMPAIGN:
        sfn = boto3.client("stepfunctions")
        role = "arn:aws:iam::123456789012:role/sfn"
        machine = sfn.create_state_machine(
            name="m", definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}), roleArn=role
        )
        aws.take()
        with pytest.MonkeyPatch.context() as env:
            env.setenv("STATE_MACHINE_ARN", machine["stateMachineArn"])
            _handler("start_campaign")(
                {
                    "schedule": "nightly",
                    "matrix_s3_key": layout.matrix_key("nightly.json"),
                    "scheduled_time": "2026-11-26T02:00:00Z",
                }
            )
    return aws.take()


RECORDED = [c for c in Component if c not in {Component.SCHEDULER, Component.STATE_MACHINE, Component.TASK_STOPPED}]


@pytest.mark.parametrize("component", RECORDED)
def test_every_call_a_component_makes_is_in_the_map(aws, component):
    # Given the component's table and bucket calls, recorded from its own code
    calls = _record(aws, component, _plan())

    # When checking each against the map / Then the map grants every one of them
    assert calls
    assert [call for call in calls if not allows(component, *call)] == []


@pytest.mark.parametrize("component", RECORDED)
def test_every_grant_in_the_map_is_used(aws, component):
    # Given the component's recorded calls
    calls = _record(aws, component, _plan())

    # When looking for each (grant, action) of the map among them
    unused = [
        (grant, action)
        for grant in ACCESS[component]
        for action in grant.actions
        if not any(done == action and access.grant_covers(grant, key) for done, key in calls)
    ]

    # Then none is unused: the map grants what the code does, no more
    assert unused == []


@pytest.mark.parametrize("component", RECORDED)
def test_a_component_calls_exactly_the_service_actions_the_map_grants_it(aws, component):
    # Given the component's recorded calls, a target that names its DB instance among them
    calls = _record(aws, component, _plan())

    # Then the services' actions (granted on "*") it made are the map's, no fewer and no more
    made = {action for action, _ in calls if not action.startswith(("dynamodb:", "s3:"))}
    assert made == {str(action) for action in access.SERVICE_ACTIONS.get(component, ())}


def test_the_scheduler_touches_no_results():
    assert ACCESS[Component.SCHEDULER] == ()


def test_task_stopped_only_reads_the_workers_slots():
    # It reads the token from ECS's event or the stopped worker's slot, and calls Step Functions
    # (tests/unit/test_task_stopped.py, test_task_stopped_mid_step.py)
    assert ACCESS[Component.TASK_STOPPED] == (access.TableGrant(access.WORKERS, (access.Action.GET_ITEM,)),)


def _put_item_tasks(node):
    if isinstance(node, dict):
        if node.get("Resource") == "arn:aws:states:::dynamodb:putItem":
            yield node
        for value in node.values():
            yield from _put_item_tasks(value)
    elif isinstance(node, list):
        for item in node:
            yield from _put_item_tasks(item)


def test_the_state_machines_own_writes_are_the_outcome_items_the_map_grants_it():
    # Given the DynamoDB PutItem tasks of the campaign state machine
    asl = json.loads((REPO_ROOT / "statemachines" / "campaign.asl.json").read_text())
    tasks = list(_put_item_tasks(asl))
    assert {t["Parameters"]["TableName"] for t in tasks} == {f"${{{access.RESULTS_TABLE_PLACEHOLDER}}}"}

    # When formatting each key as the state machine does (States.Format's {} with the ids) / Then the
    # partition is an outcome item's, which the map lets the state machine put, and the sort key is the
    # one pgarena.aws.campaign_state reads back
    formats = {
        re.fullmatch(r"States\.Format\('(.*?)', .*\)", t["Parameters"]["Item"][key]["S.$"]).group(1)
        for t in tasks
        for key in (access.PARTITION_KEY, access.SORT_KEY)
    }
    assert formats == {
        access.OUTCOMES.pk("{}"),
        layout.outcome_target_sk("{}", "{}"),
        layout.outcome_shard_sk("{}", "{}", "{}", "{}"),
    }
    assert allows(Component.STATE_MACHINE, Action.PUT_ITEM, access.OUTCOMES.pk("c1"))
    failures = {t["Parameters"]["Item"].get(layout.OUTCOME_FAILURE_ATTRIBUTE, {}).get("S.$") for t in tasks}
    assert failures == {None, "States.JsonToString($.failure)"}


def test_the_start_barrier_is_granted_to_the_worker():
    # Given the key a shard checks in with / Then the worker may update and read it
    pk = access.barrier_key("c1", "g")[access.PARTITION_KEY]["S"]
    assert allows(Component.WORKER, Action.UPDATE_ITEM, pk) and allows(Component.WORKER, Action.GET_ITEM, pk)


def test_every_report_file_is_covered_by_the_reports_grant():
    keys = [layout.report_key("c1", name) for name in REPORT_FILES]
    assert [key for key in keys if not allows(Component.AGGREGATE, Action.PUT_OBJECT, key)] == []


def test_bucket_actions_are_granted_on_the_bucket_only():
    # ListBucket's resource is the bucket itself: the map names it only on object kinds it lists
    listed = [g for grants in ACCESS.values() for g in grants if isinstance(g, BucketGrant) and BUCKET_ACTIONS & set(g.actions)]
    assert {g.objects for g in listed} == {access.RAW_OUTPUT, access.CAMPAIGN_FILES, access.CAMPAIGN_STATE}
    assert all(not BUCKET_ACTIONS & set(g.actions) for grants in ACCESS.values() for g in grants if isinstance(g, TableGrant))


# --- No other spelling ----------------------------------------------------------------------------


def _string_literals(path: Path) -> Iterator[tuple[int, str]]:
    """String constants in code (docstrings left out: they may describe a key's shape)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


SPELLINGS = {
    REPO_ROOT / "pgarena/aws/access.py": {kind.prefix for kind in access.ITEM_KINDS}
    | {access.STEP_SK_PREFIX, access.LEDGER_CAMPAIGN_SK_PREFIX},
    REPO_ROOT / "pgarena/model/layout.py": {f"{layout.RAW_DIR}/", f"/{layout.RAW_DIR}", layout.SCHEDULE_MATRIX_PREFIX},
}


@pytest.mark.parametrize("owner", list(SPELLINGS), ids=lambda p: p.name)
def test_key_prefixes_are_spelled_only_in_the_map(owner):
    # Given every string literal of the code that runs (package, handlers, worker, CDK app)
    sources = [p for folder in ("pgarena", "functions", "workers", "cdk") for p in (REPO_ROOT / folder).rglob("*.py")]

    # When looking for the prefixes `owner` declares
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {text!r}"
        for path in sources
        if path != owner
        for line, text in _string_literals(path)
        if any(prefix in text for prefix in SPELLINGS[owner])
    ]

    # Then no other file spells one
    assert found == []
