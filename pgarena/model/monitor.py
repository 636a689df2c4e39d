"""What the connection monitor records during a run: activity samples, lock waits, incidents and its report."""

from __future__ import annotations

from pydantic import BaseModel, Field

BACKGROUND_NAMES_SHOWN = 5


class LockWait(BaseModel):
    """Benchmark sessions waiting on a lock another session holds (pg_blocking_pids)."""

    waiting: int = Field(description="benchmark sessions waiting on this blocker")
    wait_event: str = Field(description="wait_event_type:wait_event, e.g. Lock:relation")
    blocking_pid: int
    blocking_query: str = Field(description="the first line of the blocker's current or last query")

    def describe(self) -> str:
        return f"{self.waiting} session(s) waiting on {self.wait_event}, blocked by pid {self.blocking_pid} ({self.blocking_query!r})"


class ActivitySample(BaseModel):
    t_s: float = Field(description="seconds since the monitor started")
    total: int
    benchmark: int = Field(description="sessions of the step being measured")
    background: int = Field(0, description="sessions of other clients: not this campaign's (background load)")
    background_active: int = Field(0, description="of those, the ones seen working (state not idle, where the role may see it)")
    background_by_name: dict[str, int] = Field(
        default_factory=dict, description="other clients' sessions by application_name ((role) when it has none)"
    )
    by_state: dict[str, int]
    by_role: dict[str, int]
    longest_s_by_state: dict[str, float]
    lock_waits: list[LockWait] = Field(default_factory=list)


class Incident(BaseModel):
    kind: str
    at_s: float
    message: str


class ConnectionReport(BaseModel):
    interval_s: float
    samples: int
    peak_benchmark: int
    peak_total: int
    peak_by_state: dict[str, int]
    longest_s_by_state: dict[str, float]
    incidents: list[Incident] = Field(default_factory=list)
    lock_waits: list[LockWait] = Field(default_factory=list, description="the last lock waits the monitor saw")
    peak_background: int = Field(0, description="most sessions of other clients seen at once (not this campaign's)")
    peak_background_active: int = Field(0, description="most of them seen working at once: background load on the server")
    background_by_name: dict[str, int] = Field(
        default_factory=dict, description="other clients' sessions by application_name ((role) without one), at their peak"
    )
    lock_wait_s: float = Field(
        0.0, description="how long the step's sessions were seen waiting on a lock: the samples that saw a wait x the interval"
    )
    raw: str | None = Field(None, description="the sample series (JSON lines)")

    def background_note(self) -> str | None:
        """The warning for a verdict's noise notes when other clients worked on the server during the run."""
        if not self.peak_background_active:
            return None
        names = sorted(self.background_by_name.items(), key=lambda kv: (-kv[1], kv[0]))[:BACKGROUND_NAMES_SHOWN]
        who = ", ".join(f"{name} {count}" for name, count in names)
        return (
            f"background load: up to {self.peak_background_active} session(s) of other clients were working on the server "
            f"during the run ({who}); their load is in these figures"
        )
