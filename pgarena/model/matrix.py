"""The provider matrix: what a user writes to describe a campaign (targets x workloads)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pgarena.model.sysbench import SysbenchPrepare, SysbenchRun

# Names end up in S3 keys, DynamoDB keys and file names: keep them boring.
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
# A campaign id prefixes S3 keys and DynamoDB keys: <name>-<stamp>-<hex> locally, <schedule>-<execution id>
# when scheduled. No slash, no leading dot, no space.
CAMPAIGN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
ENV_VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
SECRET_ARN_PATTERN = r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$"
Name = Annotated[str, Field(pattern=NAME_PATTERN, description="lower-case letters, digits, - and _")]
EnvVarName = Annotated[str, Field(pattern=ENV_VAR_PATTERN)]
SecretArn = Annotated[str, Field(pattern=SECRET_ARN_PATTERN)]

INLINE_PASSWORD_FIX = (
    "passwords are never written in the matrix: remove 'password' and set 'password_env' to the name "
    "of an environment variable that holds it (local runs) or 'password_secret_arn' to a Secrets Manager "
    "secret (AWS runs)"
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Endpoint(Strict):
    """A server pgarena connects to. Credentials by reference only."""

    host: str = Field(min_length=1)
    port: int = Field(5432, ge=1, le=65535)
    dbname: str = Field("postgres", min_length=1)
    user: str = Field(min_length=1)
    password_env: EnvVarName | None = None
    password_secret_arn: SecretArn | None = None
    sslmode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] = "prefer"
    use_resolved_address: bool = Field(
        False,
        description="workers connect to the address preflight resolved the host to (libpq hostaddr), not the name; "
        "TLS still verifies the name. The workaround for DNS failing under load",
    )
    # Declared only so that an inline password gets a message saying what to do instead.
    password: None = Field(None, exclude=True, json_schema_extra={"deprecated": True})

    @field_validator("password", mode="before")
    @classmethod
    def _reject_inline_password(cls, value: Any) -> None:
        if value is not None:
            raise ValueError(INLINE_PASSWORD_FIX)
        return None

    @model_validator(mode="after")
    def _one_password_source(self) -> Endpoint:
        if self.password_env and self.password_secret_arn:
            raise ValueError("set either 'password_env' or 'password_secret_arn', not both")
        return self


class EmbeddedServer(Strict):
    """A PostgreSQL server the local runtime starts on 127.0.0.1 for the campaign."""

    settings: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description='postgresql.conf settings, e.g. {"shared_buffers": "64MB"}'
    )
    replicas: int = Field(
        0, ge=0, le=4, description="streaming standbys the local runtime creates with pg_basebackup -R, each on its own port"
    )
    replica_settings: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description='the standbys\' postgresql.conf settings, e.g. {"recovery_min_apply_delay": "1s"}'
    )

    @field_validator("settings", "replica_settings")
    @classmethod
    def _setting_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name, setting in value.items():
            bare = name.replace("_", "").replace(".", "")
            if not (bare.isascii() and bare.isalnum()):
                raise ValueError(f"'{name}' is not a PostgreSQL setting name")
            # Values are written quoted into postgresql.conf: a line break would start a setting of its own.
            if isinstance(setting, str) and any(ord(c) < 32 or ord(c) == 127 for c in setting):
                raise ValueError(f"the value of '{name}' holds a control character (a line break?)")
        return value


class Placement(Strict):
    """Where workers and preflight run in AWS, next to the database."""

    region: str | None = None
    subnets: list[str] = Field(default_factory=list)
    security_groups: list[str] = Field(default_factory=list)


class ConnectionPolicy(Strict):
    """What to do when a workload needs more connections than the target can give."""

    policy: Literal["clamp", "fail"] = Field(
        "fail", description="fail: refuse the workload; clamp: run with the largest client count that fits"
    )
    safety_margin: int = Field(2, ge=0, description="slots left free for admins and the unexpected")
    lease_wait_s: int = Field(
        120, ge=0, le=600, description="how long to wait for slots held by another campaign on the same target"
    )
    monitor_interval_s: float = Field(5.0, ge=0.2, le=300, description="pg_stat_activity sampling interval during runs")


class Pooler(Strict):
    """A connection pooler in front of the target, with a client limit of its own."""

    kind: Literal["pgbouncer", "pgpool", "rds_proxy", "other"]
    max_client_connections: int = Field(ge=1, description="e.g. pgbouncer max_client_conn, pgpool num_init_children")


class Replica(Strict):
    """A replica of the target: after each measured run pgarena times how long it needs to catch up."""

    name: Name
    kind: Literal["physical", "logical", "managed"] = Field(
        description="physical: streaming standby (replay LSN); logical: a subscription (its latest LSN); "
        "managed: a provider's read replica (replay LSN where it answers, else the replay timestamp)"
    )
    endpoint: Endpoint = Field(description="the standby, the subscriber or the read replica")
    subscription: str | None = Field(None, min_length=1, description="logical only: the subscription's name")
    catch_up_timeout_s: int = Field(900, ge=1, le=7200, description="stop waiting for the replica after this long")

    @model_validator(mode="after")
    def _subscription_for_logical(self) -> Replica:
        if (self.kind == "logical") != (self.subscription is not None):
            raise ValueError("a logical replica names its 'subscription'; other kinds do not")
        return self


class Target(Strict):
    name: Name
    provider: str = Field(min_length=1, description="label shown in reports, e.g. rds, aurora, cloudsql")
    endpoint: Endpoint | None = None
    embedded: EmbeddedServer | None = None
    placement: Placement | None = None
    hourly_cost_usd: float | None = Field(None, ge=0)
    pooler: Pooler | None = None
    connections: ConnectionPolicy | None = Field(None, description="overrides the campaign's connection policy")
    replicas: list[Replica] = Field(
        default_factory=list, description="replicas whose catch-up is timed after each run (sustainable throughput)"
    )

    @field_validator("replicas")
    @classmethod
    def _unique_replica_names(cls, value: list[Replica]) -> list[Replica]:
        names = [r.name for r in value]
        if len(set(names)) != len(names):
            raise ValueError("replica names must be unique within a target")
        return value

    @model_validator(mode="after")
    def _endpoint_or_embedded(self) -> Target:
        if (self.endpoint is None) == (self.embedded is None):
            raise ValueError("set exactly one of 'endpoint' (a server to reach) or 'embedded' (a local server to start)")
        return self


class PgbenchInit(Strict):
    """pgbench --initialize: timed, its phases recorded; load time is a result of its own."""

    scale: int = Field(1, ge=1)
    fillfactor: int = Field(100, ge=10, le=100)
    partitions: int | None = Field(None, ge=1, description="partition pgbench_accounts")
    partition_method: Literal["range", "hash"] | None = None
    foreign_keys: bool = False
    unlogged_tables: bool = False
    data_generation: Literal["client", "server"] = Field("client", description="client-side (g) or server-side (G)")
    init_steps: str | None = Field(
        None, pattern=r"^[dtgGvpf]+$", description="pgbench -I steps, e.g. dtGvp; overrides data_generation"
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

    builtin: Literal["tpcb-like", "simple-update", "select-only"] | None = None
    sql: str | None = Field(
        None, min_length=1, description="pgbench script text (meta-commands allowed, except \\shell and \\setshell)"
    )
    weight: int = Field(1, ge=1)

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
    jobs: int = Field(1, ge=1)
    duration_s: int | None = Field(None, ge=1, description="run for this long (-T)")
    transactions: int | None = Field(None, ge=1, description="or run this many transactions per client (-t)")
    protocol: Literal["simple", "extended", "prepared"] = "simple"
    progress_s: int = Field(5, ge=1)
    builtin: Literal["tpcb-like", "simple-update", "select-only"] = "tpcb-like"
    scripts: list[PgbenchScript] | None = Field(None, min_length=1, description="a weighted mix; replaces builtin")
    rate_tps: float | None = Field(None, gt=0, description="throttle to this rate (--rate); schedule lag is reported")
    latency_limit_ms: float | None = Field(None, gt=0, description="count transactions slower than this as late")
    max_tries: int | None = Field(None, ge=1, description="retry serialization/deadlock failures (pgbench 15+)")
    percentiles: bool = Field(True, description="log every transaction's latency for exact p50/p95/p99")
    no_vacuum: bool = Field(False, description="skip pgbench's vacuum of its tables before the run (-n)")
    workers: int = Field(1, ge=1, le=256, description="split the clients across this many workers started together")
    max_clients_per_worker: int | None = Field(
        None, ge=1, description="or: as many workers as it takes to keep each at or under this many clients"
    )

    @field_validator("clients")
    @classmethod
    def _positive_clients(cls, value: int | list[int]) -> int | list[int]:
        counts = value if isinstance(value, list) else [value]
        if not counts:
            raise ValueError("give at least one client count")
        if any(c < 1 for c in counts):
            raise ValueError("client counts must be >= 1")
        if len(set(counts)) != len(counts):
            raise ValueError("client counts in a sweep must be distinct")
        return value

    @model_validator(mode="after")
    def _duration_or_transactions(self) -> PgbenchRun:
        if (self.duration_s is None) == (self.transactions is None):
            raise ValueError("set exactly one of 'duration_s' (-T) or 'transactions' (-t)")
        if (self.workers > 1 or self.max_clients_per_worker) and not (self.percentiles and self.duration_s):
            # Shards are merged over their common window from per-transaction logs.
            raise ValueError("several workers need 'percentiles': true and 'duration_s' (their logs are merged)")
        return self

    @property
    def client_counts(self) -> list[int]:
        return list(self.clients) if isinstance(self.clients, list) else [self.clients]


class PgbenchWorkload(Strict):
    name: Name
    tool: Literal["pgbench"]
    init: PgbenchInit = PgbenchInit()
    run: PgbenchRun


class SysbenchWorkload(Strict):
    """sysbench's bundled OLTP scripts: prepare, run, then cleanup."""

    name: Name
    tool: Literal["sysbench"]
    prepare: SysbenchPrepare = SysbenchPrepare()
    run: SysbenchRun
    cleanup: bool = Field(True, description="drop the sbtest tables after the runs")


