"""Queries on a synthesized template shared by the infrastructure tests: functions by handler, resources by
type, the IAM statements of a role."""

from __future__ import annotations


def as_list(value) -> list:
    """A template field that holds one value or a list of them (Action, Resource), as a list."""
    return value if isinstance(value, list) else [value]


def logical_id(synth, type_: str, name_part: str = "") -> str:
    """The logical id of the one resource of `type_` whose id contains `name_part`."""
    (name,) = [name for name in synth.resources_of_type(type_) if name_part in name]
    return name


def function_logical_id(synth, handler: str) -> str:
    """The logical id of the one Lambda function running `handler`."""
    (name,) = [
        name
        for name, body in synth.resources_of_type("AWS::Lambda::Function").items()
        if body["Properties"]["Handler"] == handler
    ]
    return name


def function(synth, handler: str) -> dict:
    """The properties of the one Lambda function running `handler`."""
    return synth.resources[function_logical_id(synth, handler)]["Properties"]


def statements_of_role(synth, role_logical_id: str) -> list[dict]:
    """Every statement of the IAM policies attached to the role."""
    return [
        statement
        for body in synth.resources_of_type("AWS::IAM::Policy").values()
        if {"Ref": role_logical_id} in body["Properties"]["Roles"]
        for statement in body["Properties"]["PolicyDocument"]["Statement"]
    ]


def statements_of_function(synth, handler: str) -> list[dict]:
    """Every statement of the IAM policies attached to the role of the function running `handler`."""
    return statements_of_role(synth, function(synth, handler)["Role"]["Fn::GetAtt"][0])


def statement_with(statements: list[dict], action: str) -> dict:
    """The one statement that grants `action`."""
    (statement,) = [s for s in statements if action in as_list(s["Action"])]
    return statement
