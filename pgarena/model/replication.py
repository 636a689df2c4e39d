"""Replication records: replica lag sampled during a run, each replica's catch-up after it, and their result."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Method = Literal["replay_lsn", "subscription_lsn", "replay_timestamp"]


class LagSample(BaseModel):
    """One look at one replica: how far behind the primary it was."""

    t_s: float = Field(description="seconds since the run started")
    stage: Literal["run", "catch_up"]
    replica: str
    primary_lsn: str | None = None
    replica_lsn: str | None = None
    lag_bytes: int | None = Field(None, description="primary WAL position - replica position")
    replay_at: str | None = Field(None, description="the replica's last replayed commit time (timestamp method)")
    lag_s: float | None = Field(None, description="primary clock - replay time (timestamp method)")
    error: str | None = None


class ReplicaCatchUp(BaseModel):
    """How one replica followed the run and how long it needed to catch up with its end."""

    name: str
    kind: str
    method: Method | None = Field(None, description="how its progress was read; None when it could not be")
    target_lsn: str | None = Field(None, description="the primary's WAL position when the run ended")
    target_at: str | None = Field(None, description="the marker commit's time (timestamp method)")
    caught_up: bool = False
    catch_up_s: float | None = Field(None, description="seconds from the run's end until the replica had replayed it")
    waited_s: float = Field(0.0, description="how long pgarena waited for it (the timeout when it never caught up)")
    timeout_s: float
    peak_lag_bytes: int | None = None
    peak_lag_s: float | None = None
    samples: int = 0
    lag_series: str | None = Field(None, description="the lag samples (JSON lines), shared by a run's replicas")
    error: str | None = None


class ReplicationResult(BaseModel):
    """A run's replication figures (WorkloadResult.replication)."""

    replicas: list[ReplicaCatchUp]
    run_s: float | None = Field(None, description="the measured run's length")
    transactions: int | None = None
    catch_up_s: float | None = Field(None, description="the slowest replica's catch-up; None when one never caught up")
    caught_up: bool = Field(description="every replica caught up within its timeout")
    sustainable_tps: float | None = Field(None, description="transactions / (run_s + catch_up_s)")
    raw: str | None = Field(None, description="the lag series (JSON lines)")
