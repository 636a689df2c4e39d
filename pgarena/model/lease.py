"""A connection lease's record: who holds how many of a server's slots, until when."""

from __future__ import annotations

from pydantic import BaseModel, Field, TypeAdapter

from pgarena.model.process import ProcessIdentity


class Holder(BaseModel):
    holder: str
    slots: int
    expires_at: float
    process: ProcessIdentity | None = Field(
        None, description="the coordinator holding it, where the store can tell (local runs): gone, its lease is released"
    )


HOLDERS = TypeAdapter(list[Holder])
