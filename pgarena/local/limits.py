"""What AWS enforces and moto does not, checked by the strict local runtime (`--aws-strict`). Pure functions.

- Step Functions: a state's input or output, and an execution's input, at most 256 KiB (UTF-8 bytes);
  past it the execution fails with States.DataLimitExceeded, which no Catch can handle.
- An inline Map runs at most 40 iterations at once: MaxConcurrency 0 (unlimited) or above 40 behaves
  as 40. moto runs them all: the strict runtime caps the definition. What must start together beyond
  it (a step's workers, a consolidation phase's targets) is refused by validation (pgarena.planning.limits).
- RunTask container overrides at most 8,192 characters: pgarena.local.endpoints.EcsEndpoint refuses more.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pgarena.model.matrix import MAX_STARTED_TOGETHER
from pgarena.planning.limits import STATE_LIMIT_BYTES

# https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html (Maximum input or output size):
# the limit validation plans within, enforced here on what moto's interpreter really passes.
MAX_PAYLOAD_BYTES = STATE_LIMIT_BYTES
DATA_LIMIT_ERROR = "States.DataLimitExceeded"
# https://docs.aws.amazon.com/step-functions/latest/dg/state-map-inline.html (concurrency limit)
MAX_INLINE_MAP_CONCURRENCY = MAX_STARTED_TOGETHER
# The Map states whose iterations must run together: a step's shards, and a consolidation phase's targets.
SHARDS_MAP = "Run Shards Together"


class StrictLimitError(ValueError):
    """A campaign AWS would not run as planned, refused before it starts."""


@dataclass(frozen=True)
class DataLimitViolation:
    state: str
    field: str  # "input" | "output"
    size_bytes: int

    @property
    def cause(self) -> str:
        return (
            f"The state '{self.state}' {'received an input' if self.field == 'input' else 'returned a result'} of "
            f"{self.size_bytes:,} bytes, over the maximum of {MAX_PAYLOAD_BYTES:,} bytes a state's {self.field} may have"
        )


def payload_size(text: str) -> int:
    return len(text.encode("utf-8"))


def oversized_states(history: Sequence[Mapping[str, Any]]) -> list[DataLimitViolation]:
    """Each state input or output in an execution history (GetExecutionHistory events) past 256 KiB."""
    violations = []
    for event in history:
        for key, field_name in (("stateEnteredEventDetails", "input"), ("stateExitedEventDetails", "output")):
            details = event.get(key)
            if details and payload_size(details.get(field_name) or "") > MAX_PAYLOAD_BYTES:
                violations.append(DataLimitViolation(details["name"], field_name, payload_size(details[field_name])))
    return violations


def unfinished_state_cause(history: Sequence[Mapping[str, Any]]) -> str:
    """DataLimitExceeded's cause naming the state that failed with it: the last one entered and never exited."""
    open_states: list[str] = []
    for event in history:
        if "stateEnteredEventDetails" in event:
            open_states.append(event["stateEnteredEventDetails"]["name"])
        elif "stateExitedEventDetails" in event and event["stateExitedEventDetails"]["name"] in open_states:
            open_states.remove(event["stateExitedEventDetails"]["name"])
    state = open_states[-1] if open_states else "?"
    return f"The state '{state}' returned a result over the maximum of {MAX_PAYLOAD_BYTES:,} bytes a state's output may have"


def effective_concurrency(max_concurrency: int) -> int:
    """How many iterations of an inline Map AWS runs at once for this MaxConcurrency."""
    if max_concurrency == 0 or max_concurrency > MAX_INLINE_MAP_CONCURRENCY:
        return MAX_INLINE_MAP_CONCURRENCY
    return max_concurrency


def _inline_maps(states: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, state in states.items():
        if state["Type"] == "Map":
            processor = state.get("ItemProcessor") or state.get("Iterator") or {}
            if (processor.get("ProcessorConfig") or {}).get("Mode", "INLINE") == "INLINE":
                yield name, state
            yield from _inline_maps(processor.get("States", {}))
        for branch in state.get("Branches", []):
            yield from _inline_maps(branch["States"])


def capped_definition(asl: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The definition with each inline Map's static MaxConcurrency as AWS applies it, and what changed."""
    capped = json.loads(json.dumps(asl))
    notes = []
    for name, state in _inline_maps(capped["States"]):
        if "MaxConcurrency" in state and state["MaxConcurrency"] != effective_concurrency(state["MaxConcurrency"]):
            notes.append(f"{name}: MaxConcurrency {state['MaxConcurrency']} runs as {MAX_INLINE_MAP_CONCURRENCY} in AWS")
            state["MaxConcurrency"] = MAX_INLINE_MAP_CONCURRENCY
    return capped, notes