Workload = Annotated[PgbenchWorkload | SysbenchWorkload, Field(discriminator="tool")]
TOOLS = ("pgbench", "sysbench")

RankingMetric = Literal["throughput", "latency", "stability", "cost", "sustainable"]
# The composite score's default weights (README.md, "Reports and ranking").
DEFAULT_RANKING_WEIGHTS: dict[str, float] = {"throughput": 0.5, "latency": 0.3, "stability": 0.1, "cost": 0.1}


class RankingConfig(Strict):
    """How targets are ranked: the composite score's weights and the tie rule."""

    weights: dict[RankingMetric, float] = Field(
        default_factory=lambda: dict(DEFAULT_RANKING_WEIGHTS),
        description="weight of each metric in the composite score; a metric left out weighs 0",
    )
    tie_tolerance: float = Field(
        0.02, ge=0, le=1, description="composite scores closer than this relative difference are ties (same rank)"
    )

    @field_validator("weights")
    @classmethod
    def _usable_weights(cls, value: dict[str, float]) -> dict[str, float]:
        if any(w < 0 for w in value.values()):
            raise ValueError("weights must be >= 0")
        if not any(w > 0 for w in value.values()):
            raise ValueError("give at least one metric a weight > 0")
        return value


class CostPolicy(Strict):
    """Spending limits checked by the cost guard before any worker starts (pgarena.cost, pgarena.ledger)."""

    cap_usd: float | None = Field(None, gt=0, description="refuse the campaign when its estimate exceeds this")
    monthly_cap_usd: float | None = Field(
        None, gt=0, description="refuse it when the month's ledger (all campaigns) plus its estimate exceeds this"
    )
    region: str | None = Field(
        None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="price table region; default: the coordinator's region"
    )
    schedule: Name | None = Field(None, description="the schedule that started the campaign, recorded in the ledger")


