"""A worker whose task stopped leaving its step unanswered (pgarena.aws.task_stopped reads it from ECS's
task state change; pgarena.campaign.stopped_worker fails the step)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from pgarena.model.errors import ErrorInfo


class StoppedWorker(BaseModel):
    """A worker whose task stopped without answering its step (before it ran, or mid-step): the token its
    step waits on, and why."""

    task_arn: str
    step_id: str
    task_token: str = Field(repr=False)
    error: ErrorInfo
    # The home region, whose state machine waits on the token (None: the function's own, as for a home task).
    home_region: str | None = None
