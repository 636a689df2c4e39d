"""`pgarena run --local --aws-strict`: the handlers run from their synthesized assets in a clean python3.12,
the workers in containers of the worker image, and AWS's limits hold. A sharded campaign, a consolidation sweep and a cost-capped campaign run green; a
handler whose asset lacks a dependency the virtualenv has fails; a state past 256 KiB fails the campaign."""

import importlib.util
import json
import shutil
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from pgarena.local import assets, limits
from pgarena.local.endpoints import REGION, function_arn
from pgarena.local.runtime import Execution, LocalRuntime, new_campaign_id
from pgarena.model.managed_metrics import summarize
from pgarena.planning.campaign import parse_campaign
from tests.ports import refused_port

pytestmark = pytest.mark.integration

EMBEDDED = {"provider": "embedded", "embedded": {"settings": {"fsync": "off", "synchronous_commit": "off"}}}
SHARDED = {
    "campaign": "strict-sharded",
    "connections": {"monitor_interval_s": 1},
    "targets": [{"name": "pg", **EMBEDDED}],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 8, "jobs": 1, "duration_s": 3, "progress_s": 1, "workers": 4, "percentiles": True},
        },
        {  # TPROC-C: the kit's load in a container worker's SQL task, its run split across two workers
            "name": "tprocc",
            "tool": "pgbench",
            "init": {"warehouses": 1},
            "run": {"builtin": "tprocc", "clients": 2, "jobs": 1, "duration_s": 3, "progress_s": 1, "workers": 2},
        },
    ],
}
# examples/consolidation.json's shape (a consolidation sweep, policy fail), shrunk to two embedded targets.
CONSOLIDATION = {
    "campaign": "strict-consolidation",
    "repetitions": 1,
    "connections": {"policy": "fail", "monitor_interval_s": 1},
    "scenario": {"consolidation": {"steps": [1, 2], "threshold": 0.95}},
    "targets": [{"name": name, **EMBEDDED} for name in ("db1", "db2")],
    "workloads": [
        {
            "name": "simple",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 2, "jobs": 1, "duration_s": 2, "builtin": "simple-update", "progress_s": 1},
        }
    ],
}
# A plan past 256 KiB, quick to run: 6 targets x (a load + 12 client counts of one transaction), each run
# step carrying a custom script as long as a worker's RunTask overrides allow. The old state machine carried
# the whole plan in its state (Validate And Plan's output): it would have failed with States.DataLimitExceeded
# before any target ran. One target is an embedded server that runs every step; five are endpoints nobody
# listens on, refused at preflight (their steps are planned, never run), which keeps the test short.
LONG_SCRIPT = "\n".join(
    f"-- a script as long as RunTask overrides allow, copied into every step of the plan {i}" for i in range(36)
)
UNREACHABLE = ("u1", "u2", "u3", "u4", "u5")


def wide() -> dict:
    closed = [
        {
            "name": name,
            "provider": "self-hosted",
            "endpoint": {"host": "127.0.0.1", "port": refused_port(), "user": "postgres", "sslmode": "disable"},
        }
        for name in UNREACHABLE
    ]
    return {
        "campaign": "strict-wide",
        "target_concurrency": 5,
        "connections": {"monitor_interval_s": 1},
        "targets": [{"name": "pg", **EMBEDDED}, *closed],
        "workloads": [
            {
                "name": "one",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {
                    "clients": list(range(1, 13)),
                    "jobs": 1,
                    "transactions": 1,
                    "progress_s": 1,
                    "scripts": [{"sql": LONG_SCRIPT + "\nselect 1;\n"}],
                },
            }
        ],
    }


COST_CAPPED = {
    "campaign": "strict-capped",
    "connections": {"monitor_interval_s": 1},
    # Its DB instance's CloudWatch metrics are read by Aggregate And Rank, as its own role (moto's CloudWatch
    # stands in: test_a_cost_capped_campaign_runs_green puts them there).
    "targets": [{"name": "pg", "hourly_cost_usd": 0.5, "cloudwatch": {"instance": "strict-pg"}, **EMBEDDED}],
    "workloads": [
        {
            "name": "sel",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": 2, "jobs": 1, "duration_s": 2, "builtin": "select-only", "progress_s": 1},
        }
    ],
    "cost": {"cap_usd": 5.0, "monthly_cap_usd": 1000.0},
}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory, worker_image):  # strict workers are containers of the worker image
    with LocalRuntime(tmp_path_factory.mktemp("strict-results"), aws_strict=True) as rt:
        yield rt


