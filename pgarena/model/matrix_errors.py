"""A matrix's problems as the user reads them: one line per JSON path, saying what to fix."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from pgarena.model.matrix import ENV_VAR_PATTERN, NAME_PATTERN, SECRET_ARN_PATTERN
from pgarena.model.schema_fields import UNION_TAG, fields_at, owners_elsewhere, places, tags_at
from pgarena.model.suggest import closest, did_you_mean
from pgarena.tools.workloads import COUNTERPARTS, LIMIT_REASONS, TOOL_NAMES


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
    if err["type"] == "extra_forbidden" and err["loc"]:
        return unknown_field(err["loc"])
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return _tag_message(err)
    if err["type"] == "literal_error" and isinstance(err.get("input"), str):
        return message + did_you_mean(err["input"], _QUOTED.findall(err["ctx"]["expected"]))
    return message


# The names in pydantic's lists of what it expected ("'simple', 'extended' or 'prepared'").
_QUOTED = re.compile(r"'([^']*)'")
SCHEMA_HINT = "(see `pgarena schema`)"


def suggestion(loc: tuple[int | str, ...]) -> str | None:
    """The field valid in the object at `loc[:-1]` closest to the unknown key `loc[-1]`, if any is close."""
    return closest(str(loc[-1]), fields_at(loc[:-1]) - {loc[-1]})


def unknown_field(loc: tuple[int | str, ...]) -> str:
    """An unknown key's message: another tool's field said as such, with what this tool calls it, or the
    closest field valid where the key is."""
    name = str(loc[-1])
    for place in places(loc[:-1]):
        owners = owners_elsewhere(place, name)
        if place.tag is None or not owners:
            continue
        words = [part for part in place.inside if isinstance(part, str)]
        what = f"{place.tag}'s {words[-1] if words else 'workload'}"
        counterpart = COUNTERPARTS.get(place.tag, {}).get(".".join([*words, name]))
        fix = f"{what} takes {counterpart}" if counterpart else f"remove it from {what}"
        return f"{name} is a {' or '.join(owners)} field, not {place.tag}'s: {fix} {SCHEMA_HINT}"
    match = suggestion(loc)
    hint = f" (did you mean {match}?)" if match else ""
    return f"unknown field{hint}: remove it or check its spelling {SCHEMA_HINT}"


def _tag_message(err: ErrorDetails) -> str:
    """A tagged union's tag (a workload's tool) missing or naming no member; reported at the tag's field."""
    key = err["ctx"]["discriminator"].strip("'")
    tags = tags_at(err["loc"])
    if not tags:  # not the matrix's union (a results.json's): pydantic's own words
        return err["msg"]
    if err["type"] == "union_tag_not_found":
        return f"missing: give one of {', '.join(tags)}"
    tag = str(err["ctx"]["tag"])
    return f"no {key} named {tag!r}{did_you_mean(tag, tags)}: one of {', '.join(tags)}"


def _location(err: ErrorDetails) -> tuple[int | str, ...]:
    """Where the error is in the data: a tagged union's tag error is its tag field's (`$.workloads[0].tool`)."""
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return (*err["loc"], err["ctx"]["discriminator"].strip("'"))
    return err["loc"]


def _node(data: Any, loc: tuple[int | str, ...]) -> Any:
    """What `loc` points to in `data` (None if nothing); union tags in `loc` that the data has no key for
    are skipped (pydantic inserts them)."""
    node = data
    for part in loc:
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_list or (isinstance(node, dict) and part in node):
            node = node[part]
    return node


def _without(data: Any, loc: tuple[int | str, ...]) -> None:
    """Remove the key `loc` points to from `data` in place."""
    parent = _node(data, loc[:-1])
    if isinstance(parent, dict) and loc[-1] in parent:
        del parent[loc[-1]]


# Passes of removing unknown fields and validating again: each may reveal checks the previous one hid.
MAX_PASSES = 4