class Consolidation(Strict):
    """Run the workload on the first N targets at once, for each N in `steps`, and compare the total with
    ideal scaling (the first step's throughput per target x N): METHODOLOGY.md section 3."""

    steps: list[int] = Field(min_length=1, description="targets running at once at each step, e.g. [1, 2, 4]")
    threshold: float = Field(0.95, gt=0, le=1, description="report the first step whose measured / ideal falls below this")

    @field_validator("steps")
    @classmethod
    def _increasing(cls, value: list[int]) -> list[int]:
        if value[0] < 1 or any(b <= a for a, b in zip(value, value[1:])):
            raise ValueError("steps must be target counts >= 1, in increasing order")
        return value


class Scenario(Strict):
    """A study repeated as a campaign (README, "Scenarios")."""

    consolidation: Consolidation | None = None


class Campaign(Strict):
    campaign: Name
    targets: list[Target] = Field(min_length=1)
    workloads: list[Workload] = Field(min_length=1)
    repetitions: int = Field(1, ge=1, le=100)
    target_concurrency: int = Field(
        1, ge=1, le=40, description="targets benchmarked at once; 1 keeps local targets from competing for CPU"
    )
    connections: ConnectionPolicy = ConnectionPolicy()
    heartbeat_timeout_s: int = Field(
        60, ge=2, le=3600, description="a worker silent for this long is declared lost (worker_lost); it beats more often"
    )
    ranking: RankingConfig | None = Field(None, description="composite score weights and tie rule; defaults when absent")
    cost: CostPolicy | None = Field(None, description="cost caps and the price region; no caps when absent")
    scenario: Scenario | None = Field(None, description="a consolidation sweep; a plain comparison when absent")

    @model_validator(mode="after")
    def _consolidation_uses_every_target(self) -> Campaign:
        sweep = self.scenario.consolidation if self.scenario else None
        if sweep and sweep.steps[-1] != len(self.targets):
            raise ValueError(
                f"the consolidation's last step runs every target at once: declare {sweep.steps[-1]} "
                f"targets (there are {len(self.targets)}) or end the steps at {len(self.targets)}"
            )
        return self

    @field_validator("targets", "workloads")
    @classmethod
    def _unique_names(cls, items: list[Any]) -> list[Any]:
        names = [item.name for item in items]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"names must be unique; repeated: {', '.join(duplicates)}")
        return items


