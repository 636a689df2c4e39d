"""An execution's history as the use cases read it: each event's id and type, what the execution was
started with, and each state entered. Parsed from Step Functions' GetExecutionHistory by
pgarena.aws.executions (the Executions port); the fields pgarena reads only, the rest ignored."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class ExecutionStarted(_Read):
    input: str | None = None  # the execution's input, JSON text


class StateEntered(_Read):
    name: str
    input: str | None = None  # the state's input, JSON text


class HistoryEvent(_Read):
    id: int
    type: str
    started: ExecutionStarted | None = Field(None, alias="executionStartedEventDetails")
    entered: StateEntered | None = Field(None, alias="stateEnteredEventDetails")


HISTORY = TypeAdapter(list[HistoryEvent])


def execution_input(history: list[HistoryEvent]) -> str | None:
    """The input the execution was started with (None when the history does not hold its start)."""
    return next((event.started.input or "{}" for event in history if event.started is not None), None)


def entered(history: list[HistoryEvent]) -> set[str]:
    """The names of the states the execution entered."""
    return {event.entered.name for event in history if event.entered is not None}
