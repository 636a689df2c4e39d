"""IAM is really enforced locally: each component, signing with its own role's keys (pgarena.local.iam),
may do on a moto server what the synthesized template grants it and nothing more; the worker grant
that issue 14 found (PutItem on campaign#* only) fails at the start barrier."""

from __future__ import annotations

import copy
import dataclasses
import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
import requests
from botocore.exceptions import ClientError

from pgarena.aws.access import Component
from pgarena.aws.barrier import wait_at_barrier
from pgarena.aws.cloudwatch import CloudWatchMetrics
from pgarena.aws.ledger import Ledger
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.campaign.finalize import CampaignEnd, finalize
from pgarena.campaign.ports import EndPorts
from pgarena.local import iam
from pgarena.local.endpoints import ACCOUNT, REGION
from pgarena.local.runtime import BUCKET, STATE_MACHINE, TABLE, run_local
from pgarena.model import layout
from pgarena.model.managed_metrics import MetricsReadFailed, metric_queries, summarize
from pgarena.model.outcomes import TargetOutcome
from pgarena.model.results import CampaignResults, StepSummary
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES
from tests.infrastructure.conftest import synthesize  # before pgarena_cdk: it puts the CDK app (cdk/) on sys.path
from tests.infrastructure.test_schedules import SCHEDULES
from tests.integration.test_sharded_run import MATRIX as SHARDED

# isort: split
from pgarena_cdk import constants

pytestmark = pytest.mark.integration

NAMES = iam.LocalNames(bucket=BUCKET, table=TABLE, account=ACCOUNT, region=REGION, state_machine=STATE_MACHINE)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> dict:
    # Given the app as deployed with schedules (so the scheduler has its role); the assets are not
    # bundled: they do not change a single grant.
    context = {constants.CONTEXT_SCHEDULES: SCHEDULES, "aws:cdk:bundling-stacks": []}
    return synthesize(tmp_path_factory.mktemp("cdk.out"), **context).template.to_json()


@pytest.fixture
def moto_url():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    try:
        yield url
    finally:
        requests.post(f"{url}/moto-api/reset", timeout=10)  # the server shares moto's global state
        server.stop()


def _client(url: str, service: str, credentials: iam.Credentials | None = None):
    keys = credentials or iam.Credentials("setup", "setup", "setup")
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id=keys.access_key_id,
        aws_secret_access_key=keys.secret_access_key,
    )


def _provision(url: str, template: dict) -> iam.LocalIam:
    """The users and keys, the table and the bucket, created before enforcement starts."""
    local = iam.provision(_client(url, "iam"), template, NAMES)
    create_results_table(_client(url, "dynamodb"), TABLE)
    _client(url, "s3").create_bucket(Bucket=BUCKET)
    return local


def _with_old_worker_grant(template: dict) -> dict:
    """The template as before issue 14's fix: on the table, the worker may only PutItem on campaign#*."""
    edited = copy.deepcopy(template)
    task_role = iam.component_roles(edited)[Component.WORKER]
    for policy in edited["Resources"].values():
        if policy["Type"] == "AWS::IAM::Policy" and {"Ref": task_role} in policy["Properties"]["Roles"]:
            document = policy["Properties"]["PolicyDocument"]
            document["Statement"] = [s for s in document["Statement"] if _old_worker_statement(s)]
    return edited


def _old_worker_statement(statement: dict) -> bool:
    actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
    on_table = any(action.startswith("dynamodb:") for action in actions)
    return not on_table or actions == ["dynamodb:PutItem"]


def _summary(campaign_id: str) -> StepSummary:
    return StepSummary(
        campaign_id=campaign_id,
        step_id="s1",
        target="t",
        workload="w",
        kind="run",
        tool="pgbench",
        status="succeeded",
        started_at="2026-11-22T12:00:00+00:00",
        finished_at="2026-11-22T12:00:10+00:00",
        wall_s=10.0,
    )


def _error_code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return error.value.response["Error"]["Code"]


def test_every_component_role_gets_its_own_user(moto_url, template):
    # When the users are made from the template
    local = _provision(moto_url, template)

    # Then each component of the access map has its own keys, the scheduler's included
    assert set(local.components) == set(Component)
    assert len({keys.access_key_id for keys in local.components.values()}) == len(Component)


def test_worker_passes_the_barrier_and_writes_its_summary(moto_url, template):
    # Given the worker's keys, IAM enforced
    worker = _provision(moto_url, template).components[Component.WORKER]
    dynamodb, s3 = _client(moto_url, "dynamodb", worker), _client(moto_url, "s3", worker)
    with iam.enforced():
        # When it checks in at a two-shard barrier as both shards, then writes its summary and raw output
        wait_at_barrier(dynamodb, TABLE, "c1", "g1", shard=0, shards=2, timeout_s=0)
        start_at, together = wait_at_barrier(dynamodb, TABLE, "c1", "g1", shard=1, shards=2)
        store = ResultStore(BUCKET, TABLE, s3=s3, dynamodb=dynamodb)
        store.put_summary(_summary("c1"))
        s3.put_object(Bucket=BUCKET, Key=layout.raw_prefix("c1") + "s1/pgbench.log", Body=b"0 1 2\n")

    # Then every call was allowed, and the barrier agreed on one start
    assert together and start_at > 0
    item = _client(moto_url, "dynamodb").get_item(TableName=TABLE, Key={"pk": {"S": "campaign#c1"}, "sk": {"S": "step#s1"}})
    assert item["Item"]["pk"]["S"] == "campaign#c1"


