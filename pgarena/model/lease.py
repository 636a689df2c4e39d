"""A connection lease's record: who holds how many of a server's slots, until when."""

from __future__ import annotations

from pydantic import BaseModel, TypeAdapter


class Holder(BaseModel):
    holder: str
    slots: int
    expires_at: float


HOLDERS = TypeAdapter(list[Holder])
