"""A server's lease record: who holds it (alone, or sharing its slots), who waits for it in arrival order."""

from __future__ import annotations

from pydantic import BaseModel, Field, TypeAdapter

from pgarena.model.process import ProcessIdentity


class Holder(BaseModel):
    holder: str = Field(description="<campaign_id>/<target>")
    slots: int
    expires_at: float
    process: ProcessIdentity | None = Field(
        None, description="the coordinator holding it, where the store can tell (local runs): gone, its lease is released"
    )
    shared: bool = Field(
        False, description="connections.share_server: beside other sharing holders, within the slots; else the server alone"
    )
    database: str | None = Field(None, description="the database whose tables it initializes and measures")
    instance: str | None = Field(
        None,
        description="the running server it measures (its postmaster's start): sharing holders of one database conflict there",
    )


class Waiter(BaseModel):
    """A target waiting for its turn on a server; the queue is in arrival order and only its head may take the lease."""

    holder: str
    shared: bool = False
    since: float = Field(description="when it joined the queue (the store's clock)")
    expires_at: float = Field(description="a waiter that stops renewing (its process died) leaves the queue then")
    process: ProcessIdentity | None = None


class LeaseRecord(BaseModel):
    """One server's record, replaced whole by a conditional write on `version` (0: no record yet)."""

    holders: list[Holder] = Field(default_factory=list)
    queue: list[Waiter] = Field(default_factory=list)
    version: int = 0


HOLDERS = TypeAdapter(list[Holder])
WAITERS = TypeAdapter(list[Waiter])


class ServerIdentity(BaseModel):
    """Who a server is, whichever of its names or addresses reached it (pgarena.server.identity)."""

    system_identifier: str | None = Field(
        None, description="pg_control_system()'s: one per cluster (a standby or a restored snapshot shares its primary's)"
    )
    started_us: int | None = Field(None, description="pg_postmaster_start_time() in microseconds: one per running server")
    unreadable: list[str] = Field(default_factory=list, description="what the role could not read, and why")
