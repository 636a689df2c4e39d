"""Issue 15.6: `validate` refuses what `run` cannot do, naming the field and the fix."""

import copy
import json

import pytest
from typer.testing import CliRunner

from pgarena.aws.launch import run_task_request
from pgarena.aws.settings import LauncherEnv
from pgarena.cli import app
from pgarena.model.matrix import Campaign
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.plan import PhaseRef, PlanRef, StepRef
from pgarena.model.tool_spec import MAX_DURATION_S
from pgarena.planning.campaign import load_campaign, parse_campaign
from pgarena.planning.limits import (
    MAX_MAP_ITEMS,
    ON_SITE_INDEX_BYTES,
    PHASE_REF_BYTES,
    RUNTASK_OVERRIDES_LIMIT_CHARS,
    STATE_LIMIT_BYTES,
    STATE_RESERVED_BYTES,
    STEP_REF_BYTES,
)
from pgarena.planning.planner import plan_campaign
from pgarena.planning.shards import shard
from tests.conftest import FIXTURES

MINIMAL = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
ENV = LauncherEnv(RESULTS_BUCKET="b" * 63, RESULTS_TABLE="t" * 255, CLUSTER_ARN="arn:cluster", TASK_DEFINITION_ARN="arn:td")
LONGEST_TASK_TOKEN = "x" * 2048  # SendTaskSuccess's taskToken: at most 2,048 characters


def matrix(**changes) -> dict:
    data = copy.deepcopy(MINIMAL)
    data["targets"] = data["targets"][:1]  # an endpoint target: it plans outside the local runtime
    for path, value in changes.items():
        node = data
        *parents, last = path.split(".")
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
    return data


def problems(data) -> dict[str, str]:
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    return {p.path: p.message for p in caught.value.problems}


@pytest.mark.parametrize(
    ("path", "value", "field", "words"),
    [
        ("workloads.0.run.rate_tps", float("inf"), "$.workloads[0].run.rate_tps", "finite"),
        ("workloads.0.run.latency_limit_ms", float("nan"), "$.workloads[0].run.latency_limit_ms", "finite"),
        ("targets.0.hourly_cost_usd", float("-inf"), "$.targets[0].hourly_cost_usd", "finite"),
        ("workloads.0.run.clients", True, "$.workloads[0].run.clients", "true is not a number"),
        ("workloads.0.run.jobs", False, "$.workloads[0].run.jobs", "false is not a number"),
        ("targets.0.endpoint.port", True, "$.targets[0].endpoint.port", "not a number"),
        ("workloads.0.run.duration_s", 10**12, "$.workloads[0].run.duration_s", "604800: a week"),
        ("workloads.0.init.scale", 10**9, "$.workloads[0].init.scale", "100000: pgbench scale"),
        ("targets.0.provider", "p" * 5_000_000, "$.targets[0].provider", "at most 100 characters"),
        ("workloads.0.run.clients", list(range(1, 100)), "$.workloads[0].run.clients", "at most 64"),
    ],
)
def test_a_value_the_runtime_cannot_use_is_refused_at_its_field(path, value, field, words):
    # Given a matrix with one value beyond what a run can do
    found = problems(matrix(**{path: value}))
    # When validated / Then the refusal names the field and says the limit
    assert list(found) == [field] and words in found[field]


def test_a_sysbench_load_beyond_every_timer_is_refused():
    data = matrix(
        workloads=[
            {"name": "sb", "tool": "sysbench", "prepare": {"tables": 10_000, "table_size": 10**9}, "run": {"duration_s": 5}}
        ]
    )
    assert "rows" in problems(data)["$.workloads[0].prepare"]


def test_a_script_too_big_for_the_runtask_overrides_is_refused_naming_the_limit():
    # Given a 60 KB custom script (it travels in every worker's ECS RunTask overrides)
    data = matrix(**{"workloads.0.run.scripts": [{"sql": "SELECT 1;\n" * 6000}]})
    # When validated / Then it is refused at the scripts, naming the 8,192-character limit
    message = problems(data)["$.workloads[0].run.scripts"]
    assert "8,192" in message and "RunTask" in message


def test_the_largest_accepted_script_fits_the_runtask_overrides():
    # Given the longest custom script validation accepts, on a target and campaign with the longest names
    def data(n: int) -> dict:
        d = matrix(**{"workloads.0.run.scripts": [{"sql": '"' * n}], "targets.0.name": "t" * 63, "workloads.0.name": "w" * 63})
        d["targets"][0]["endpoint"].update(host="h" * 255, user="u" * 63, dbname="d" * 63)
        return d

    low, high = 1, 20_000  # quotes: the character JSON escapes twice over
    while low < high:
        mid = (low + high + 1) // 2
        try:
            parse_campaign(data(mid))
            low = mid
        except MatrixError:
            high = mid - 1
    campaign = parse_campaign(data(low))
    # When its run step is launched with the longest task token
    step = plan_campaign(campaign, "c" * 128).targets[0].steps[1]
    step = (
        shard(step).shards[0].model_copy(update={"hostaddr": "f" * 45, "postmaster_started_at": "2026-01-01T00:00:00.000+00:00"})
    )
    overrides = run_task_request(step, LONGEST_TASK_TOKEN, ENV)["overrides"]
    # Then the overrides stay within ECS's limit
    assert len(json.dumps(overrides)) <= RUNTASK_OVERRIDES_LIMIT_CHARS


