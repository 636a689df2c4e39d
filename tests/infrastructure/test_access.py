"""The access map (pgarena.aws.access) walked against the synthesized template: each component's role may
do exactly what the map lists on the results table and bucket, and nothing else there; no other role
touches them."""

from __future__ import annotations

import json

import pytest

from pgarena.aws.access import ACCESS, BUCKET_ACTIONS, SERVICE_ACTIONS, Component, TableGrant
from pgarena_cdk import constants
from tests.infrastructure.test_schedules import SCHEDULES

pytestmark = pytest.mark.infrastructure

# What a role may do on the table or the bucket: (where, action, pattern), where is "item" (pattern:
# dynamodb:LeadingKeys), "object" (pattern: the object ARN's key part) or "bucket" (pattern: s3:prefix).
Permission = tuple[str, str, str]
UNRESTRICTED = "<any>"


@pytest.fixture(scope="module")
def synth(synthesized):
    # Given the app with schedules of both kinds, so that every component has its role
    return synthesized(**{constants.CONTEXT_SCHEDULES: SCHEDULES})


def _logical_id(synth, construct) -> str:
    return synth.stack.get_logical_id(construct.node.default_child)


def _component_roles(synth) -> dict[Component, str]:
    stack = synth.stack
    functions = {spec.component: function for spec, function in stack.orchestration.functions.items()}
    functions[Component.START_CAMPAIGN] = stack.schedules.start_campaign_function
    roles = {component: _logical_id(synth, function.role) for component, function in functions.items()}
    roles[Component.WORKER] = _logical_id(synth, stack.compute.task_role)
    roles[Component.SCHEDULER] = _logical_id(synth, stack.schedules.role)
    roles[Component.STATE_MACHINE] = _logical_id(synth, stack.orchestration.state_machine.role)
    return roles


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def _statements_by_role(synth) -> dict[str, list[dict]]:
    by_role: dict[str, list[dict]] = {}
    for body in synth.resources_of_type("AWS::IAM::Policy").values():
        for role in body["Properties"].get("Roles", []):
            by_role.setdefault(role["Ref"], []).extend(body["Properties"]["PolicyDocument"]["Statement"])
    for name, body in synth.resources_of_type("AWS::IAM::Role").items():
        for policy in body["Properties"].get("Policies", []):
            by_role.setdefault(name, []).extend(policy["PolicyDocument"]["Statement"])
    return by_role


def _permissions(statements: list[dict], table_id: str, bucket_id: str) -> set[Permission]:
    """What `statements` allow on the table and the bucket, read from the template's own shapes."""
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    bucket_arn = {"Fn::GetAtt": [bucket_id, "Arn"]}
    found: set[Permission] = set()
    for statement in statements:
        assert statement["Effect"] == "Allow"
        condition = statement.get("Condition", {})
        leading = condition.get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys", [UNRESTRICTED])
        prefixes = condition.get("StringLike", {}).get("s3:prefix", [UNRESTRICTED])
        for resource in _as_list(statement["Resource"]):
            for action in _as_list(statement["Action"]):
                service = action.split(":")[0]
                if resource == table_arn or (resource == "*" and service == "dynamodb"):
                    found |= {("item", action, pattern) for pattern in leading}
                elif resource == bucket_arn or (resource == "*" and service == "s3"):
                    found |= {("bucket", action, pattern) for pattern in prefixes}
                elif isinstance(resource, dict) and "Fn::Join" in resource:
                    parts = resource["Fn::Join"][1]
                    if parts[0] == bucket_arn:
                        found.add(("object", action, "".join(parts[1:]).removeprefix("/")))
                    elif parts[0] == table_arn:
                        found.add(("item", action, UNRESTRICTED))  # an index or stream of the table
    return found


def _expected(component: Component) -> set[Permission]:
    expected: set[Permission] = set()
    for grant in ACCESS[component]:
        for action in grant.actions:
            if isinstance(grant, TableGrant):
                expected.add(("item", str(action), grant.items.leading_keys))
            else:
                where = "bucket" if action in BUCKET_ACTIONS else "object"
                expected |= {(where, str(action), pattern) for pattern in grant.objects.patterns}
    return expected


def _ids(synth) -> tuple[str, str]:
    (table_id,) = synth.resources_of_type("AWS::DynamoDB::Table")
    (bucket_id,) = [name for name in synth.resources_of_type("AWS::S3::Bucket") if "ResultsBucket" in name]
    return table_id, bucket_id


DEPLOYED = list(Component)


@pytest.mark.parametrize("component", DEPLOYED)
def test_role_allows_exactly_what_the_map_lists(synth, component):
    # Given the component's role in the template and every statement attached to it
    role_id = _component_roles(synth)[component]
    statements = _statements_by_role(synth).get(role_id, [])

    # When reading what they allow on the results table and bucket
    allowed = _permissions(statements, *_ids(synth))

    # Then it is exactly the map's grants for that component
    assert allowed == _expected(component)


def _service_actions(statements: list[dict]) -> set[tuple[str, str]]:
    """(action, resource) of the statements' actions on other services than the table's, the bucket's and the logs'."""
    return {
        (action, json.dumps(resource))
        for statement in statements
        for action in _as_list(statement["Action"])
        for resource in _as_list(statement["Resource"])
        if action.split(":")[0] in SERVICE_PREFIXES
    }


SERVICE_PREFIXES = {str(action).split(":")[0] for actions in SERVICE_ACTIONS.values() for action in actions}


@pytest.mark.parametrize("component", DEPLOYED)
def test_role_calls_exactly_the_service_actions_the_map_lists_on_any_resource(synth, component):
    # Given the component's role and its statements
    statements = _statements_by_role(synth).get(_component_roles(synth)[component], [])

    # Then its actions on those services are the map's, each on "*" (they take no resource in IAM)
    expected = {(str(action), json.dumps("*")) for action in SERVICE_ACTIONS.get(component, ())}
    assert _service_actions(statements) == expected


def test_no_other_role_touches_the_table_or_the_bucket(synth):
    # Given every role that is not one of the map's components
    components = set(_component_roles(synth).values())
    others = {role: statements for role, statements in _statements_by_role(synth).items() if role not in components}

    # When reading what they allow on the results table and bucket
    touching = {role: found for role, statements in others.items() if (found := _permissions(statements, *_ids(synth)))}

    # Then it is nothing
    assert touching == {}


def test_every_deployed_component_has_its_own_role(synth):
    roles = _component_roles(synth)
    assert (set(roles), len(set(roles.values()))) == (set(DEPLOYED), len(DEPLOYED))
