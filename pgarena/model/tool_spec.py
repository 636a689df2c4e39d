"""What every tool's schema shares, at the bottom of the layers: it imports pydantic only.

The matrix (pgarena.model.matrix) is built on the tools' workload schemas (pgarena.tools.<tool>.spec),
and those on this module: the strict base, workload names, the runtime's limits a workload must fit,
the latency objective, and the two contracts a tool's schema keeps (ToolWorkload for the matrix and
the planner, StepSpec for the run record a step carries to the worker, its summary and aggregation).
"""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Names end up in S3 keys, DynamoDB keys and file names: keep them boring.
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
MAX_CLIENTS = 10_000
MAX_SWEEP = 64
MAX_DURATION_S = 7 * 24 * 3600
# AWS Step Functions' inline Map runs at most 40 iterations at once: a step's workers (and a consolidation
# phase's targets) start together only up to that; the others would start after the start barrier gave up.
MAX_STARTED_TOGETHER = 40
FAN_OUT_REASON = (
    f"AWS Step Functions starts at most {MAX_STARTED_TOGETHER} iterations of an inline Map at once, so only "
    f"{MAX_STARTED_TOGETHER} workers can meet at the start barrier"
)

Name = Annotated[str, Field(pattern=NAME_PATTERN, description="lower-case letters, digits, - and _")]
StepKind = Literal["init", "run", "cleanup"]


class Strict(BaseModel):
    # strict: `true` is not a client count, "5" not a port; allow_inf_nan: Infinity is not a rate.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# Open-loop probes an SLO search runs after its closed-loop ceiling run (docs/guide/03-measurements.md).
DEFAULT_SLO_PROBES = 5
MAX_SLO_PROBES = 12


class Slo(Strict):
    """A latency objective: pgarena finds the highest --rate at which it holds (pgarena.analysis.slo)."""

    p95_ms: float | None = Field(None, gt=0, le=3_600_000, description="the p95 latency must stay at or under this")
    p99_ms: float | None = Field(None, gt=0, le=3_600_000, description="or: the p99 latency must stay at or under this")
    probes: int = Field(
        DEFAULT_SLO_PROBES,
        ge=1,
        le=MAX_SLO_PROBES,
        description="open-loop runs of the bisection on the rate, after one closed-loop run for the ceiling",
    )

    @model_validator(mode="after")
    def _one_objective(self) -> Slo:
        if (self.p95_ms is None) == (self.p99_ms is None):
            raise ValueError("set exactly one of 'p95_ms' or 'p99_ms'")
        return self

    @property
    def percentile(self) -> Literal[95, 99]:
        return 95 if self.p95_ms is not None else 99

    @property
    def limit_ms(self) -> float:
        limit = self.p95_ms if self.p95_ms is not None else self.p99_ms
        assert limit is not None  # _one_objective
        return limit


class StepSpec(Strict):
    """A step's run record, resolved at planning: what the tool's command needs (fields of each tool's
    subclass) and what the worker, its summary and aggregation read whatever the tool."""

    tool: str = Field(description="the tool's name: its subclass narrows it to a literal")

    warmup_s: int | None = Field(None, description="seconds left out of the start of a run's figures; None: none")
    rate_tps: float | None = Field(None, description="the rate a run is throttled to (--rate); None: closed loop")
    slo: Slo | None = Field(None, description="the latency objective the run's step searches the rate for")
    duration_s: int | None = Field(None, description="a run's length; None for a run of a transaction count or a load")

    @property
    def progress_interval_s(self) -> int | None:
        """Seconds between a run's progress lines, where the tool prints them: its latency intervals' length."""
        return None

    @property
    def tool_runs(self) -> int:
        """Tool runs the step makes in sequence: an SLO search's ceiling run and probes, else one."""
        return 1 + self.slo.probes if self.slo is not None else 1

    def connections(self, kind: StepKind, clients: int | None) -> int:
        """Connections the step opens at its peak (measured server-side, see docs/guide/02-matrix.md, "Connection budgets"):
        by default, a run one per client and a load or cleanup one."""
        if kind == "run":
            assert clients is not None  # the plan gives every run its clients
            return clients
        return 1

    def workers(self, clients: int) -> int:
        """Workers a run's clients are split across (pgarena.planning.shards); one unless the tool shards."""
        return 1


class ToolWorkload(Protocol):
    """What the matrix and the planner ask of a tool's workload schema."""

    @property
    def name(self) -> str: ...

    @property
    def tool(self) -> str: ...

    @property
    def client_counts(self) -> list[int]:
        """The client counts of the sweep, one run step each per repetition."""
        ...

    @property
    def slo(self) -> Slo | None: ...

    @property
    def load_size(self) -> int:
        """The data set's size in units of 100,000 rows, which the load's timeout grows with."""
        ...

    @property
    def run_s(self) -> int | None:
        """One tool run's own time bound in seconds; None for a run of a transaction count."""
        ...

    @property
    def cleans_up(self) -> bool:
        """A cleanup step follows the last repetition."""
        ...

    @property
    def reloads_each_repetition(self) -> bool:
        """The data set is loaded again before each repetition, not only the first (init.each_repetition)."""
        ...

    @property
    def long_field(self) -> str | None:
        """The field that makes a workload long (custom script text), named by the override-size refusal."""
        ...

    def workers(self, clients: int) -> int: ...

    def step_spec(self, kind: StepKind) -> StepSpec: ...
