"""The access map against the code: every table and bucket call a component makes is granted by the map,
every grant is used, and no key prefix is spelled outside the map.

Each component's calls are recorded from its real code under moto (its handler where one can run
without a database; the functions the worker and preflight call otherwise), through a botocore hook
on the session every client is made from.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from pgarena.aws import access
from pgarena.aws.access import ACCESS, BUCKET_ACTIONS, Action, BucketGrant, Component, TableGrant, allows
from pgarena.aws.barrier import wait_at_barrier
from pgarena.aws.finalize import finalize, finalize_stopped
from pgarena.aws.leases import LeaseStore, holder_id, lease_key
from pgarena.aws.ledger import CostDecision, Ledger
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.local.endpoints import LambdaContext
from pgarena.model import layout
from pgarena.model.errors import PgarenaError
from pgarena.model.matrix import parse_campaign
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import StepSummary
from pgarena.planning.plan import plan_campaign
from pgarena.report import REPORT_FILES
from tests.conftest import FIXTURES

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
    if operation == "GetObject":
        return [(Action.GET_OBJECT, params["Key"])]
    return []  # not the table's or the bucket's (Step Functions, ECS)


class Recorder:
    def __init__(self, session: boto3.Session):
        self.calls: list[Call] = []
        self.recording = False
        session.events.register("provide-client-params.*.*", self._record)

    def _record(self, params: dict, model, **_) -> None:
        if self.recording and params.get("TableName", TABLE) == TABLE and params.get("Bucket", BUCKET) == BUCKET:
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


def _plan(campaign_id: str = "c1"):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["targets"][0]["hourly_cost_usd"] = 1.0
    data["targets"][0]["endpoint"]["port"] = 1  # nothing listens: preflight fails at once
    data["cost"] = {"monthly_cap_usd": 100.0}
    return plan_campaign(parse_campaign(data), campaign_id)


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


def _handler(name: str):
    module = __import__(f"functions.{name}.handler", fromlist=["handler"])
    return lambda event: module.handler(event, LambdaContext(f"pgarena-{name}"))


def _record(aws: Recorder, component: Component, plan) -> list[Call]:
    """Run `component`'s code as it runs in AWS and return its table and bucket calls."""
    store = ResultStore(BUCKET, TABLE, s3=boto3.client("s3"), dynamodb=boto3.client("dynamodb"))
    target = plan.targets[0]
    load, run = target.steps
    # aggregate's and finalize_stopped's calls are recorded after their setup
    aws.recording = component not in {Component.AGGREGATE, Component.FINALIZE_STOPPED}
    if component is Component.COST_GUARD:
        _handler("cost_guard")({"campaign_id": plan.campaign_id, "plan": plan.model_dump(mode="json")})
        over_cap = _plan("c2").model_copy(update={"cost": plan.cost.model_copy(update={"cap_usd": 0.0001})})
        _handler("cost_guard")({"campaign_id": "c2", "plan": over_cap.model_dump(mode="json")})  # refused: recorded
    elif component is Component.PREFLIGHT:
        # preflight() reads the others' slots and takes its own (a live server is an integration test's)...
        leases = LeaseStore(store.dynamodb, TABLE)
        key, holder = lease_key(target.endpoint), holder_id(plan.campaign_id, target.name)
        leases.held_by_others(key, holder)
        leases.acquire(key, holder, 5, 100, 60.0)
        # ...and the handler records the target it could not reach.
        with pytest.raises(PgarenaError):
            _handler("preflight")({"campaign_id": plan.campaign_id, "target": target.model_dump(mode="json")})
    elif component is Component.RELEASE_LEASE:
        LeaseStore(store.dynamodb, TABLE).acquire(
            lease_key(target.endpoint), holder_id(plan.campaign_id, target.name), 5, 100, 60
        )
        _handler("release_lease")({"campaign_id": plan.campaign_id, "target": target.model_dump(mode="json")})
    elif component is Component.WORKER:
        # What pgarena.worker.run does around its tool: raw output (tagged), the series, the barrier, the summary.
        raw = store.put_file(f"{run.raw_prefix}/pgbench.log", FIXTURES.parent / "conftest.py")
        store.put_json(f"{run.raw_prefix}/summary.json", {})
        wait_at_barrier(store.dynamodb, TABLE, plan.campaign_id, "group", 0, 1, sleep=lambda s: None)
        store.put_summary(_summary(run, raw=[raw]))
    elif component in {Component.AGGREGATE, Component.FINALIZE_STOPPED}:
        cost = _handler("cost_guard")({"campaign_id": plan.campaign_id, "plan": plan.model_dump(mode="json")})
        # A sharded step's per-second series, which aggregate reads back to merge the shards.
        series = store.put_json(f"{run.raw_prefix}/series.json", {"start_epoch": 0.0, "end_epoch": 1.0, "seconds": []})
        store.put_summary(_summary(load))
        store.put_summary(_summary(run, series=series))
        outcomes = [{"name": target.name, "steps": [{"step_id": s.step_id, "status": "succeeded"} for s in (load, run)]}]
        started_at = "2026-11-22T12:00:00+00:00"
        LeaseStore(store.dynamodb, TABLE).acquire(
            lease_key(target.endpoint), holder_id(plan.campaign_id, target.name), 5, 100, 60
        )
        aws.take()
        aws.recording = True
        if component is Component.AGGREGATE:
            event = {"campaign_id": plan.campaign_id, "started_at": started_at, "plan": plan.model_dump(mode="json")}
            _handler("aggregate")({**event, "outcomes": outcomes, "cost": cost})
        else:  # what finalize_stopped does with the outcomes it reads back from the execution's history
            matrix = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
            matrix["targets"] = matrix["targets"][:1]
            started = {"executionStartedEventDetails": {"input": json.dumps(matrix)}}
            # stopped before Validate answered: is the id another campaign's?
            finalize_stopped(
                [started],
                started_at,
                store,
                ledger=None,
                leases=LeaseStore(store.dynamodb, TABLE),
                ending="failed",
                execution_name="c9",
            )
            finalize(
                plan,
                [TargetOutcome.model_validate(o) for o in outcomes],
                store,
                started_at,
                cost=CostDecision.model_validate(cost),
                ledger=Ledger(store.dynamodb, TABLE),
                leases=LeaseStore(store.dynamodb, TABLE),
                ending="cancelled",
            )
    elif component is Component.VALIDATE:
        matrix = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
        matrix["targets"] = matrix["targets"][:1]  # the endpoint target: AWS plans have no embedded ones
        _handler("validate")({"input": matrix, "execution_name": plan.campaign_id})
    elif component is Component.START_CAMPAIGN:
        sfn = boto3.client("stepfunctions")
        role = "arn:aws:iam::123456789012:role/sfn"
        machine = sfn.create_state_machine(
            name="m", definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}), roleArn=role
        )
        boto3.client("s3").put_object(Bucket=BUCKET, Key=layout.matrix_key("nightly.json"), Body=b"{}")
        aws.take()
        with pytest.MonkeyPatch.context() as env:
            env.setenv("STATE_MACHINE_ARN", machine["stateMachineArn"])
            _handler("start_campaign")(
                {"schedule": "nightly", "matrix_s3_key": layout.matrix_key("nightly.json"), "execution_id": "e1"}
            )
    return aws.take()


RECORDED = [c for c in Component if c not in {Component.LAUNCH_WORKER, Component.SCHEDULER}]


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


@pytest.mark.parametrize("component", [Component.LAUNCH_WORKER, Component.SCHEDULER])
def test_components_that_touch_no_results_have_no_grant(component):
    assert ACCESS[component] == ()


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
    assert {g.objects for g in listed} == {access.RAW_OUTPUT, access.CAMPAIGN_FILES}
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