@pytest.fixture(scope="module")
def function_assets():
    return assets.function_assets(assets.synthesized_app())


def run_green(runtime, matrix):
    run = runtime.run(parse_campaign(matrix))
    assert run.status == "SUCCEEDED", run.error
    errors = {t.name: [t.error, *(w.error for w in t.workloads if w.error)] for t in run.results.targets}
    assert [(t.name, t.status) for t in run.results.targets] == [(t["name"], "succeeded") for t in matrix["targets"]], errors
    return run


def test_every_function_is_served_from_its_asset_in_the_runtimes_interpreter(runtime, function_assets):
    # Given the strict runtime's Lambda endpoint
    handlers = runtime.lambda_handlers

    # Then each function runs the synthesized asset's handler, in python3.12, isolated, with the template's settings
    for name, asset in function_assets.items():
        if name == "start_campaign":  # only with schedules: not a function of the local runtime
            continue
        handler = handlers[function_arn(name).rsplit(":", 1)[1]]
        command = handler.command
        assert (handler.asset.code_dir, handler.asset.memory_mib, handler.asset.timeout_s) == (
            asset.code_dir,
            asset.memory_mib,
            asset.timeout_s,
        )
        assert command[0].endswith("/bin/python3.12") and command[1:3] == ["-I", "-S"]
        assert str(asset.code_dir) in command and not any(".venv" in part for part in command)


def test_a_sharded_campaign_runs_green(runtime):
    # Given one embedded target loaded by four workers started together
    # When it runs under --aws-strict
    run = run_green(runtime, SHARDED)

    # Then the four shards met at the barrier and were merged
    (target,) = run.results.targets
    tpcb, tprocc = target.workloads
    assert len(tpcb.shards) == 4 and all(s.barrier.all_arrived for s in tpcb.shards)
    # And TPROC-C's two shards too: NOPM and each type's latency merged, its consistency checked and held
    assert len(tprocc.shards) == 2 and all(s.barrier.all_arrived for s in tprocc.shards)
    figures = tprocc.tool_figures
    assert figures.new_orders_per_minute > 0 and figures.transaction_types[0].latency_ms.p95 is not None
    assert figures.consistency and all(c.passed for c in figures.consistency), figures.consistency
    assert [(load.workload, load.status) for load in target.loads] == [("tpcb", "succeeded"), ("tprocc", "succeeded")]


def test_a_consolidation_sweep_runs_green(runtime):
    run = run_green(runtime, CONSOLIDATION)
    (table,) = run.results.scenarios.consolidation
    assert [(s.targets, s.complete) for s in table.steps] == [(1, True), (2, True)]


def _instance_metrics(start: datetime, minutes: int) -> None:
    """The DB instance's CPU (42 %) and freeable memory (1 GiB more each minute) in moto's CloudWatch, a
    datapoint a minute from `start` (the runtime's own keys put them)."""
    data = [
        {
            "MetricName": name,
            "Dimensions": [{"Name": "DBInstanceIdentifier", "Value": "strict-pg"}],
            "Timestamp": start + timedelta(minutes=i, seconds=30),
            "Value": value,
        }
        for i in range(minutes)
        for name, value in (("CPUUtilization", 42.0), ("FreeableMemory", float(i + 1) * 2**30))
    ]
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    for at in range(0, len(data), 20):
        cloudwatch.put_metric_data(Namespace="AWS/RDS", MetricData=data[at : at + 20])