def test_old_worker_grant_fails_at_the_barrier(moto_url, template):
    # Given the worker's keys made from the old grant (PutItem on campaign#* only)
    worker = _provision(moto_url, _with_old_worker_grant(template)).components[Component.WORKER]
    dynamodb = _client(moto_url, "dynamodb", worker)
    with iam.enforced():
        # When it checks in at the barrier
        with pytest.raises(ClientError) as refused:
            wait_at_barrier(dynamodb, TABLE, "c1", "g1", shard=0, shards=2, timeout_s=0)
        # (while its summary write, which the old grant has, still goes through)
        ResultStore(BUCKET, TABLE, dynamodb=dynamodb, s3=_client(moto_url, "s3", worker)).put_summary(_summary("c1"))

    # Then AWS's answer is AccessDenied
    assert _error_code(refused) == "AccessDeniedException"


def test_cost_guard_books_the_ledger_but_cannot_write_objects(moto_url, template):
    # Given cost_guard's keys (GetItem, PutItem, UpdateItem on the ledger; nothing in the bucket)
    cost_guard = _provision(moto_url, template).components[Component.COST_GUARD]
    with iam.enforced():
        # When it books a campaign (a transaction: authorized per item, as PutItem and UpdateItem)
        booking = Ledger(_client(moto_url, "dynamodb", cost_guard), TABLE).book("2026-11", "c1", 1.5, monthly_cap_usd=10.0)
        # and tries to write an object
        with pytest.raises(ClientError) as refused:
            _client(moto_url, "s3", cost_guard).put_object(Bucket=BUCKET, Key=layout.results_key("c1"), Body=b"{}")

    # Then the booking went through and the write was denied
    assert booking.booked
    assert _error_code(refused) == "AccessDenied"


def test_a_function_cannot_reach_what_its_role_does_not_name(moto_url, template):
    # Given the keys of validate (no grant on the table) and of the worker (raw output only)
    local = _provision(moto_url, template)
    validate, worker = local.components[Component.VALIDATE], local.components[Component.WORKER]
    with iam.enforced():
        # When validate reads an item and the worker writes results.json
        with pytest.raises(ClientError) as read:
            _client(moto_url, "dynamodb", validate).get_item(TableName=TABLE, Key={"pk": {"S": "ledger#x"}, "sk": {"S": "total"}})
        with pytest.raises(ClientError) as write:
            _client(moto_url, "s3", worker).put_object(Bucket=BUCKET, Key=layout.results_key("c1"), Body=b"{}")

    # Then both are denied
    assert (_error_code(read), _error_code(write)) == ("AccessDeniedException", "AccessDenied")


def test_a_grant_on_another_table_does_not_reach_this_one(moto_url, template):
    # Given the worker's grants resolved against a table of another name
    elsewhere = dataclasses.replace(NAMES, table="another-table")
    worker = iam.provision(_client(moto_url, "iam"), template, elsewhere).components[Component.WORKER]
    create_results_table(_client(moto_url, "dynamodb"), TABLE)
    # When it checks in at the barrier in this table
    with iam.enforced(), pytest.raises(ClientError) as refused:
        wait_at_barrier(_client(moto_url, "dynamodb", worker), TABLE, "c1", "g1", shard=0, shards=1)

    # Then the table's ARN is checked, not just the action
    assert _error_code(refused) == "AccessDeniedException"


def test_unknown_keys_are_refused(moto_url, template):
    # Given IAM enforced
    _provision(moto_url, template)
    # When someone signs with keys no user has
    with iam.enforced(), pytest.raises(ClientError) as refused:
        _client(moto_url, "dynamodb", iam.Credentials("nobody", "AKIANOBODY", "secret")).list_tables()

    # Then moto refuses the caller itself
    assert _error_code(refused) == "UnrecognizedClientException"


def test_resolved_policies_name_only_local_resources(template):
    # When the worker's policies are resolved to the local names
    documents = iam.role_policies(template, iam.component_roles(template)[Component.WORKER])
    text = json.dumps(iam.resolve(documents, template, NAMES))

    # Then no intrinsic is left, and the table and bucket are the runtime's
    assert "Fn::" not in text and '"Ref"' not in text
    assert NAMES.table_arn() in text and f"{NAMES.bucket_arn()}/*/raw/*" in text


def _sharded_campaign(name: str):
    matrix = copy.deepcopy(SHARDED)
    matrix["campaign"] = name
    # long enough that both shards share whole seconds even when a loaded machine starts one late
    matrix["workloads"][0]["run"].update(workers=2, duration_s=6)
    return parse_campaign(matrix)


