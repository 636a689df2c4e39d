"""Change-point alerts in the stack: the functions that finalize a campaign (and they alone) may put events on
the alert bus and publish to the alert topic, which the context names or asks the stack to create
(encrypted, TLS only); cdk-nag passes on each."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pgarena.aws.access import PUBLISHES_ALERTS
from pgarena_cdk import constants
from pgarena_cdk.settings import DeploySettings
from tests.infrastructure import template as cfn
from tests.infrastructure.test_schedules import SCHEDULES

pytestmark = pytest.mark.infrastructure

TOPIC_ARN = "arn:aws:sns:eu-west-1:123456789012:dba-alerts"
FINALIZING = [
    spec for spec in vars(constants).values() if isinstance(spec, constants.FunctionSpec) and spec.component in PUBLISHES_ALERTS
]
OTHERS = [
    spec
    for spec in vars(constants).values()
    if isinstance(spec, constants.FunctionSpec) and spec.component not in PUBLISHES_ALERTS
]


@pytest.fixture(scope="module")
def default(synthesized):
    # The synthesis test_lambda_bundles and test_access read (every function, the start_campaign one included)
    return synthesized(**{constants.CONTEXT_SCHEDULES: SCHEDULES})


@pytest.fixture(scope="module")
def created(synthesized):
    return synthesized(**{constants.CONTEXT_ALERTS: "true"})


@pytest.fixture(scope="module")
def given(synthesized):
    return synthesized(**{constants.CONTEXT_ALERT_TOPIC_ARN: TOPIC_ARN, constants.CONTEXT_ALERT_BUS: "benchmarks"})


def _actions(synth, spec, prefix: str) -> list[dict]:
    return [
        s for s in cfn.statements_of_function(synth, spec.handler) if any(a.startswith(prefix) for a in cfn.as_list(s["Action"]))
    ]


def _bus_arn(statement: dict) -> str:
    """The statement's one resource, an ARN joined from the stack's partition, region and account (each <>)."""
    (resource,) = cfn.as_list(statement["Resource"])
    return "".join(part if isinstance(part, str) else "<>" for part in resource["Fn::Join"][1])


def test_by_default_the_finalizing_functions_put_events_on_the_default_bus_and_no_topic(default):
    assert {spec.component.value for spec in FINALIZING} == {"aggregate", "finalize_stopped"}
    for spec in FINALIZING:
        (statement,) = _actions(default, spec, "events:")
        assert cfn.as_list(statement["Action"]) == ["events:PutEvents"]
        assert _bus_arn(statement) == "arn:<>:events:<>:<>:event-bus/default"
        assert _actions(default, spec, "sns:") == []
        variables = cfn.function(default, spec.handler)["Environment"]["Variables"]
        assert (variables["ALERT_EVENT_BUS"], variables["ALERT_TOPIC_ARN"]) == ("default", "")
    for spec in OTHERS:  # no other function publishes anything
        assert _actions(default, spec, "events:PutEvents") == [] and _actions(default, spec, "sns:") == []
    assert default.resources_of_type("AWS::SNS::Topic") == {}


def test_alerts_true_creates_an_encrypted_tls_only_topic_only_the_finalizing_functions_publish_to(created):
    # Given `-c pgarena:alerts=true` / When reading the topic, its policy and the roles
    ((topic_id, topic),) = created.resources_of_type("AWS::SNS::Topic").items()
    (policy,) = created.resources_of_type("AWS::SNS::TopicPolicy").values()

    # Then it is encrypted with SNS's managed key and refuses requests without TLS
    assert _bus_arn({"Resource": topic["Properties"]["KmsMasterKeyId"]}) == "arn:<>:kms:<>:<>:alias/aws/sns"
    (deny,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    # And aggregate and finalize_stopped alone may publish to it, named in their environment
    for spec in FINALIZING:
        (statement,) = _actions(created, spec, "sns:")
        assert (cfn.as_list(statement["Action"]), statement["Resource"]) == (["sns:Publish"], {"Ref": topic_id})
        assert cfn.function(created, spec.handler)["Environment"]["Variables"]["ALERT_TOPIC_ARN"] == {"Ref": topic_id}
    for spec in OTHERS:
        if spec.component.value in {"start_campaign"}:  # only with schedules
            continue
        assert _actions(created, spec, "sns:") == []
    # And the stack says where to subscribe; cdk-nag finds nothing unacknowledged
    assert created.template.to_json()["Outputs"][constants.OUTPUT_ALERT_TOPIC_ARN]["Value"] == {"Ref": topic_id}
    assert created.validation_error is None


def test_a_given_topic_and_bus_are_the_ones_granted(given):
    # Given an existing topic and a bus of its own in the context
    for spec in FINALIZING:
        (publish,) = _actions(given, spec, "sns:")
        (put,) = _actions(given, spec, "events:")
        variables = cfn.function(given, spec.handler)["Environment"]["Variables"]

        # Then the grants and the environment name them, and nothing is created
        assert publish["Resource"] == TOPIC_ARN
        assert _bus_arn(put) == "arn:<>:events:<>:<>:event-bus/benchmarks"
        assert (variables["ALERT_EVENT_BUS"], variables["ALERT_TOPIC_ARN"]) == ("benchmarks", TOPIC_ARN)
    assert given.resources_of_type("AWS::SNS::Topic") == {}
    assert given.template.to_json()["Outputs"][constants.OUTPUT_ALERT_TOPIC_ARN]["Value"] == TOPIC_ARN
    assert given.validation_error is None


def test_a_topic_given_and_one_asked_for_are_refused():
    with pytest.raises(ValidationError, match="give one"):
        DeploySettings.model_validate({constants.CONTEXT_ALERT_TOPIC_ARN: TOPIC_ARN, constants.CONTEXT_ALERTS: "true"})


@pytest.mark.parametrize("value", ["arn:aws:sqs:eu-west-1:123456789012:q", "dba-alerts"])
def test_a_topic_arn_that_is_not_one_is_refused(value):
    with pytest.raises(ValidationError):
        DeploySettings.model_validate({constants.CONTEXT_ALERT_TOPIC_ARN: value})


def test_the_template_with_its_topic_passes_cfn_lint(created):
    # Given the template with the topic the stack creates / When cfn-lint checks it (W3005: CDK's explicit DependsOn)
    import cfnlint.api

    template = Path(created.outdir) / created.stack.template_file
    matches = cfnlint.api.lint_file(template, config=cfnlint.api.ManualArgs(ignore_checks=["W3005"], regions=["us-east-1"]))

    # Then it reports nothing
    assert [str(m) for m in matches] == []