def test_a_cost_capped_campaign_runs_green(runtime):
    # Given its target's DB instance's metrics in CloudWatch, every minute from before it starts to well after
    _instance_metrics(datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=2), 30)

    run = run_green(runtime, COST_CAPPED)
    assert run.results.cost.refused is None and 0 < run.results.cost.estimated_usd <= 5.0

    # Then Aggregate And Rank, from its asset and as its role, read them over the run's window into results.json
    (workload,) = run.results.targets[0].workloads
    managed = workload.managed_metrics
    assert managed is not None and managed.note is None, managed
    by_name = {m.name: m for m in managed.metrics}
    assert set(by_name) == {"CPUUtilization", "FreeableMemory"}
    assert (by_name["CPUUtilization"].min, by_name["CPUUtilization"].max) == (42.0, 42.0)
    # each figure recomputed from the answer kept beside the run's raw output
    kept = json.loads((run.results_dir / managed.raw).read_text())
    assert kept["request"]["MetricDataQueries"][0]["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "DBInstanceIdentifier", "Value": "strict-pg"}
    ]
    assert summarize(kept["answer"]) == managed.metrics


def test_a_campaign_whose_plan_is_past_256_kib_runs_to_its_results(runtime):
    # Given a campaign whose plan is past the 256 KiB a Step Functions state holds
    # When it runs under --aws-strict, which fails any state past 256 KiB as AWS does
    run = runtime.run(parse_campaign(wide()))

    # Then it completes: the plan lived in the bucket (kept in the results folder), the state carried refs
    assert run.status == "SUCCEEDED", run.error
    plan_size = (run.results_dir / "state" / "plan.json").stat().st_size
    assert plan_size > limits.MAX_PAYLOAD_BYTES
    # And the reachable target ran every step; the others are listed, refused at preflight
    targets = {t.name: t for t in run.results.targets}
    assert [w.status for w in targets["pg"].workloads] == ["succeeded"] * 12 and targets["pg"].loads[0].status == "succeeded"
    assert {(targets[name].status, targets[name].error.kind) for name in UNREACHABLE} == {("failed", "connection_refused")}


def test_a_bare_matrix_runs_and_its_campaign_id_cannot_be_reused(runtime):
    # Given a campaign started, as `aws stepfunctions start-execution --input file://matrix.json` starts it,
    # with the bare matrix: its campaign id is the execution's name
    first = runtime.start(parse_campaign(COST_CAPPED))
    execution_input = json.loads(runtime.sfn.describe_execution(executionArn=first.arn)["input"])
    assert execution_input["campaign"] == "strict-capped" and "campaign_id" not in execution_input
    done = runtime.wait(first)
    assert done.status == "SUCCEEDED" and done.results.campaign_id == first.arn.rsplit(":", 1)[1] == first.campaign_id
    kept = runtime.store.get_json(f"{first.campaign_id}/results.json")

    # When another execution asks for the same campaign id
    again = runtime.sfn.start_execution(
        stateMachineArn=runtime.machine_arn,
        name=f"reuse-{first.campaign_id}"[:80],
        input=json.dumps({"campaign_id": first.campaign_id, "matrix": execution_input}),
    )["executionArn"]
    run = runtime.wait(replace(first, arn=again, results_dir=runtime.out_dir / "reuse", t0=time.monotonic()))

    # Then Validate And Plan refuses it, naming the id, before any target is touched or any worker starts
    assert run.status == "FAILED" and run.error.startswith("CampaignExists: ")
    assert f"campaign id '{first.campaign_id}' is already used" in run.error
    pages = runtime.sfn.get_paginator("get_execution_history").paginate(executionArn=again)
    entered = {e["stateEnteredEventDetails"]["name"] for p in pages for e in p["events"] if "stateEnteredEventDetails" in e}
    assert "Campaign Id In Use" in entered and "Preflight Target" not in entered and "Run Worker Task" not in entered
    # And the first campaign's results are as it wrote them (finalize_stopped left them alone)
    assert runtime.store.get_json(f"{first.campaign_id}/results.json") == kept


