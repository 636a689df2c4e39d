"""The fields the matrix's JSON Schema allows at a path pydantic reports: what a misspelt or misplaced key is
compared with, so a suggestion names a field valid where the key is, never one valid only elsewhere. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from pgarena.model.matrix import json_schema

# pydantic names the member of a union it tried (`clients.int`, `settings.x.float`,
# `function-after[...]`): a step into a union, not a key of the data.
UNION_TAG = re.compile(r"^(str|int|float|bool|none|(list|dict|tuple)\[.*\])$")


@dataclass(frozen=True)
class Place:
    """A schema node a path reaches, and, past a tagged union (the workloads' `tool`), the tag taken, the
    union's members by tag and the path from the member on (what another tool's member is walked along)."""

    node: dict[str, Any]
    tag: str | None = None
    members: tuple[tuple[str, str], ...] = ()  # (tag, $ref) of the tagged union
    inside: tuple[str | int, ...] = ()


@cache
def _schema() -> dict[str, Any]:
    return json_schema()


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while isinstance(ref := node.get("$ref"), str):
        node = _schema()["$defs"][ref.rsplit("/", 1)[-1]]
    return node


def _alternatives(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The node's schemas a value may match: a union's members, flattened."""
    node = _resolve(node)
    members = node.get("anyOf") or node.get("oneOf")
    if not isinstance(members, list):
        yield node
        return
    for member in members:
        yield from _alternatives(member)


def _children(node: dict[str, Any], part: str | int) -> Iterator[dict[str, Any]]:
    for alternative in _alternatives(node):
        if isinstance(part, int):
            if isinstance(items := alternative.get("items"), dict):
                yield items
        elif part in alternative.get("properties", {}):
            yield alternative["properties"][part]
        elif isinstance(extra := alternative.get("additionalProperties"), dict):
            yield extra


def _step(place: Place, part: str | int) -> list[Place]:
    node = _resolve(place.node)
    mapping = node.get("discriminator", {}).get("mapping", {})
    if isinstance(part, str) and part in mapping:
        return [Place({"$ref": mapping[part]}, part, tuple(sorted(mapping.items())))]
    member = isinstance(part, str) and ("[" in part or UNION_TAG.match(part) is not None)
    if member and not any(part in alternative.get("properties", {}) for alternative in _alternatives(node)):
        return [place]  # a union member's name (`int`, `function-after[...]`): the data has no key for it
    return [Place(child, place.tag, place.members, (*place.inside, part) if place.tag else ()) for child in _children(node, part)]


def places(loc: tuple[str | int, ...]) -> list[Place]:
    """The object schemas (those with properties) pydantic's location `loc` can point at."""
    here = [Place(_schema())]
    for part in loc:
        here = [after for place in here for after in _step(place, part)]
    return [
        Place(alternative, p.tag, p.members, p.inside)
        for p in here
        for alternative in _alternatives(p.node)
        if "properties" in alternative
    ]


def fields_at(loc: tuple[str | int, ...]) -> frozenset[str]:
    """The field names valid in the object at `loc`; empty when the schema has no object there."""
    return frozenset(name for place in places(loc) for name in place.node["properties"])


def tags_at(loc: tuple[str | int, ...]) -> tuple[str, ...]:
    """The tags a tagged union at `loc` takes (the tool names of a workload), sorted."""
    here = [Place(_schema())]
    for part in loc:
        here = [after for place in here for after in _step(place, part)]
    return tuple(sorted({tag for p in here for tag in _resolve(p.node).get("discriminator", {}).get("mapping", {})}))


def owners_elsewhere(place: Place, name: str) -> list[str]:
    """The other members of the tagged union `place` is in (other tools) whose object at the same path
    has a field `name`: 'clients' in a sysbench run is a pgbench field."""
    owners = []
    for tag, ref in place.members:
        if tag == place.tag:
            continue
        here = [Place({"$ref": ref})]
        for part in place.inside:
            here = [Place(child) for p in here for child in _children(p.node, part)]
        if any(name in alternative.get("properties", {}) for p in here for alternative in _alternatives(p.node)):
            owners.append(tag)
    return owners
