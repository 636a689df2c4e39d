"""The cost guard in the stack: its function, its ledger-only access, and the cost model's view of the stack."""

from __future__ import annotations

import pytest

from pgarena.aws.settings import CostGuardEnv
from pgarena.planning import cost
from pgarena_cdk import constants
from tests.infrastructure import template as cfn

pytestmark = pytest.mark.infrastructure

COST_GUARD_HANDLER = "functions/cost_guard/handler.handler"


def test_cost_guard_has_no_other_grant_than_logs_tracing_the_ledger_and_the_campaigns_state(default_synth):
    # Given every statement of the cost guard's role
    statements = cfn.statements_of_function(default_synth, COST_GUARD_HANDLER)
    actions = {action for statement in statements for action in cfn.as_list(statement["Action"])}

    # Then no ECS, no secrets; S3 only to read the plan and keep its decision (the access map's exact keys,
    # tests/infrastructure/test_access.py)
    assert {a.split(":")[0] for a in actions} == {"logs", "xray", "dynamodb", "s3"}
    assert {a for a in actions if a.startswith("s3:")} == {"s3:GetObject", "s3:PutObject"}


def test_cost_guard_environment_prices_the_deployed_worker_size(default_synth):
    # Given the guard's environment and the worker's task definition
    variables = cfn.function(default_synth, COST_GUARD_HANDLER)["Environment"]["Variables"]
    task = next(iter(default_synth.resources_of_type("AWS::ECS::TaskDefinition").values()))["Properties"]

    # Then every setting the guard reads is set, to the task definition's CPU and memory
    assert {f.alias for f in CostGuardEnv.model_fields.values()} - set(variables) == {"AWS_REGION"}  # set by Lambda
    assert (variables["WORKER_CPU_UNITS"], variables["WORKER_MEMORY_MIB"]) == (task["Cpu"], task["Memory"])


def test_cost_model_knows_each_function_at_its_deployed_memory(default_synth):
    # Given the memory of each function the state machine invokes
    deployed = {
        spec.handler.split("/")[1]: cfn.function(default_synth, spec.handler)["MemorySize"]
        for spec in (
            constants.VALIDATE,
            constants.COST_GUARD,
            constants.PREFLIGHT,
            constants.LAUNCH_WORKER,
            constants.RELEASE_LEASE,
            constants.AGGREGATE,
            constants.DECIDE,
        )
    }

    # When comparing with the cost model's Lambda shapes / Then the estimate prices what is deployed
    assert {name: memory for name, (memory, _) in cost.LAMBDA_SHAPE.items()} == deployed