def test_a_plan_far_past_256_kb_is_accepted_its_state_carries_refs_only():
    # Given 100 repetitions of a sweep of 60 client counts on 8 targets: a plan of megabytes
    data = matrix(repetitions=100, **{"workloads.0.run.clients": list(range(1, 61))})
    data["targets"] = [{**copy.deepcopy(data["targets"][0]), "name": f"t{i}"} for i in range(8)]
    # (refused only for its execution's history, pgarena.planning.history: the state limit passes)
    assert set(problems(data)) == {"$"} and "Step Functions history" in problems(data)["$"]
    campaign = Campaign.model_validate(data)
    plan = plan_campaign(campaign, "c" * 128)
    assert len(plan.model_dump_json()) > 10 * STATE_LIMIT_BYTES

    # When measuring what the state machine's states carry instead: Validate's answer, preflight's answer
    ref = PlanRef.of(plan).model_dump_json()
    steps = max(len(t.steps) for p in plan.phases for t in p.targets)

    # Then both fit a state with the failure reserve to spare
    assert len(ref) <= STATE_LIMIT_BYTES - STATE_RESERVED_BYTES
    assert steps * STEP_REF_BYTES <= STATE_LIMIT_BYTES - STATE_RESERVED_BYTES


def test_the_ref_sizes_validation_counts_bound_the_real_refs():
    # Given the largest values a ref can hold
    phase = PhaseRef(phase=MAX_MAP_ITEMS * 100, concurrency=40, last_target=MAX_MAP_ITEMS - 1)
    on_site = PhaseRef(phase=MAX_MAP_ITEMS * 100, concurrency=40, last_target=MAX_MAP_ITEMS - 1, on_site=list(range(990, 1000)))
    step = StepRef(index=99_999, last_shard=39, timeout_s=MAX_DURATION_S * 2, heartbeat_timeout_s=86_400)
    # Then each, with the comma that separates it in its list, is within the bytes validation counts
    assert len(phase.model_dump_json()) + 1 <= PHASE_REF_BYTES
    assert len(on_site.model_dump_json()) + 1 <= PHASE_REF_BYTES + 10 * ON_SITE_INDEX_BYTES
    assert len(step.model_dump_json()) + 1 <= STEP_REF_BYTES


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"repetitions": 100, "workloads": 40}, "$.repetitions", "phases"),
        ({"workloads": 40, "clients": 64}, "$.workloads", "steps of one target in one phase"),
    ],
)
def test_a_campaign_whose_refs_would_not_fit_a_state_is_refused_naming_the_limit(changes, field, words):
    # Given a campaign of thousands of phases, or of one phase with thousands of steps per target
    data = matrix(
        repetitions=changes.get("repetitions", 1), **{"workloads.0.run.clients": list(range(1, changes.get("clients", 2) + 1))}
    )
    data["workloads"] = [{**copy.deepcopy(data["workloads"][0]), "name": f"w{i}"} for i in range(changes["workloads"])]
    # When validated / Then the refusal names the field, the 256 KB state limit and what to shrink
    message = problems(data)[field]
    assert words in message and "256 KB" in message and "split the campaign" in message


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ('{"campaign": "a", "campaign": "b"}', "$.campaign", "more than once"),
        ("[" * 100_000 + "]" * 100_000, "$", "nested deeper"),
        ('{"campaign": ' + "[" * 40 + "]" * 40 + "}", "$.campaign" + "[0]" * 32, "nested deeper"),
        ('{"repetitions": Infinity}', "$.repetitions", "finite"),
        ('{"repetitions": NaN}', "$.repetitions", "finite"),
    ],
)
def test_what_json_allows_but_a_matrix_must_not_have(tmp_path, text, field, words):
    # Given a matrix file with duplicate keys, absurd nesting or a non-finite number
    path = tmp_path / "matrix.json"
    path.write_text(text)
    # When loaded / Then it is refused at the field, with no traceback
    with pytest.raises(MatrixError) as caught:
        load_campaign(path)
    found = {p.path: p.message for p in caught.value.problems}
    assert words in found[field]


def test_a_directory_as_the_matrix_is_a_clear_refusal(tmp_path):
    result = CliRunner().invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 1 and "is a directory: give the matrix's JSON file" in result.output


def test_parse_of_a_missing_file_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["parse", "pgbench", str(tmp_path / "missing.log")])
    assert result.exit_code == 2 and "no such file" in result.output
    assert "Traceback" not in result.output


def test_report_on_a_bad_file_prints_no_markup_tags(tmp_path):
    # Given a folder whose results.json is not pgarena's
    (tmp_path / "results.json").write_text('{"x": [1]}')
    # When reported on
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    # Then the error is printed as text, with no literal rich tags
    assert result.exit_code == 1 and "not a pgarena results.json" in result.output
    assert "[red]" not in result.output and "[/red]" not in result.output
