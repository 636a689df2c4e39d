"""A second Step Functions interpreter: the campaign state machine run by LocalStack's ASL interpreter (an
implementation independent of moto's), with the real handlers (LocalStack's Invoke forwarded to the local
runtime's Lambda endpoint) and the real workers, gives the results.json moto's does, ids and times aside.

LocalStack is installed by tools/localstack/install.sh (`make install`), started and stopped here
(tests/localstack.py). Where the two interpreters differ on this campaign, pgarena follows AWS's documented
behaviour and works with both:
- `$$.Execution.StartTime` (results.json's started_at) is `2026-11-25T21:30:23.511Z` under LocalStack, as
  AWS documents the context object; moto gives Python's isoformat (`...23.511482+00:00`). pgarena reads
  either (datetime.fromisoformat); the comparison leaves times aside.
- A `dynamodb:putItem` task's result is `{}` under LocalStack, SDK metadata in AWS and moto: each of the
  ASL's three putItem tasks keeps only constants (its ResultSelector), so nothing depends on it.
- A Fail state whose ErrorPath gives a `States.*` name (a caught Lambda timeout) fails with States.Runtime
  under LocalStack, its cause lost; AWS documents no such restriction on ErrorPath, and moto keeps both.
  A handler's own error, as in test_an_invalid_matrix_fails_in_matrix_invalid_with_its_cause, is kept by both.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import boto3
import pytest

from pgarena.local.endpoints import ACCOUNT, REGION
from pgarena.local.runtime import STATE_MACHINE, Execution, LocalRun, LocalRuntime, run_local
from pgarena.local.signing import new_credentials
from pgarena.model.layout import RESULTS_FILE
from pgarena.model.matrix import Campaign
from pgarena.planning.campaign import parse_campaign
from tests import localstack
from tests.ports import refused_port

pytestmark = pytest.mark.integration

EMBEDDED = {"provider": "embedded", "embedded": {"settings": {"fsync": "off", "synchronous_commit": "off"}}}
# Figures that say what ran, not how fast: equal under both interpreters. Every other number is a
# measurement (or a port, a size) and only its presence is compared.
STRUCTURAL_NUMBERS = {"clients", "requested_clients", "repetition", "n", "exit_code", "version_num", "max_connections"}
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
DIGITS = re.compile(r"\d+")
TRANSACTION_LOG = re.compile(r"transactions\.\d+\.gz")  # pgbench names it after its process id


@pytest.fixture(scope="module")
def matrix() -> Campaign:
    """Two targets: an embedded server running one sharded step (2 workers), and one nobody listens on."""
    return parse_campaign(
        {
            "campaign": "two-interpreters",
            "connections": {"monitor_interval_s": 1},
            "targets": [
                {"name": "pg", **EMBEDDED},
                {
                    "name": "unreachable",
                    "provider": "self-hosted",
                    "endpoint": {"host": "127.0.0.1", "port": refused_port(), "user": "postgres", "sslmode": "disable"},
                },
            ],
            "workloads": [
                {
                    "name": "tpcb",
                    "tool": "pgbench",
                    "init": {"scale": 1},
                    "run": {"clients": 4, "jobs": 1, "duration_s": 2, "progress_s": 1, "workers": 2},
                }
            ],
        }
    )


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """LocalStack, installed when missing (fails, never skips, when it cannot be) and started: it boots
    while the moto run goes on."""
    localstack.install()
    with localstack.running(tmp_path_factory.mktemp("localstack")) as running:
        yield running


@pytest.fixture(scope="module")
def moto_run(stack, matrix, tmp_path_factory) -> LocalRun:
    run = run_local(matrix, tmp_path_factory.mktemp("moto-results"))
    assert run.status == "SUCCEEDED", run.error
    return run


@pytest.fixture(scope="module")
def localstack_runtime(stack, moto_run, tmp_path_factory):  # after the moto run: one runtime at a time
    with LocalRuntime(tmp_path_factory.mktemp("localstack-results"), host=stack.host()) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def localstack_run(stack, localstack_runtime, matrix) -> LocalRun:
    run = localstack_runtime.run(matrix)
    assert run.status == "SUCCEEDED", f"{run.error}\nLocalStack's log: {stack.log}"
    return run


# What a run's samples happened to catch, compared for its presence (and its file) only: the live monitor reads the sessions
# once an interval, and which states it caught them in (a load's connection idle between statements, or active)
# and whether it caught a lock wait varies between two runs (a report differed in peak_by_state's "idle");
# a run's stability and incidents judge its per-second tps and --rate's lag.
SAMPLED = {"connections", "stability", "incidents"}
# Verdicts on measured figures: whether a run stalled (per-second tps) or its load generator was saturated (CPU).
JUDGED = {"stalled", "client_saturated", "rate_not_sustained"}


def error_messages(value: Any) -> set[str]:
    """Every error's message in results.json: a finding that restates one is compared."""
    if isinstance(value, dict):
        found = {str(value["error"]["message"])} if isinstance(value.get("error"), dict) else set()
        return found.union(*(error_messages(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(error_messages(v) for v in value))
    return set()


SAMPLED_LISTS = frozenset({"progress", "intervals", "distribution"})


def shape(value: Any, campaign_id: str, key: str = "", errors: frozenset[str] | None = None) -> Any:
    """results.json with what differs between any two runs left out: ids (and the target order shuffled
    from the id), times, measured figures, ports, process ids, servers' system identifiers, how many
    progress samples, whole latency intervals and percentile steps a run of seconds happened to give, what the monitor's samples caught (SAMPLED), verdicts
    on measured figures (JUDGED) and the findings concluded from them: every finding but one that restates an
    error (a far load generator is a median round trip past 2 ms, which a loaded machine reaches on loopback)."""
    if errors is None:
        errors = frozenset(error_messages(value))
    if key in SAMPLED and value is not None:  # a report kept as its series' file, a list as there
        return {"raw": shape(value.get("raw"), campaign_id, "raw", errors)} if isinstance(value, dict) else "<samples>"
    if key in JUDGED and isinstance(value, bool):
        return "<verdict>"
    if isinstance(value, dict):
        if value.get("name") == "port" and "setting" in value:  # the embedded server's port, in its settings
            value = {**value, "setting": "<port>"}
        if value.get("seed_from") == "campaign_id":  # the run order is shuffled with the campaign id as seed
            value = {**value, "passes": [{**p, "targets": sorted(p["targets"])} for p in value["passes"]]}
        # The server's counters are measured: whether a run read past the cache or met autovacuum varies
        # between two runs.
        return {k: shape(v, campaign_id, k, errors) for k, v in value.items() if k != "server_counters"}
    if isinstance(value, list):
        if key == "findings":
            value = [f for f in value if isinstance(f, dict) and f.get("message") in errors]
        # How many progress lines, whole latency intervals and percentile steps (up to the slowest transaction)
        # a run of seconds gives varies between two runs: the lists are measured, not compared.
        return "<samples>" if key in SAMPLED_LISTS else [shape(v, campaign_id, key, errors) for v in value]
    return scalar(value, campaign_id, key)


def scalar(value: Any, campaign_id: str, key: str) -> Any:
    """A value of results.json that is neither a list nor an object, as shape compares it."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return value if key in STRUCTURAL_NUMBERS else "<number>"
    if key == "worker_id":  # host:pid:nonce of the warm worker that ran the step
        return "<worker>"
    if key == "system_identifier":  # each run's embedded server is a new cluster
        return "<system identifier>"
    if key == "explanation":  # the budget's sum counts the sessions preflight found already open
        return DIGITS.sub("<n>", str(value))
    text = str(value).replace(campaign_id, "<campaign>")
    return TRANSACTION_LOG.sub("transactions.<pid>.gz", ISO_TIME.sub("<time>", text))


def results(run: LocalRun) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run.results_dir / RESULTS_FILE).read_text())
    return data


def differences(left: Any, right: Any, path: str = "") -> list[str]:
    """Where two shapes differ, by path: what a failed comparison names (the whole results.json is long)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return [d for k in sorted(left.keys() | right.keys()) for d in differences(left.get(k), right.get(k), f"{path}.{k}")]
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return [d for i, (a, b) in enumerate(zip(left, right)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if left == right else [f"{path}: {left!r} != {right!r}"]


def test_localstack_results_equal_motos_ids_and_times_aside(moto_run, localstack_run):
    # Given the same matrix run under moto's interpreter and under LocalStack's
    # When their results.json are compared, ids, times and measured figures aside
    # Then they are the same: same targets, statuses, errors, steps, shards and raw files
    ours, motos = shape(results(localstack_run), localstack_run.campaign_id), shape(results(moto_run), moto_run.campaign_id)
    assert ours == motos, differences(ours, motos)


def test_localstack_ran_the_failing_target_and_the_sharded_step(localstack_run):
    # Given the campaign run by LocalStack's interpreter
    pg, unreachable = localstack_run.results.targets
    (workload,) = pg.workloads
    # Then the unreachable target failed at preflight, and the sharded step's two shards started together
    assert unreachable.status == "failed" and unreachable.error is not None
    assert "could not connect" in unreachable.error.message
    assert workload.status == "succeeded" and not workload.degraded
    assert [s.status for s in workload.shards] == ["succeeded", "succeeded"]
    assert all(s.barrier is not None and s.barrier.all_arrived for s in workload.shards)


def test_the_execution_was_localstacks(stack, localstack_run):
    # Given LocalStack's Step Functions, asked as the runtime's account
    credentials = new_credentials(ACCOUNT)
    sfn = boto3.client(
        "stepfunctions",
        region_name=REGION,
        endpoint_url=stack.url,
        aws_access_key_id=credentials.access_key_id,
        aws_secret_access_key=credentials.secret_access_key,
    )
    (machine,) = [m for m in sfn.list_state_machines()["stateMachines"] if m["name"] == STATE_MACHINE]
    # Then the campaign is its execution, and it succeeded there
    executions = sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]
    assert [e["status"] for e in executions if e["name"] == localstack_run.campaign_id] == ["SUCCEEDED"]


def test_an_invalid_matrix_fails_in_matrix_invalid_with_its_cause(localstack_runtime, localstack_run, matrix):
    # Given an execution started as `aws stepfunctions start-execution` would, with a matrix validation refuses
    bad = matrix.model_dump(mode="json", exclude_none=True)
    bad["workloads"][0]["run"]["clients"] = 0
    arn = localstack_runtime.sfn.start_execution(
        stateMachineArn=localstack_runtime.machine_arn, name="invalid-matrix", input=json.dumps(bad)
    )["executionArn"]
    # When LocalStack's interpreter runs it to its end
    run = localstack_runtime.wait(Execution("invalid-matrix", arn, localstack_runtime.out_dir / "invalid", time.monotonic()))
    # Then the Fail state reports the handler's error and its cause (the field, and the fix), as in AWS
    assert run.status == "FAILED"
    assert run.error is not None and run.error.startswith("InvalidMatrix: ")
    assert "$.workloads[0].run.clients: client counts must be between 1 and 10,000" in run.error
