"""pgbench's schemas: the matrix's pgbench workload and the run record a pgbench step carries. Pure:
pydantic and pgarena.model.tool_spec only (the matrix is built on it)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pgarena.model.tool_spec import (
    FAN_OUT_REASON,
    MAX_CLIENTS,
    MAX_DURATION_S,
    MAX_STARTED_TOGETHER,
    MAX_SWEEP,
    Name,
    Slo,
    StepKind,
    StepSpec,
    Strict,
)

MAX_SCALE = 100_000  # pgbench scale 100,000 is ~1.5 TB; its load timeout is already 35 days
# TPROC-C's warehouses: one is ~100 MB loaded, so 10,000 is ~1 TB (HammerDB's own tests stop there too).
MAX_WAREHOUSES = 10_000
MAX_LOAD_CONNECTIONS = 64
# A warehouse's rows in units of pgbench's scale (100,000 rows, ~15 MB): ~500,000 rows, ~100 MB.
WAREHOUSE_LOAD_SIZE = 7
# Why an upper bound is there, for the matrix's refusal (pgarena.model.matrix).
LIMIT_REASONS = {
    "scale": "pgbench scale 100,000 is about 1.5 TB; its load would outlast every timeout",
    "warehouses": "10,000 TPROC-C warehouses are about 1 TB; its load would outlast every timeout",
}
# What pgbench calls another tool's field, by that field's path in a workload: the fix a misplaced one is given.
COUNTERPARTS = {"run.threads": "clients", "run.report_interval_s": "progress_s", "prepare": "init"}
# The order-entry mix (TPROC-C, pgarena's kit: pgarena.tools.pgbench.tpcc) in place of pgbench's scripts.
TPROCC = "tprocc"
Builtin = Literal["tpcb-like", "simple-update", "select-only", "tprocc"]
# The init fields that shape pgbench -i's tables: the TPROC-C loader has its own schema (a field at its default
# is not one asked for).
PGBENCH_INIT_ONLY = (
    "scale",
    "fillfactor",
    "partitions",
    "partition_method",
    "foreign_keys",
    "unlogged_tables",
    "data_generation",
    "init_steps",
)


class PgbenchInit(Strict):
    """pgbench --initialize: timed, its phases recorded; load time is a result of its own."""

    scale: int = Field(1, ge=1, le=MAX_SCALE, description=f"pgbench -s, at most {MAX_SCALE:,}")
    fillfactor: int = Field(100, ge=10, le=100, description="pgbench -F: fill factor of the tables")
    partitions: int | None = Field(None, ge=1, le=100_000, description="partition pgbench_accounts")
    partition_method: Literal["range", "hash"] | None = Field(None, description="with partitions: range or hash")
    foreign_keys: bool = Field(False, description="create foreign keys between the tables")
    unlogged_tables: bool = Field(False, description="create the tables UNLOGGED (no WAL)")
    data_generation: Literal["client", "server"] = Field("client", description="client-side (g) or server-side (G)")
    init_steps: str | None = Field(
        None, pattern=r"^[dtgGvpf]+$", description="pgbench -I steps, e.g. dtGvp; overrides data_generation"
    )
    each_repetition: bool = Field(
        False,
        description="load the data set again before each repetition: the interval then covers data-layout variance too",
    )
    warehouses: int | None = Field(
        None,
        ge=1,
        le=MAX_WAREHOUSES,
        description=f"with run.builtin tprocc: TPROC-C's warehouses (its scale), at most {MAX_WAREHOUSES:,}; "
        "loaded by pgarena's kit, not pgbench -i",
    )
    parallel: int = Field(
        1,
        ge=1,
        le=MAX_LOAD_CONNECTIONS,
        description="with warehouses: connections loading warehouses at once (one warehouse per task)",
    )

    @model_validator(mode="after")
    def _partitioning(self) -> PgbenchInit:
        if self.partition_method and not self.partitions:
            raise ValueError("partition_method needs partitions")
        return self


# pgbench's \shell and \setshell run a program on the worker; pgbench reads a backslash anywhere outside
# quotes as a meta-command, in any case, so the whole text is searched (a false alarm costs a rewording).
SHELL_META_COMMAND = re.compile(r"\\\s*(set)?shell", re.IGNORECASE)
SHELL_FIX = (
    "pgbench's \\shell and \\setshell start a program on the worker, next to its credentials: pgarena refuses "
    "them in custom scripts; compute values with \\set or in SQL instead"
)


class PgbenchScript(Strict):
    """A script in a weighted mix: a builtin one, or custom SQL shipped in the matrix."""

    builtin: Literal["tpcb-like", "simple-update", "select-only"] | None = Field(
        None, description="a builtin script; or give sql"
    )
    sql: str | None = Field(
        None, min_length=1, description="pgbench script text (meta-commands allowed, except \\shell and \\setshell)"
    )
    weight: int = Field(1, ge=1, le=1_000_000, description="relative frequency in the mix (@weight)")

    @field_validator("sql")
    @classmethod
    def _no_shell(cls, value: str | None) -> str | None:
        if value is not None and SHELL_META_COMMAND.search(value):
            raise ValueError(SHELL_FIX)
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> PgbenchScript:
        if (self.builtin is None) == (self.sql is None):
            raise ValueError("set exactly one of 'builtin' or 'sql'")
        return self


class PgbenchRun(Strict):
    clients: int | list[int] = Field(1, description="one client count, or a list for a sweep")
    jobs: int = Field(1, ge=1, le=MAX_CLIENTS, description="pgbench threads; at most the clients")
    duration_s: int | None = Field(
        None, ge=1, le=MAX_DURATION_S, description=f"run for this long (-T), at most {MAX_DURATION_S:,} s (a week)"
    )
    transactions: int | None = Field(None, ge=1, le=1_000_000_000, description="or run this many transactions per client (-t)")
    protocol: Literal["simple", "extended", "prepared"] = Field("simple", description="query protocol (-M)")
    progress_s: int = Field(5, ge=1, le=3600, description="seconds between progress lines (-P): the stability figures")
    builtin: Builtin = Field(
        "tpcb-like",
        description="the builtin script run when no scripts are given; tprocc: the TPROC-C order-entry mix "
        "(init.warehouses; docs/guide/03-measurements.md)",
    )
    scripts: list[PgbenchScript] | None = Field(None, min_length=1, description="a weighted mix; replaces builtin")
    rate_tps: float | None = Field(None, gt=0, le=1e9, description="throttle to this rate (--rate); schedule lag is reported")
    latency_limit_ms: float | None = Field(None, gt=0, le=3_600_000, description="count transactions slower than this as late")
    max_tries: int | None = Field(None, ge=1, le=1_000_000, description="retry serialization/deadlock failures (pgbench 15+)")
    percentiles: bool = Field(True, description="log every transaction's latency for exact p50/p95/p99")
    no_vacuum: bool = Field(False, description="skip pgbench's vacuum of its tables before the run (-n)")
    warmup_s: int = Field(
        0,
        ge=0,
        le=MAX_DURATION_S,
        description="leave the run's first seconds out of every figure (tps, percentiles, progress, stability); "
        "counted within duration_s",
    )
    slo: Slo | None = Field(
        None,
        description="find the highest open-loop rate at which this latency objective holds: a closed-loop run for the "
        "ceiling, then `probes` runs bisecting on --rate, all in the run's one worker step",
    )
    workers: int = Field(
        1, ge=1, description=f"split the clients across this many workers started together (at most {MAX_STARTED_TOGETHER})"
    )
    max_clients_per_worker: int | None = Field(
        None, ge=1, le=MAX_CLIENTS, description="or: as many workers as it takes to keep each at or under this many clients"
    )

    @field_validator("clients")
    @classmethod
    def _positive_clients(cls, value: int | list[int]) -> int | list[int]:
        counts = value if isinstance(value, list) else [value]
        if not counts:
            raise ValueError("give at least one client count")
        if len(counts) > MAX_SWEEP:
            raise ValueError(f"a sweep has at most {MAX_SWEEP} client counts")
        if any(c < 1 or c > MAX_CLIENTS for c in counts):
            raise ValueError(f"client counts must be between 1 and {MAX_CLIENTS:,}")
        if len(set(counts)) != len(counts):
            raise ValueError("client counts in a sweep must be distinct")
        return value

    @field_validator("workers")
    @classmethod
    def _started_together(cls, value: int) -> int:
        if value > MAX_STARTED_TOGETHER:
            raise ValueError(
                f"at most {MAX_STARTED_TOGETHER} workers: {FAN_OUT_REASON}; lower workers to {MAX_STARTED_TOGETHER} or fewer"
            )
        return value

    @model_validator(mode="after")
    def _duration_or_transactions(self) -> PgbenchRun:
        if (self.duration_s is None) == (self.transactions is None):
            raise ValueError("set exactly one of 'duration_s' (-T) or 'transactions' (-t)")
        if (self.workers > 1 or self.max_clients_per_worker) and not (self.percentiles and self.duration_s):
            # Shards are merged over their common window from per-transaction logs.
            raise ValueError("several workers need 'percentiles': true and 'duration_s' (their logs are merged)")
        if self.warmup_s:
            if self.duration_s is None:
                raise ValueError(
                    "warmup_s needs 'duration_s' (-T): a 'transactions' (-t) run has no seconds to leave out; "
                    "give duration_s instead of transactions, or remove warmup_s"
                )
            if self.warmup_s >= self.duration_s:
                raise ValueError(
                    f"warmup_s ({self.warmup_s}) must be shorter than duration_s ({self.duration_s}): the warm-up is "
                    "the start of the run, left out of the figures; lower warmup_s or raise duration_s"
                )
            if not self.percentiles:
                raise ValueError("warmup_s needs 'percentiles': true: the window is cut from the per-transaction log")
        if self.slo is not None:
            self._slo_runnable()
        return self

    def _slo_runnable(self) -> None:
        if self.rate_tps is not None:
            raise ValueError("slo searches the rate itself: remove 'rate_tps' (or the slo)")
        if self.latency_limit_ms is not None:
            # Under --rate, --latency-limit skips transactions already late: they would leave the probe's percentiles.
            raise ValueError(
                "slo with latency_limit_ms: under --rate pgbench skips the transactions already later than the limit, "
                "and a skipped transaction has no latency, so a probe's percentile would leave out its slowest; "
                "remove 'latency_limit_ms' (the slo's limit is the latency objective)"
            )
        if self.workers > 1 or self.max_clients_per_worker:
            # A rate split across shards and merged percentiles per probe is not built: refuse rather than guess.
            raise ValueError(
                "slo runs on one worker: remove 'workers' / 'max_clients_per_worker' (or the slo); "
                "an SLO search across sharded workers is not supported"
            )
        if not (self.percentiles and self.duration_s):
            raise ValueError("slo needs 'percentiles': true and 'duration_s': each probe's percentiles come from its log")

    @property
    def tool_runs(self) -> int:
        """pgbench runs one step makes: the SLO search's ceiling run and probes, else one."""
        return 1 + self.slo.probes if self.slo is not None else 1

    @property
    def client_counts(self) -> list[int]:
        return list(self.clients) if isinstance(self.clients, list) else [self.clients]

    def workers_for(self, clients: int) -> int:
        """Workers asked for: a fixed count, or enough for the per-worker client cap."""
        if self.max_clients_per_worker:
            return max(self.workers, -(-clients // self.max_clients_per_worker))
        return self.workers


class PgbenchWorkload(Strict):
    name: Name
    tool: Literal["pgbench"] = Field(description="pgbench")
    init: PgbenchInit = Field(default_factory=PgbenchInit, description="the data set load (pgbench -i)")
    run: PgbenchRun = Field(description="the measured run")

    @model_validator(mode="after")
    def _tprocc(self) -> PgbenchWorkload:
        """The order-entry mix needs its warehouses and its own loader; pgbench -i's options do not apply."""
        warehouses = self.init.warehouses
        if self.run.builtin != TPROCC:
            if warehouses is not None or self.init.parallel != 1:
                raise ValueError('init.warehouses and init.parallel load TPROC-C: set run.builtin to "tprocc" or remove them')
            return self
        if warehouses is None:
            raise ValueError('run.builtin tprocc needs init.warehouses (TPROC-C\'s scale): add e.g. "init": {"warehouses": 4}')
        if self.run.scripts:
            raise ValueError("run.builtin tprocc runs its own six scripts: remove run.scripts (or use builtin tpcb-like)")
        # Set to anything but its default: a matrix read back from its JSON (every field written) is refused
        # only for what was asked.
        given = [
            f"init.{name}" for name in PGBENCH_INIT_ONLY if getattr(self.init, name) != PgbenchInit.model_fields[name].default
        ]
        if given:
            raise ValueError(
                f"{', '.join(given)}: pgbench -i's options; run.builtin tprocc loads its own schema: remove them "
                "(its size is init.warehouses)"
            )
        if self.init.parallel > warehouses:
            raise ValueError(
                f"init.parallel ({self.init.parallel}) is more than init.warehouses ({warehouses}): the loader runs one "
                f"warehouse per connection; lower init.parallel to {warehouses} or fewer"
            )
        return self

    @property
    def client_counts(self) -> list[int]:
        return self.run.client_counts

    @property
    def slo(self) -> Slo | None:
        return self.run.slo

    @property
    def load_size(self) -> int:
        if self.init.warehouses is not None:
            return self.init.warehouses * WAREHOUSE_LOAD_SIZE
        return self.init.scale

    @property
    def run_s(self) -> int | None:
        return self.run.duration_s

    @property
    def cleans_up(self) -> bool:
        return False

    @property
    def reloads_each_repetition(self) -> bool:
        return self.init.each_repetition

    @property
    def long_field(self) -> str | None:
        return "run.scripts" if self.run.scripts else None

    def workers(self, clients: int) -> int:
        return self.run.workers_for(clients)

    def step_spec(self, kind: StepKind) -> PgbenchStep:
        if kind != "run":
            return PgbenchStep(init=self.init)
        run = self.run
        # The warm-up, rate and SLO travel as the record's own fields, read there only: the run section
        # keeps the command's other parameters.
        return PgbenchStep(
            run=run.model_copy(update={"warmup_s": 0, "rate_tps": None, "slo": None}),
            warehouses=self.init.warehouses,
            warmup_s=run.warmup_s or None,
            rate_tps=run.rate_tps,
            slo=run.slo,
            duration_s=run.duration_s,
        )


class PgbenchStep(StepSpec):
    """A pgbench step's record: -i's parameters for the load, the run's for a run. Its connections are
    StepSpec's: -i uses one; a run one per client (its setup connection closes before the clients connect)."""

    tool: Literal["pgbench"] = "pgbench"
    init: PgbenchInit | None = None
    run: PgbenchRun | None = None
    warehouses: int | None = Field(None, description="a TPROC-C run's warehouses (pgbench --scale: its scripts' :scale)")

    def workers(self, clients: int) -> int:
        return self.run.workers_for(clients) if self.run is not None else 1

    def connections(self, kind: StepKind, clients: int | None) -> int:
        """The TPROC-C loader opens init.parallel connections at once; the rest as every step."""
        if kind == "init" and self.init is not None and self.init.warehouses is not None:
            return self.init.parallel
        return super().connections(kind, clients)

    @property
    def progress_interval_s(self) -> int | None:
        return self.run.progress_s if self.run is not None else None