class Problem(BaseModel):
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class MatrixError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


_PATTERN_HINTS = {
    NAME_PATTERN: "use lower-case letters, digits, '-' and '_' (at most 63, starting with a letter or digit)",
    ENV_VAR_PATTERN: "give the name of an environment variable, e.g. PGARENA_PW_A",
    SECRET_ARN_PATTERN: "give a Secrets Manager secret ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME)",
}


def _json_path(loc: tuple[int | str, ...]) -> str:
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def problems_of(error: ValidationError) -> list[Problem]:
    problems = []
    for err in error.errors():
        # Drop pydantic's union tags from the location: function tags ("function-after[...]") and the
        # workload discriminator ("pgbench", "sysbench") that follows a list index.
        raw_loc = err["loc"]
        loc = tuple(
            p
            for i, p in enumerate(raw_loc)
            if isinstance(p, int) or ("[" not in p and not (p in TOOLS and i > 0 and isinstance(raw_loc[i - 1], int)))
        )
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "string_pattern_mismatch":
            message = _PATTERN_HINTS.get(err["ctx"]["pattern"], message)
        if err["type"] == "extra_forbidden":
            message = "unknown field: remove it or check its spelling (see `pgarena schema`)"
        problems.append(Problem(path=_json_path(loc), message=message))
    return problems


def parse_campaign(data: Any) -> Campaign:
    """Validate a decoded matrix; raise MatrixError listing every problem with its JSON path."""
    try:
        return Campaign.model_validate(data)
    except ValidationError as error:
        raise MatrixError(problems_of(error)) from None


def load_campaign(path: Path) -> Campaign:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise MatrixError([Problem(path="$", message=f"not valid JSON: {error}")]) from None
    except UnicodeDecodeError as error:
        raise MatrixError([Problem(path="$", message=f"not UTF-8 text: {error}")]) from None
    return parse_campaign(data)


def json_schema() -> dict[str, Any]:
    return Campaign.model_json_schema()
