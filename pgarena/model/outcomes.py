"""What the state machine hands Aggregate And Rank: each target's and step's outcome (status, Catch failure)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, field_validator

from pgarena.model.results import ServerInfo


class StepOutcome(BaseModel):
    step_id: str
    status: str
    failure: dict[str, Any] | None = None


class TargetOutcome(BaseModel):
    """One item of the state machine's Map output."""

    name: str
    server: ServerInfo | None = None
    steps: list[StepOutcome] = []
    failure: dict[str, Any] | None = None
    phase: int | None = None

    @field_validator("steps", mode="before")
    @classmethod
    def _flatten_shards(cls, value: Any) -> Any:
        """Each step comes back as {"shards": [outcome, ...]}: one outcome per worker."""
        if not isinstance(value, list):
            return value
        return [shard for item in value for shard in (item["shards"] if isinstance(item, dict) and "shards" in item else [item])]


def _flatten_phases(value: Any) -> Any:
    """Run Phases In Order returns [{"phase": 1, "targets": [outcome, ...]}, ...]: one outcome per target
    and phase. A flat list of outcomes (a refused campaign's, or one built in Python) passes as it is."""
    if not isinstance(value, list):
        return value
    flat = []
    for item in value:
        if isinstance(item, dict) and "targets" in item and "name" not in item:
            flat += [{**outcome, "phase": item.get("phase")} for outcome in item["targets"]]
        else:
            flat.append(item)
    return flat


# The Aggregate And Rank event's outcomes, whichever shape they come in.
Outcomes = Annotated[list[TargetOutcome], BeforeValidator(_flatten_phases)]
