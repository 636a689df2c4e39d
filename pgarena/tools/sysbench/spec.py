"""sysbench's schemas: the matrix's sysbench workload and the run record a sysbench step carries. Pure:
pydantic and pgarena.model.tool_spec only (the matrix is built on it)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from pgarena.model.tool_spec import MAX_DURATION_S, Name, Slo, StepKind, StepSpec, Strict

# The OLTP scripts Debian's sysbench 1.0 ships in /usr/share/sysbench (bulk_insert is left out:
# it has no prepare step and does not use the sbtest tables).
SysbenchScript = Literal[
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_insert",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
]
RandType = Literal["uniform", "gaussian", "special", "pareto"]
SysbenchCommand = Literal["prepare", "run", "cleanup"]


# Options the models or connection_args own; extra_args may not set them a second time,
# nor smuggle in a password or an options file.
_OWNED_OPTIONS = frozenset(
    {
        "--tables",
        "--table_size",
        "--table-size",
        "--threads",
        "--num-threads",
        "--time",
        "--max-time",
        "--report-interval",
        "--rand-type",
        "--point_selects",
        "--simple_ranges",
        "--sum_ranges",
        "--order_ranges",
        "--distinct_ranges",
        "--index_updates",
        "--non_index_updates",
        "--delete_inserts",
        "--skip_trx",
        "--histogram",
        "--percentile",
        "--forced-shutdown",
        "--events",
        "--max-requests",
        "--db-driver",
        "--config-file",
    }
)


_OWNED_PREFIXES = ("--pgsql-", "--mysql-")

MAX_ROWS = 10_000_000_000  # pgbench scale 100,000
# Why an upper bound is there, for the matrix's refusal (pgarena.model.matrix).
LIMIT_REASONS = {"table_size": "tables x table_size is bounded like pgbench's scale"}
# What sysbench calls another tool's field, by that field's path in a workload: the fix a misplaced one is given.
COUNTERPARTS = {"run.clients": "threads", "run.progress_s": "report_interval_s", "init": "prepare"}

# What extra_args may add: sysbench 1.0.20's general options and its OLTP scripts' options that no field
# owns (`sysbench --help`, `sysbench oltp_read_write help`). A list of what is allowed, not of what is
# not: an option that loads a file or a Lua module must never reach sysbench from a matrix.
_ALLOWED_OPTIONS = frozenset(
    {
        "--rate",
        "--tx-rate",
        "--thread-stack-size",
        "--report-checkpoints",
        "--debug",
        "--validate",
        "--verbosity",
        "--rand-seed",
        "--rand-spec-iter",
        "--rand-spec-pct",
        "--rand-spec-res",
        "--rand-pareto-h",
        "--db-ps-mode",
        "--db-debug",
        "--auto_inc",
        "--create_secondary",
        "--secondary",
        "--range_selects",
        "--range_size",
        "--pgsql_variant",
    }
)


# select_random_points/ranges assert this in their prepare and cleanup.
_SINGLE_TABLE_SCRIPTS = frozenset({"select_random_points", "select_random_ranges"})


def _check_extra_args(args: tuple[str, ...]) -> tuple[str, ...]:
    for arg in args:
        name = arg.split("=", 1)[0]
        if not arg.startswith("--") or name == "--":
            raise ValueError(f"'{arg}' is not a --option: extra_args only adds sysbench options")
        if name in _OWNED_OPTIONS or name.startswith(_OWNED_PREFIXES):
            raise ValueError(f"'{name}' is set by pgarena (a field of this workload or the target's endpoint)")
        if name not in _ALLOWED_OPTIONS:
            raise ValueError(f"'{name}' is not an option extra_args may add; allowed: {', '.join(sorted(_ALLOWED_OPTIONS))}")
    return args


class SysbenchPrepare(Strict):
    """The data set: `sysbench <script> prepare` creates tables sbtest1..N of table_size rows."""

    # Every OLTP script creates the same sbtest tables, so one prepare serves all of them.
    script: SysbenchScript = Field("oltp_read_write", description="the script whose prepare creates the tables")
    tables: int = Field(1, ge=1, le=10_000, description="number of sbtest tables")
    table_size: int = Field(10_000, ge=1, le=10_000_000_000, description="rows per table (sysbench's default: 10000)")
    threads: int = Field(1, ge=1, le=10_000, description="tables loaded in parallel, one per thread at a time")
    extra_args: tuple[Annotated[str, Field(max_length=200)], ...] = Field(
        (), strict=False, max_length=32, description="further sysbench options, e.g. --create_secondary=off"
    )

    @field_validator("extra_args")
    @classmethod
    def _extra_args(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_extra_args(value)

    @model_validator(mode="after")
    def _single_table_scripts(self) -> SysbenchPrepare:
        if self.script in _SINGLE_TABLE_SCRIPTS and self.tables != 1:
            raise ValueError(f"{self.script} supports only tables=1")
        if self.tables * self.table_size > MAX_ROWS:
            # The load's timeout grows with the rows (pgarena.planning); beyond this it outgrows every timer.
            raise ValueError(f"tables x table_size is at most {MAX_ROWS:,} rows: fewer tables or smaller ones")
        return self


class SysbenchRun(Strict):
    """One `sysbench <script> run`. A None count leaves the script's own default."""

    script: SysbenchScript = Field("oltp_read_write", description="the OLTP script run")
    threads: int = Field(1, ge=1, le=10_000, description="one connection per thread")
    duration_s: int = Field(ge=1, le=MAX_DURATION_S, description=f"at most {MAX_DURATION_S:,} s (a week)")
    report_interval_s: int = Field(5, ge=1, le=3600, description="seconds between interval lines")
    rand_type: RandType | None = Field(None, description="row id distribution; sysbench's default is special")
    # Statements per transaction (event), per kind. Setting all read kinds to 0 on
    # oltp_read_write gives the write-heavy test of the managed-services study.
    point_selects: int | None = Field(None, ge=0, le=1000, description="--point_selects: statements of this kind per transaction")
    simple_ranges: int | None = Field(None, ge=0, le=1000, description="--simple_ranges: statements of this kind per transaction")
    sum_ranges: int | None = Field(None, ge=0, le=1000, description="--sum_ranges: statements of this kind per transaction")
    order_ranges: int | None = Field(None, ge=0, le=1000, description="--order_ranges: statements of this kind per transaction")
    distinct_ranges: int | None = Field(
        None, ge=0, le=1000, description="--distinct_ranges: statements of this kind per transaction"
    )
    index_updates: int | None = Field(None, ge=0, le=1000, description="--index_updates: statements of this kind per transaction")
    non_index_updates: int | None = Field(
        None, ge=0, le=1000, description="--non_index_updates: statements of this kind per transaction"
    )
    delete_inserts: int | None = Field(
        None, ge=0, le=1000, description="--delete_inserts: statements of this kind per transaction"
    )
    skip_trx: bool = Field(False, description="autocommit every statement instead of BEGIN/COMMIT")
    histogram: bool = Field(False, description="print a latency histogram (--histogram)")
    percentile: int | None = Field(None, ge=0, le=100, description="latency percentile; 0 turns it off; default 95")
    # sysbench's bare --forced-shutdown means 5% of --time (0 s at --time under 20, which cut a
    # 5 s fixture run off at its limit with exit 2): pgarena always gives the seconds.
    forced_shutdown_s: int | None = Field(
        None, ge=0, le=3600, description="kill the run this long after duration_s if threads have not stopped"
    )
    extra_args: tuple[Annotated[str, Field(max_length=200)], ...] = Field(
        (), strict=False, max_length=32, description="further sysbench options, e.g. --rand-seed=1"
    )

    @field_validator("extra_args")
    @classmethod
    def _extra_args(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_extra_args(value)


def connections_used(command: SysbenchCommand, threads: int, tables: int = 1) -> int:
    """The most connections one sysbench command holds open at once.

    Counted on PostgreSQL 15 from log_connections (autovacuum off) and
    pg_stat_database.sessions, sysbench 1.0.20, OLTP scripts:
    - run: exactly one per thread, opened in thread_init and held to the end;
      no extra setup connection (threads 1, 4, 7, 8 -> 1, 4, 7, 8 sessions).
    - prepare: one per thread, plus one short-lived connection per table,
      opened while the loading thread's own connection is open (the pgsql
      driver's capability probe, which connects to read the server version,
      runs before each table's bulk insert). Totals: threads+tables sessions
      (1 thread/2 tables -> 3, 4/2 -> 6, 8/3 -> 11); at most one extra per
      thread at a time, hence threads + min(threads, tables) at once.
    - cleanup: one, whatever --threads says.
    """
    if command == "run":
        return threads
    if command == "prepare":
        return threads + min(threads, tables)
    return 1


class SysbenchWorkload(Strict):
    """sysbench's bundled OLTP scripts: prepare, run, then cleanup."""

    name: Name
    tool: Literal["sysbench"] = Field(description="sysbench (pgsql driver)")
    prepare: SysbenchPrepare = Field(default_factory=SysbenchPrepare, description="table creation and load")
    run: SysbenchRun = Field(description="the measured run")
    cleanup: bool = Field(True, description="drop the sbtest tables after the runs")

    @property
    def client_counts(self) -> list[int]:
        return [self.run.threads]

    @property
    def slo(self) -> Slo | None:
        return None

    @property
    def load_size(self) -> int:
        return self.prepare.tables * self.prepare.table_size // 100_000

    @property
    def run_s(self) -> int | None:
        return self.run.duration_s + (self.run.forced_shutdown_s or 0)

    @property
    def cleans_up(self) -> bool:
        return self.cleanup

    @property
    def reloads_each_repetition(self) -> bool:
        # prepare refuses tables that exist: a reload would need a cleanup first (not offered).
        return False

    @property
    def long_field(self) -> str | None:
        return None

    def workers(self, clients: int) -> int:
        return 1

    def step_spec(self, kind: StepKind) -> SysbenchStep:
        if kind != "run":
            return SysbenchStep(prepare=self.prepare)
        return SysbenchStep(prepare=self.prepare, run=self.run, duration_s=self.run.duration_s)


class SysbenchStep(StepSpec):
    """A sysbench step's record: the data set every command names, and the run's parameters for a run."""

    tool: Literal["sysbench"] = "sysbench"
    prepare: SysbenchPrepare
    run: SysbenchRun | None = None

    @property
    def progress_interval_s(self) -> int | None:
        return self.run.report_interval_s if self.run is not None else None

    def connections(self, kind: StepKind, clients: int | None) -> int:
        """sysbench: a run one per thread; prepare one per thread plus one per table being loaded;
        cleanup one (connections_used)."""
        if kind == "run":
            return super().connections(kind, clients)
        return connections_used("prepare" if kind == "init" else "cleanup", self.prepare.threads, self.prepare.tables)
