"""A matrix's problems as the user reads them: one line per JSON path, saying what to fix."""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from pgarena.model.matrix import ENV_VAR_PATTERN, NAME_PATTERN, SECRET_ARN_PATTERN, json_schema
from pgarena.model.suggest import did_you_mean
from pgarena.tools.workloads import LIMIT_REASONS, TOOL_NAMES


class Problem(BaseModel):
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class MatrixError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


_PATTERN_HINTS = {
    NAME_PATTERN: "use lower-case letters, digits, '-' and '_' (at most 63, starting with a letter or digit)",
    ENV_VAR_PATTERN: "give the name of an environment variable, e.g. PGARENA_PW_A",
    SECRET_ARN_PATTERN: "give a Secrets Manager secret ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME)",
}


def _json_path(loc: tuple[int | str, ...]) -> str:
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


# pydantic names the member of a union it tried (`clients.int`, `settings.x.float`): not a field.
_UNION_TAG = re.compile(r"^(str|int|float|bool|none|(list|dict|tuple)\[.*\])$")
# Why an upper bound is there, for the refusal's message.
_LIMIT_REASONS = {
    "duration_s": "a week at most; longer runs outgrow the worker's timers (split it into repetitions)",
    "provider": "a label for reports; it travels in every step's state",
    "transactions": "give duration_s for long runs",
    **LIMIT_REASONS,
}
NON_FINITE_FIX = "Infinity and NaN are not numbers a benchmark can use: give a finite number"


def _message(err: ErrorDetails) -> str:
    message = err["msg"].removeprefix("Value error, ")
    if isinstance(err.get("input"), bool) and err["type"] in ("int_type", "float_type", "list_type", "string_type"):
        # JSON true/false are not 1/0 here: `clients: true` must not run one client.
        return f"{json.dumps(err['input'])} is not a number: give a number"
    if err["type"] == "finite_number":
        return NON_FINITE_FIX
    if err["type"] in ("less_than_equal", "too_long") and err["loc"] and err["loc"][-1] in _LIMIT_REASONS:
        return f"{message}: {_LIMIT_REASONS[err['loc'][-1]]}"
    if err["type"] == "string_pattern_mismatch":
        return _PATTERN_HINTS.get(err["ctx"]["pattern"], message)
    if err["type"] == "extra_forbidden":
        hint = did_you_mean(str(err["loc"][-1]), field_names()) if err["loc"] else ""
        return f"unknown field{hint}: remove it or check its spelling (see `pgarena schema`)"
    return message


@cache
def field_names() -> frozenset[str]:
    """Every field name the matrix's JSON Schema defines, at any depth: what a misspelt key is compared with."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(properties)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json_schema())
    return frozenset(names)


def _without(data: Any, loc: tuple[int | str, ...]) -> None:
    """Remove the key `loc` points to from `data` in place; union tags in `loc` that the data has no
    key for are skipped (pydantic inserts them)."""
    node = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(node, dict) and part in node:
            if last:
                del node[part]
                return
            node = node[part]


# Passes of removing unknown fields and validating again: each may reveal checks the previous one hid.
MAX_PASSES = 4


def problems_in_one_pass(model: type[BaseModel], data: Any, error: ValidationError) -> list[Problem]:
    """Every problem at once. pydantic skips a model's cross-field checks (warmup_s shorter than
    duration_s) when one of its fields failed; an unknown field is such a failure, and removing it
    changes nothing else, so the matrix is validated again without them and what that finds is added."""
    problems = problems_of(error)
    for _ in range(MAX_PASSES):
        unknown = [e["loc"] for e in error.errors() if e["type"] == "extra_forbidden"]
        if not unknown:
            break
        data = copy.deepcopy(data)
        for loc in unknown:
            _without(data, loc)
        try:
            model.model_validate(data)
            break
        except ValidationError as again:
            error = again
        known = {(p.path, p.message) for p in problems}
        problems += [p for p in problems_of(error) if (p.path, p.message) not in known]
    return problems


def problems_of(error: ValidationError) -> list[Problem]:
    by_path: dict[str, list[str]] = {}
    for err in error.errors():
        # Drop pydantic's union tags from the location: function tags ("function-after[...]"), the type a
        # union member is named by, and the workload discriminator ("pgbench", "sysbench") after a list index.
        raw_loc = err["loc"]
        loc = tuple(
            p
            for i, p in enumerate(raw_loc)
            if isinstance(p, int)
            or (
                "[" not in p
                and not (i > 0 and _UNION_TAG.match(p))
                and not (p in TOOL_NAMES and i > 0 and isinstance(raw_loc[i - 1], int))
            )
        )
        messages = by_path.setdefault(_json_path(loc), [])
        message = _message(err)
        if message not in messages:
            messages.append(message)
    # A value no member of a union took gets one problem, listing what each member wanted.
    return [Problem(path=path, message=" or ".join(messages)) for path, messages in by_path.items()]
