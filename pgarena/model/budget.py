"""Connection budget records: the server's connection facts, its limits, and the budget a campaign may use."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

LimitName = Literal["server", "role", "database", "pooler"]


# pgarena's own connections to a target: the preflight and the live monitor.
COORDINATOR_CONNECTIONS = 2


class Sessions(BaseModel):
    """Client sessions already open when preflight looked, other than this campaign's own."""

    total: int = 0
    role: int = Field(0, description="held by the benchmark role")
    database: int = Field(0, description="on the benchmark database")
    pgarena: int = Field(0, description="other pgarena campaigns' sessions: held, counted with their leases, not here")
    by_campaign: dict[str, int] = Field(
        default_factory=dict, description="other campaigns' sessions by campaign tag (pgarena.model.plan.campaign_tag)"
    )
    by_role: dict[str, int] = Field(default_factory=dict)
    by_state: dict[str, int] = Field(default_factory=dict)


class ConnectionFacts(BaseModel):
    max_connections: int
    superuser_reserved_connections: int = 0
    reserved_connections: int = 0
    role: str
    role_is_superuser: bool = False
    role_can_use_reserved: bool = False
    role_conn_limit: int = -1
    database: str
    database_conn_limit: int = -1
    sessions: Sessions = Sessions()


class Limit(BaseModel):
    name: LimitName
    limit: int
    held: int
    available: int
    setting: str = Field(description="what to raise to lift this limit")
    # Optional: results written before it was recorded still load.
    setting_value: int | None = Field(
        None, description="that setting's value now: max_connections itself, not less reserved slots"
    )


class Budget(BaseModel):
    limits: list[Limit]
    binding: LimitName
    safety_margin: int
    coordinator_connections: int = COORDINATOR_CONNECTIONS
    capacity: int
    explanation: str