def _meant(data: Any, error: ValidationError) -> dict[tuple[int | str, ...], str]:
    """Each misspelt key's object (its clean location) -> the field it was meant to be: the closest valid
    one, when the object lacks it (`durration_s` for duration_s)."""
    meant = {}
    for err in error.errors():
        if err["type"] == "extra_forbidden" and err["loc"]:
            match = suggestion(err["loc"])
            parent = _node(data, err["loc"][:-1])
            if match and isinstance(parent, dict) and match not in parent:
                meant[_clean(err["loc"][:-1])] = match
    return meant


def _knock_on(err: ErrorDetails, meant: dict[tuple[int | str, ...], str]) -> bool:
    """An error that is only the consequence of a misspelt key: the meant field missing, or its object's
    check naming it (`set exactly one of 'duration_s' or 'transactions'` after `durration_s`)."""
    loc = _clean(err["loc"])
    if err["type"] == "missing" and loc:
        return meant.get(loc[:-1]) == loc[-1]
    field = meant.get(loc)
    return field is not None and err["type"] == "value_error" and re.search(rf"\b{re.escape(field)}\b", err["msg"]) is not None


def problems_in_one_pass(model: type[BaseModel], data: Any, error: ValidationError) -> list[Problem]:
    """Every problem at once. pydantic skips a model's cross-field checks (warmup_s shorter than
    duration_s) when one of its fields failed; an unknown field is such a failure, and removing it
    changes nothing else, so the matrix is validated again without them and what that finds is added,
    but for what only the misspelling caused (the field it was meant to be missing)."""
    meant = _meant(data, error)
    problems = problems_of(error, meant)
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
        problems += [p for p in problems_of(error, meant) if (p.path, p.message) not in known]
        meant |= _meant(data, error)
    return problems


def _clean(raw_loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The location without pydantic's union tags: function tags ("function-after[...]"), the type a
    union member is named by, and the workload discriminator ("pgbench", "sysbench") after a list index."""
    return tuple(
        p
        for i, p in enumerate(raw_loc)
        if isinstance(p, int)
        or (
            "[" not in p
            and not (i > 0 and UNION_TAG.match(p))
            and not (p in TOOL_NAMES and i > 0 and isinstance(raw_loc[i - 1], int))
        )
    )


def _member(raw_loc: tuple[int | str, ...]) -> int | None:
    """The index in `raw_loc` of the first union member's type name (`clients.int`), if any."""
    return next((i for i, p in enumerate(raw_loc) if i > 0 and isinstance(p, str) and UNION_TAG.match(p)), None)


def _entered(errors: list[ErrorDetails]) -> set[tuple[int | str, ...]]:
    """The unions (by location) one of whose members took the value's shape and failed inside it."""
    entered = set()
    for err in errors:
        i = _member(err["loc"])
        if i is not None and len(err["loc"]) > i + 1:
            entered.add(err["loc"][:i])
    return entered


def problems_of(error: ValidationError, meant: dict[tuple[int | str, ...], str] | None = None) -> list[Problem]:
    """One problem per path; `meant` (from a misspelt key) drops the errors it alone caused."""
    errors = error.errors()
    entered = _entered(errors)
    by_path: dict[str, list[str]] = {}
    for err in errors:
        if meant and _knock_on(err, meant):
            continue
        i = _member(err["loc"])
        if i is not None and len(err["loc"]) == i + 1 and err["loc"][:i] in entered and err["type"].endswith("_type"):
            # `clients: [4, "8"]` is a list with a bad item, not also "not an integer": one mistake, one problem.
            continue
        messages = by_path.setdefault(_json_path(_clean(_location(err))), [])
        message = _message(err)
        if message not in messages:
            messages.append(message)
    # A value no member of a union took gets one problem, listing what each member wanted.
    return [Problem(path=path, message=" or ".join(messages)) for path, messages in by_path.items()]
