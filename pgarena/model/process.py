"""A process as this machine knows it, and the children a coordinator recorded in a campaign's folder."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ProcessIdentity(BaseModel):
    """A pid alone names whichever process has it now; with the host and its start (`<boot id>:<clock
    ticks since boot>`) it names one process, so a pid reused after a crash is never mistaken for it."""

    pid: int = Field(gt=1)
    host: str
    started: str


class ChildRecord(BaseModel):
    """A process the local runtime started for a campaign (a line of the folder's children.jsonl): what a
    later run or resume kills if the coordinator that started it died without stopping it."""

    what: Literal["worker", "postmaster", "proxy"]
    campaign_id: str
    process: ProcessIdentity
    coordinator: ProcessIdentity
    program: str = Field(description="the executable's file name: a process with another one is never killed")
    group: bool = Field(False, description="kill its whole process group (a worker and the tool it runs)")
    container: str | None = Field(None, description="a container worker's container name, removed with it")
    uid: int | None = Field(None, description="the uid it ran as: a process of another owner is never killed")
