"""Deployment settings read from the CDK context (no synthesis)."""

from __future__ import annotations

import pytest
from aws_cdk import App
from pydantic import ValidationError

from pgarena_cdk import constants
from pgarena_cdk.settings import REMOVED_LAYER_DIR, DeploySettings

pytestmark = pytest.mark.infrastructure


def test_defaults_need_no_context():
    # Given no context at all / When reading the settings
    settings = DeploySettings.model_validate({})

    # Then a VPC is to be created and the worker has the default size
    assert (settings.vpc_id, settings.worker_cpu_units, settings.worker_memory_mib) == (
        None,
        constants.DEFAULT_WORKER_CPU_UNITS,
        constants.DEFAULT_WORKER_MEMORY_MIB,
    )


def test_cli_strings_are_converted():
    # Given context values as `cdk synth -c key=value` passes them (strings)
    context = {
        constants.CONTEXT_VPC_ID: "vpc-1",
        constants.CONTEXT_SUBNET_IDS: "subnet-a, subnet-b",
        constants.CONTEXT_SECURITY_GROUP_IDS: "sg-1",
        constants.CONTEXT_WORKER_MEMORY_MIB: "4096",
        constants.CONTEXT_FARGATE_SPOT: "true",
    }

    # When reading the settings
    settings = DeploySettings.model_validate(context)

    # Then ids are split on commas and numbers and flags are typed
    assert (settings.subnet_ids, settings.security_group_ids, settings.worker_memory_mib, settings.fargate_spot) == (
        ["subnet-a", "subnet-b"],
        ["sg-1"],
        4096,
        True,
    )


def test_a_vpc_without_subnets_is_refused():
    # Given a VPC id alone (subnets would need a lookup, and synth stays offline)
    context = {constants.CONTEXT_VPC_ID: "vpc-1"}

    # When reading the settings / Then they are refused, naming the missing keys
    with pytest.raises(ValidationError, match=constants.CONTEXT_SUBNET_IDS):
        DeploySettings.model_validate(context)


def test_subnets_without_a_vpc_are_refused():
    # Given subnets but no VPC id
    context = {constants.CONTEXT_SUBNET_IDS: "subnet-a", constants.CONTEXT_SECURITY_GROUP_IDS: "sg-1"}

    # When reading the settings / Then they are refused rather than silently ignored
    with pytest.raises(ValidationError, match=constants.CONTEXT_VPC_ID):
        DeploySettings.model_validate(context)


def test_an_unsupported_log_retention_is_refused():
    # Given a retention CloudWatch Logs does not offer
    context = {constants.CONTEXT_LOG_RETENTION_DAYS: 45}

    # When reading the settings / Then they are refused with the allowed values
    with pytest.raises(ValidationError, match="retention must be one of"):
        DeploySettings.model_validate(context)


def test_the_removed_layer_dir_context_is_refused():
    # Given a command line from before synth bundled the layer itself
    app = App(context={REMOVED_LAYER_DIR: "build/layer"})

    # When reading the settings / Then the error names the key and says what to do
    with pytest.raises(ValueError, match=r"pgarena:layerDir is no longer read.*Remove it"):
        DeploySettings.from_context(app.node)
