"""Scheduled campaigns: EventBridge Scheduler schedules from the `pgarena:schedules` context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pgarena.aws.settings import StartCampaignEnv
from pgarena_cdk import constants
from pgarena_cdk.settings import DeploySettings
from tests.conftest import FIXTURES
from tests.infrastructure import template as cfn

pytestmark = pytest.mark.infrastructure

START_CAMPAIGN_HANDLER = "functions/start_campaign/handler.handler"


def _inline_matrix() -> dict:
    matrix = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    matrix["targets"] = matrix["targets"][:1]  # the second one is an embedded server
    matrix["cost"] = {"cap_usd": 2.0, "monthly_cap_usd": 50.0}
    return matrix


SCHEDULES = [
    {"name": "nightly", "expression": "cron(0 2 * * ? *)", "timezone": "Europe/Paris", "matrix": _inline_matrix()},
    {"name": "weekly-big", "expression": "rate(7 days)", "matrix_s3_key": "matrices/weekly.json", "enabled": False},
]


@pytest.fixture(scope="module")
def scheduled_synth(synthesized):
    # Given two schedules in the context: one with its matrix inline, one with its matrix in S3
    return synthesized(**{constants.CONTEXT_SCHEDULES: SCHEDULES})


@pytest.fixture(scope="module")
def inline_only_synth(synthesized):
    return synthesized(**{constants.CONTEXT_SCHEDULES: SCHEDULES[:1]})


def _schedules(synth) -> dict[str, dict]:
    return {
        body["Properties"]["Name"]: body["Properties"] for body in synth.resources_of_type("AWS::Scheduler::Schedule").values()
    }


def _grants(statements: list[dict]) -> dict[str, list[str]]:
    grants: dict[str, list[str]] = {}
    for s in statements:
        grants.setdefault(json.dumps(s["Resource"]), []).extend(cfn.as_list(s["Action"]))
    return {resource: sorted(actions) for resource, actions in grants.items()}


def _scheduler_role_id(synth) -> str:
    role_arns = {json.dumps(p["Target"]["RoleArn"]) for p in _schedules(synth).values()}
    (role_arn,) = role_arns
    return json.loads(role_arn)["Fn::GetAtt"][0]


def _state_machine_id(synth) -> str:
    return cfn.logical_id(synth, "AWS::StepFunctions::StateMachine")


# --- Schedules ---------------------------------------------------------------------------------


def test_schedules_synthesize_without_unacknowledged_findings(scheduled_synth):
    # Given the synthesis with schedules / Then cdk-nag passed it
    assert scheduled_synth.validation_error is None, str(scheduled_synth.validation_error)


def test_one_schedule_per_context_entry_in_one_group(scheduled_synth):
    # Given the synthesized schedules
    schedules = _schedules(scheduled_synth)
    group_id = cfn.logical_id(scheduled_synth, "AWS::Scheduler::ScheduleGroup")

    # When reading their timing and state
    shape = {
        name: (p["ScheduleExpression"], p["ScheduleExpressionTimezone"], p["State"], p["GroupName"])
        for name, p in schedules.items()
    }

    # Then each context entry is one schedule of the pgarena group, as declared
    assert shape == {
        "nightly": ("cron(0 2 * * ? *)", "Europe/Paris", "ENABLED", {"Ref": group_id}),
        "weekly-big": ("rate(7 days)", "UTC", "DISABLED", {"Ref": group_id}),
    }


def test_inline_schedule_starts_the_state_machine_with_a_generated_campaign_id(scheduled_synth):
    # Given the schedule whose matrix is inline
    target = _schedules(scheduled_synth)["nightly"]["Target"]

    # When reading its target and input
    payload = json.loads(target["Input"])

    # Then it starts the campaign state machine; the firing's scheduled time names the campaign,
    # and the ledger will record the schedule's name
    assert target["Arn"] == {"Ref": _state_machine_id(scheduled_synth)}
    assert payload["campaign_id"] == "nightly-<aws.scheduler.scheduled-time>"
    assert payload["matrix"]["cost"] == {"cap_usd": 2.0, "monthly_cap_usd": 50.0, "schedule": "nightly"}
    assert payload["matrix"]["targets"] == _inline_matrix()["targets"]


def test_s3_schedule_invokes_start_campaign_with_its_key(scheduled_synth):
    # Given the schedule whose matrix is in the results bucket
    target = _schedules(scheduled_synth)["weekly-big"]["Target"]

    # When reading its target and input / Then start_campaign gets the key and the scheduled time
    assert target["Arn"] == {"Fn::GetAtt": [cfn.function_logical_id(scheduled_synth, START_CAMPAIGN_HANDLER), "Arn"]}
    assert json.loads(target["Input"]) == {
        "schedule": "weekly-big",
        "matrix_s3_key": "matrices/weekly.json",
        "scheduled_time": "<aws.scheduler.scheduled-time>",
    }


def test_schedules_fire_on_time_with_bounded_retries(scheduled_synth):
    # Given the synthesized schedules / When reading their window and retry policy
    shapes = {
        (json.dumps(p["FlexibleTimeWindow"]), json.dumps(p["Target"]["RetryPolicy"]))
        for p in _schedules(scheduled_synth).values()
    }

    # Then none is shifted, and a failed start is retried at most twice within an hour
    assert shapes == {('{"Mode": "OFF"}', '{"MaximumEventAgeInSeconds": 3600, "MaximumRetryAttempts": 2}')}


# --- Scheduler role ----------------------------------------------------------------------------


def test_scheduler_role_is_assumable_only_by_the_scheduler_for_this_group(scheduled_synth):
    # Given the role the schedules use
    role = scheduled_synth.resources[_scheduler_role_id(scheduled_synth)]["Properties"]
    (statement,) = role["AssumeRolePolicyDocument"]["Statement"]
    group_id = cfn.logical_id(scheduled_synth, "AWS::Scheduler::ScheduleGroup")

    # When reading its trust policy / Then only EventBridge Scheduler, for this account's group
    assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": [group_id, "Arn"]}},
    }


def test_scheduler_role_may_only_start_this_state_machine_and_invoke_start_campaign(scheduled_synth):
    # Given the scheduler role's statements
    grants = _grants(cfn.statements_of_role(scheduled_synth, _scheduler_role_id(scheduled_synth)))
    function_id = cfn.function_logical_id(scheduled_synth, START_CAMPAIGN_HANDLER)

    # Then it starts executions of the campaign state machine and invokes start_campaign, nothing else
    assert grants == {
        json.dumps({"Ref": _state_machine_id(scheduled_synth)}): ["states:StartExecution"],
        json.dumps({"Fn::GetAtt": [function_id, "Arn"]}): ["lambda:InvokeFunction"],
    }


def test_inline_schedules_alone_need_no_function_and_no_invoke(inline_only_synth):
    # Given schedules whose matrices are all inline
    handlers = {b["Properties"]["Handler"] for b in inline_only_synth.resources_of_type("AWS::Lambda::Function").values()}
    grants = _grants(cfn.statements_of_role(inline_only_synth, _scheduler_role_id(inline_only_synth)))

    # Then there is no start_campaign function and the role may only start executions
    assert START_CAMPAIGN_HANDLER not in handlers
    assert grants == {json.dumps({"Ref": _state_machine_id(inline_only_synth)}): ["states:StartExecution"]}


# --- start_campaign ----------------------------------------------------------------------------


def test_start_campaign_reads_only_schedule_matrices_and_starts_only_this_state_machine(scheduled_synth):
    # Given start_campaign's statements
    grants = _grants(cfn.statements_of_function(scheduled_synth, START_CAMPAIGN_HANDLER))
    bucket_id = cfn.logical_id(scheduled_synth, "AWS::S3::Bucket", "ResultsBucket")
    matrices = json.dumps({"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/matrices/*"]]})

    # Then it gets objects under matrices/ and starts the campaign state machine
    assert grants[matrices] == ["s3:GetObject"]
    assert grants[json.dumps({"Ref": _state_machine_id(scheduled_synth)})] == ["states:StartExecution"]
    assert not any("dynamodb:" in action or action == "s3:PutObject" for actions in grants.values() for action in actions)


def test_start_campaign_environment_satisfies_its_settings(scheduled_synth):
    # Given the environment CDK gives start_campaign
    variables = cfn.function(scheduled_synth, START_CAMPAIGN_HANDLER)["Environment"]["Variables"]

    # When comparing with the handler's settings model / Then every name it reads is set
    assert {field.alias for field in StartCampaignEnv.model_fields.values()} - set(variables) == set()
    assert variables["STATE_MACHINE_ARN"] == {"Ref": _state_machine_id(scheduled_synth)}


def test_default_context_has_no_schedule_resources(default_synth):
    # Given cdk.json's context alone (no schedules)
    synth = default_synth

    # When counting the scheduler resources / Then there are none, and no start_campaign function
    types = {body["Type"] for body in synth.resources.values()}
    handlers = {b["Properties"]["Handler"] for b in synth.resources_of_type("AWS::Lambda::Function").values()}
    assert not any(t.startswith("AWS::Scheduler::") for t in types)
    assert START_CAMPAIGN_HANDLER not in handlers


def test_scheduled_template_passes_cfn_lint(scheduled_synth):
    # Given the template with schedules / When cfn-lint checks it (W3005: CDK's explicit DependsOn)
    cfnlint = pytest.importorskip("cfnlint.api")
    template = Path(scheduled_synth.outdir) / scheduled_synth.stack.template_file
    matches = cfnlint.lint_file(template, config=cfnlint.ManualArgs(ignore_checks=["W3005"], regions=["us-east-1"]))

    # Then it reports nothing
    assert [str(m) for m in matches] == []


# --- Settings ----------------------------------------------------------------------------------


def _settings(*schedules: dict) -> DeploySettings:
    return DeploySettings.model_validate({constants.CONTEXT_SCHEDULES: list(schedules)})


def test_schedules_passed_with_dash_c_are_decoded():
    # Given the schedules as `cdk deploy -c pgarena:schedules='[...]'` passes them (a JSON string)
    settings = DeploySettings.model_validate({constants.CONTEXT_SCHEDULES: json.dumps(SCHEDULES)})

    # Then they are read like cdk.json's list
    assert [s.name for s in settings.schedules] == ["nightly", "weekly-big"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"matrix_s3_key": "matrices/x.json"}, "exactly one of 'matrix'"),
        ({"expression": "every night"}, "String should match pattern"),
        ({"timezone": "Mars/Olympus"}, "not an IANA time zone"),
        ({"name": "Nightly Run"}, "String should match pattern"),
    ],
)
def test_invalid_schedule_is_refused(change, message):
    # Given a schedule with one mistake / When reading the settings / Then synth stops with the reason
    with pytest.raises(ValidationError, match=message):
        _settings({**SCHEDULES[0], **change})


def test_s3_matrix_must_be_under_the_matrices_prefix():
    with pytest.raises(ValidationError, match="under matrices/"):
        _settings({"name": "x", "expression": "rate(1 day)", "matrix_s3_key": "results/x.json"})


def test_inline_matrix_is_validated_at_synth():
    # Given an inline matrix with an inline password
    matrix = _inline_matrix()
    matrix["targets"][0]["endpoint"]["password"] = "secret"

    # When reading the settings / Then the matrix problem is named with its path
    with pytest.raises(ValidationError, match=r"\$\.targets\[0\]\.endpoint\.password"):
        _settings({**SCHEDULES[0], "matrix": matrix})


def test_schedule_names_are_unique():
    with pytest.raises(ValidationError, match="repeated: nightly"):
        _settings(SCHEDULES[0], SCHEDULES[0])