def test_a_handler_runs_from_its_asset_not_from_the_virtualenv(function_assets, tmp_path):
    # Given aggregate's asset with a layer lacking hdrhistogram, which this virtualenv has
    assert importlib.util.find_spec("hdrh") is not None
    asset = function_assets["aggregate"]
    # its dependencies' layer (aggregate also has the change-point layer, which stays as it is)
    (layer,) = [d for d in asset.layer_dirs if (d / "python" / "hdrh").is_dir()]
    shutil.copytree(layer / "python", tmp_path / "layer" / "python")
    shutil.rmtree(tmp_path / "layer" / "python" / "hdrh")
    layers = tuple(tmp_path / "layer" if d == layer else d for d in asset.layer_dirs)
    function = assets.AssetFunction(
        replace(asset, layer_dirs=layers),
        "pgarena-aggregate",
        function_arn("aggregate"),
        lambda: asset.local_environment({"RESULTS_BUCKET": "b", "RESULTS_TABLE": "t"}),
        assets.runtime_packages(),
        tmp_path / "logs",
    )

    # When invoking it
    try:
        invocation = function.invoke({"campaign_id": "c"}, "req-1")
    finally:
        function.close()

    # Then the import fails as Lambda reports it
    assert invocation.error["errorType"] == "Runtime.ImportModuleError"
    assert "No module named 'hdrh'" in invocation.error["errorMessage"]


def test_a_handler_past_its_timeout_is_killed_as_lambda_kills_it(tmp_path):
    # Given a function whose handler outlives its 1 s timeout
    code = tmp_path / "code" / "functions" / "slow"
    code.mkdir(parents=True)
    (code / "handler.py").write_text("import time\n\ndef handler(event, context):\n    time.sleep(60)\n")
    asset = assets.FunctionAsset("slow", "functions/slow/handler.handler", "python3.12", tmp_path / "code", (), 128, 1, {})
    function = assets.AssetFunction(asset, "pgarena-slow", "arn:slow", dict, assets.runtime_packages(), tmp_path / "logs")

    # When invoking it
    try:
        invocation = function.invoke({}, "req-2")
    finally:
        function.close()

    # Then it fails with Lambda's timeout error
    assert invocation.error["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in invocation.error["errorMessage"]


def test_a_state_past_256_kib_fails_the_campaign(runtime):
    # Given an execution whose state grows past 256 KiB: the campaign state machine's states carry refs
    # only, so a state machine of one Pass state whose result is 300 KB stands in for one that did not
    matrix = {
        "campaign": "strict-oversized",
        "targets": [
            {
                "name": "far",
                "provider": "self-hosted",
                "endpoint": {"host": "127.0.0.1", "port": refused_port(), "user": "postgres", "sslmode": "disable"},
            }
        ],
        "workloads": [{"name": "tpcb", "tool": "pgbench", "run": {"clients": 1, "duration_s": 1}}],
    }
    grows = {
        "StartAt": "Grow",
        "States": {"Grow": {"Type": "Pass", "Result": "x" * 300_000, "ResultPath": "$.grown", "End": True}},
    }
    machine = runtime.sfn.create_state_machine(
        name="pgarena-oversized", definition=json.dumps(grows), roleArn="arn:aws:iam::123456789012:role/pgarena-local"
    )["stateMachineArn"]
    campaign_id = new_campaign_id("strict-oversized")
    body = {"campaign_id": campaign_id, "matrix": parse_campaign(matrix).model_dump(mode="json", exclude_none=True)}
    arn = runtime.sfn.start_execution(stateMachineArn=machine, name=campaign_id, input=json.dumps(body))
    execution = Execution(campaign_id, arn["executionArn"], runtime.out_dir / campaign_id, time.monotonic())

    # When it runs under --aws-strict
    run = runtime.wait(execution)

    # Then it fails with States.DataLimitExceeded naming the state, as AWS fails it
    assert run.status == "FAILED"
    assert run.error.startswith(f"{limits.DATA_LIMIT_ERROR}: The state 'Grow' returned a result ")
    assert "the maximum of 262,144 bytes" in run.error
    # (finalize_stopped, which EventBridge starts on FAILED, may read the campaign state machine's history
    # only, as in AWS: it leaves this one alone; tests/unit/test_finalize.py covers what it writes.)