def test_sharded_campaign_runs_with_workers_under_their_role(template, tmp_path):
    # When a two-shard campaign runs with the workers signing as the task role, IAM enforced
    run = run_local(_sharded_campaign("iam-sharded"), tmp_path, iam_template=template)

    # Then both shards passed the barrier and the step succeeded
    (target,) = run.results.targets
    (workload,) = target.workloads
    assert run.status == "SUCCEEDED", run.error
    assert workload.status == "succeeded", workload.error


def test_sharded_campaign_with_the_old_worker_grant_ends_worker_crashed(template, tmp_path):
    # When the same campaign runs with the old worker grant
    run = run_local(_sharded_campaign("iam-old-grant"), tmp_path, iam_template=_with_old_worker_grant(template))

    # Then the workers are refused at the barrier: issue 14's finding, reproduced locally
    (target,) = run.results.targets
    (workload,) = target.workloads
    assert workload.status == "failed"
    assert workload.error.kind == "worker_crashed"
    assert "AccessDeniedException" in workload.error.message and "dynamodb:UpdateItem" in workload.error.message


def _measured_campaign(store: ResultStore, start: datetime) -> CampaignEnd:
    """A campaign whose target names its DB instance (db-1), its runs' summaries kept as the workers keep them."""
    matrix = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    matrix["targets"] = [{**matrix["targets"][0], "cloudwatch": {"instance": "db-1"}}]
    plan = plan_campaign(parse_campaign(matrix), "c1")
    for step in plan.targets[0].steps:
        summary = _summary("c1").model_copy(
            update={
                "step_id": step.step_id,
                "target": step.target,
                "kind": step.kind,
                "started_at": start.isoformat(),
                "finished_at": (start + timedelta(seconds=100)).isoformat(),
            }
        )
        store.put_summary(summary)
    return CampaignEnd(plan, [TargetOutcome(name="a")], start.isoformat())


def _instance_cpu(url: str, start: datetime, values: list[float]) -> None:
    """The instance's CPUUtilization in moto's CloudWatch (namespace AWS/RDS), one datapoint a minute from `start`."""
    data = [
        {
            "MetricName": "CPUUtilization",
            "Dimensions": [{"Name": "DBInstanceIdentifier", "Value": "db-1"}],
            "Timestamp": start + timedelta(minutes=i, seconds=1),
            "Value": value,
            "Unit": "Percent",
        }
        for i, value in enumerate(values)
    ]
    _client(url, "cloudwatch").put_metric_data(Namespace="AWS/RDS", MetricData=data)


def test_finalize_reads_the_instances_cloudwatch_metrics_into_results_json_as_aggregate(moto_url, template):
    # Given aggregate's keys, a campaign whose target names its DB instance, and the instance's CPU in CloudWatch
    # over its run's window (two minutes from `start`)
    aggregate = _provision(moto_url, template).components[Component.AGGREGATE]
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=5)
    end = _measured_campaign(
        ResultStore(BUCKET, TABLE, s3=_client(moto_url, "s3"), dynamodb=_client(moto_url, "dynamodb")), start
    )
    _instance_cpu(moto_url, start, [20.0, 60.0])

    # When finalize runs as Aggregate And Rank does, signing as its role
    store = ResultStore(BUCKET, TABLE, s3=_client(moto_url, "s3", aggregate), dynamodb=_client(moto_url, "dynamodb", aggregate))
    metrics = CloudWatchMetrics(lambda region: _client(moto_url, "cloudwatch", aggregate))
    with iam.enforced():
        finalized = finalize(end, EndPorts(store, metrics=metrics))

    # Then results.json holds the run's CPU over its window, recomputed from the answer kept beside its raw output
    kept = CampaignResults.model_validate(_get_json(moto_url, finalized.results_key))
    (run,) = kept.targets[0].workloads
    assert run.managed_metrics.note is None, run.managed_metrics.note
    (cpu,) = run.managed_metrics.metrics
    assert (cpu.name, cpu.min, cpu.avg, cpu.max, cpu.datapoints) == ("CPUUtilization", 20.0, 40.0, 60.0, 2)
    answer = _get_json(moto_url, f"c1/{run.managed_metrics.raw}")["answer"]
    assert summarize(answer) == run.managed_metrics.metrics


def test_a_role_without_the_grant_is_refused_cloudwatch_and_named(moto_url, template):
    # Given the worker's keys (its role holds no cloudwatch:GetMetricData)
    worker = _provision(moto_url, template).components[Component.WORKER]
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=5)
    _instance_cpu(moto_url, start, [20.0])

    # When it reads the instance's metrics
    metrics = CloudWatchMetrics(lambda region: _client(moto_url, "cloudwatch", worker))
    with iam.enforced(), pytest.raises(MetricsReadFailed) as refused:
        metrics.metric_data(None, metric_queries("db-1"), start, start + timedelta(minutes=1))

    # Then it is refused, and the refusal named as such (the run's note would be `denied`)
    assert refused.value.denied and "AccessDenied" in str(refused.value), str(refused.value)


def _get_json(url: str, key: str) -> dict:
    return json.loads(_client(url, "s3").get_object(Bucket=BUCKET, Key=key)["Body"].read())
