"""The provider matrix: what a user writes to describe a campaign (targets x workloads)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import ErrorDetails

# The tools' workload schemas sit beneath the matrix and share its base, names and limits; the two names
# adapters import from here are re-exported.
from pgarena.tools.spec import FAN_OUT_REASON, MAX_CLIENTS, Name, Strict
from pgarena.tools.spec import MAX_STARTED_TOGETHER as MAX_STARTED_TOGETHER
from pgarena.tools.spec import NAME_PATTERN as NAME_PATTERN
from pgarena.tools.workloads import LIMIT_REASONS, TOOL_NAMES, Workload

# A campaign id prefixes S3 keys and DynamoDB keys: <name>-<stamp>-<hex> locally, <schedule>-<execution id>
# when scheduled. No slash, no leading dot, no space.
CAMPAIGN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
ENV_VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
SECRET_ARN_PATTERN = r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$"
# Limits of the runtime a matrix must fit (each refusal names the limit).
MAX_SETTINGS = 200
MAX_SETTING_CHARS = 1_024
MAX_NESTING = 32  # a valid matrix is 7 levels deep
# Each worker gets its step in its ECS RunTask container overrides, which hold at most 8,192 characters;
# the task token (up to 2,048), the other variables and the step's own fields take the reserve.
RUNTASK_OVERRIDES_LIMIT_CHARS = 8_192
RUNTASK_RESERVED_CHARS = 3_800
# A state's input and output in Step Functions: 256 KiB. The state carries refs (pgarena.model.plan: a
# phase's, a step's, at most these many bytes in JSON, tests/unit/test_matrix_limits.py checks), the
# rest of the plan is in the bucket; failure messages get the reserve.
STATE_LIMIT_BYTES = 262_144
STATE_RESERVED_BYTES = 64_000
PHASE_REF_BYTES = 64
STEP_REF_BYTES = 96
# States.ArrayRange (List Phase Targets) makes at most this many items.
MAX_MAP_ITEMS = 1_000

EnvVarName = Annotated[str, Field(pattern=ENV_VAR_PATTERN)]
SecretArn = Annotated[str, Field(pattern=SECRET_ARN_PATTERN)]

INLINE_PASSWORD_FIX = (
    "passwords are never written in the matrix: remove 'password' and set 'password_env' to the name "
    "of an environment variable that holds it (local runs) or 'password_secret_arn' to a Secrets Manager "
    "secret (AWS runs)"
)


class Endpoint(Strict):
    """A server pgarena connects to. Credentials by reference only."""

    host: str = Field(min_length=1, max_length=255)
    port: int = Field(5432, ge=1, le=65535)
    dbname: str = Field("postgres", min_length=1, max_length=63)
    user: str = Field(min_length=1, max_length=63)
    password_env: EnvVarName | None = None
    password_secret_arn: SecretArn | None = None
    sslmode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] = "prefer"
    sslrootcert: str | None = Field(
        None,
        max_length=1024,
        description="CA bundle (a PEM file where the worker and preflight run) to verify the server with "
        "(verify-ca, verify-full); default: the system CAs plus the Amazon RDS CA bundle shipped with pgarena "
        "(in the worker image and the functions)",
    )
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


# Settings that make the server run a program, load code or read another configuration: an embedded
# server runs on this machine, so the matrix may set them only when the target says so explicitly.
UNSAFE_SETTINGS = frozenset(
    {
        "include",
        "include_dir",
        "include_if_exists",
        "shared_preload_libraries",
        "session_preload_libraries",
        "local_preload_libraries",
        "dynamic_library_path",
        "archive_library",
        "jit_provider",
    }
)
# Settings pgarena sets itself to keep the server on 127.0.0.1 behind its password: never from a matrix.
OWNED_SETTINGS = frozenset(
    {
        "listen_addresses",
        "port",
        "unix_socket_directories",
        "unix_socket_group",
        "unix_socket_permissions",
        "hba_file",
        "ident_file",
        "data_directory",
        "config_file",
        "password_encryption",
    }
)


def _unsafe(name: str) -> bool:
    name = name.lower()  # setting names are case-insensitive
    return name in UNSAFE_SETTINGS or name.endswith("_command")


class EmbeddedServer(Strict):
    """A PostgreSQL server the local runtime starts on 127.0.0.1 for the campaign."""

    allow_unsafe_settings: bool = Field(
        False,
        description="allow settings that run programs or load code (archive_command, *_preload_libraries, "
        "include, ...): they run as the server's user on this machine",
    )
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
    def _setting_names(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        owned = sorted(name for name in value if name.lower() in OWNED_SETTINGS)
        if owned:
            raise ValueError(f"{', '.join(owned)}: set by pgarena (the server listens on 127.0.0.1 behind a password)")
        unsafe = sorted(name for name in value if _unsafe(name))
        if unsafe and not info.data.get("allow_unsafe_settings"):
            raise ValueError(
                f"{', '.join(unsafe)}: runs a program or loads code as the server's user on this machine; "
                'add "allow_unsafe_settings": true to this embedded target if that is intended'
            )
        if len(value) > MAX_SETTINGS:
            raise ValueError(f"at most {MAX_SETTINGS} settings")
        for name, setting in value.items():
            if len(name) > 63:
                raise ValueError(f"'{name[:40]}...' is longer than a PostgreSQL setting name can be (63)")
            if isinstance(setting, str) and len(setting) > MAX_SETTING_CHARS:
                raise ValueError(f"the value of '{name}' is longer than {MAX_SETTING_CHARS:,} characters")
            bare = name.replace("_", "").replace(".", "")
            if not (bare.isascii() and bare.isalnum()):
                raise ValueError(f"'{name}' is not a PostgreSQL setting name")
            # Values are written quoted into postgresql.conf: a line break would start a setting of its own.
            if isinstance(setting, str) and any(ord(c) < 32 or ord(c) == 127 for c in setting):
                raise ValueError(f"the value of '{name}' holds a control character (a line break?)")
        return value


class Placement(Strict):
    """Where workers and preflight run in AWS, next to the database."""

    region: str | None = Field(None, max_length=32)
    subnets: list[Annotated[str, Field(max_length=64)]] = Field(default_factory=list, max_length=16)
    security_groups: list[Annotated[str, Field(max_length=64)]] = Field(default_factory=list, max_length=5)


class ConnectionPolicy(Strict):
    """What to do when a workload needs more connections than the target can give."""

    policy: Literal["clamp", "fail"] = Field(
        "fail", description="fail: refuse the workload; clamp: run with the largest client count that fits"
    )
    safety_margin: int = Field(2, ge=0, le=MAX_CLIENTS, description="slots left free for admins and the unexpected")
    lease_wait_s: int = Field(
        120, ge=0, le=600, description="how long to wait for slots held by another campaign on the same target"
    )
    monitor_interval_s: float = Field(5.0, ge=0.2, le=300, description="pg_stat_activity sampling interval during runs")


class Pooler(Strict):
    """A connection pooler in front of the target, with a client limit of its own."""

    kind: Literal["pgbouncer", "pgpool", "rds_proxy", "other"]
    max_client_connections: int = Field(
        ge=1, le=1_000_000, description="e.g. pgbouncer max_client_conn, pgpool num_init_children"
    )


class Replica(Strict):
    """A replica of the target: after each measured run pgarena times how long it needs to catch up."""

    name: Name
    kind: Literal["physical", "logical", "managed"] = Field(
        description="physical: streaming standby (replay LSN); logical: a subscription (its latest LSN); "
        "managed: a provider's read replica (replay LSN where it answers, else the replay timestamp)"
    )
    endpoint: Endpoint = Field(description="the standby, the subscriber or the read replica")
    subscription: str | None = Field(None, min_length=1, max_length=63, description="logical only: the subscription's name")
    catch_up_timeout_s: int = Field(900, ge=1, le=7200, description="stop waiting for the replica after this long")

    @model_validator(mode="after")
    def _subscription_for_logical(self) -> Replica:
        if (self.kind == "logical") != (self.subscription is not None):
            raise ValueError("a logical replica names its 'subscription'; other kinds do not")
        return self


class Target(Strict):
    name: Name
    provider: str = Field(min_length=1, max_length=100, description="label shown in reports, e.g. rds, aurora, cloudsql")
    endpoint: Endpoint | None = None
    embedded: EmbeddedServer | None = None
    placement: Placement | None = None
    hourly_cost_usd: float | None = Field(None, ge=0, le=1_000_000)
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


RankingMetric = Literal["throughput", "latency", "stability", "cost", "sustainable", "slo_tps"]
# The composite score's default weights (README.md, "Reports and ranking"). slo_tps counts only in
# campaigns whose workloads declare an slo: a metric no target has gives its weight up.
DEFAULT_RANKING_WEIGHTS: dict[RankingMetric, float] = {
    "throughput": 0.5,
    "latency": 0.3,
    "stability": 0.1,
    "cost": 0.1,
    "slo_tps": 0.3,
}


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

    cap_usd: float | None = Field(None, gt=0, le=1e9, description="refuse the campaign when its estimate exceeds this")
    monthly_cap_usd: float | None = Field(
        None, gt=0, le=1e9, description="refuse it when the month's ledger (all campaigns) plus its estimate exceeds this"
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
        if value[-1] > MAX_STARTED_TOGETHER:
            raise ValueError(
                f"at most {MAX_STARTED_TOGETHER} targets at once: AWS Step Functions starts at most "
                f"{MAX_STARTED_TOGETHER} iterations of an inline Map at once, so only that many runs meet at the phase's barrier"
            )
        return value


class Scenario(Strict):
    """A study repeated as a campaign (README, "Scenarios")."""

    consolidation: Consolidation | None = None


class Campaign(Strict):
    campaign: Name
    targets: list[Target] = Field(min_length=1)
    workloads: list[Workload] = Field(min_length=1)
    repetitions: int = Field(1, ge=1, le=100)
    order_seed: int | None = Field(
        None, ge=0, description="seeds the shuffled target order of each repetition; derived from the campaign id when absent"
    )
    target_concurrency: int = Field(
        1, ge=1, le=40, description="targets benchmarked at once; 1 keeps local targets from competing for CPU"
    )
    connections: ConnectionPolicy = ConnectionPolicy()
    # The clock starts when the state launches the worker: a cold Fargate start (ENI, image pull) takes
    # one to three minutes before the first beat, so the default leaves room for it.
    heartbeat_timeout_s: int = Field(
        300, ge=2, le=3600, description="a worker silent for this long is declared lost (worker_lost); it beats more often"
    )
    ranking: RankingConfig | None = Field(None, description="composite score weights and tie rule; defaults when absent")
    cost: CostPolicy | None = Field(None, description="cost caps and the price region; no caps when absent")
    scenario: Scenario | None = Field(None, description="a consolidation sweep; a plain comparison when absent")

    @model_validator(mode="after")
    def _consolidation_uses_every_target(self) -> Campaign:
        sweep = self.scenario.consolidation if self.scenario else None
        searched = [w.name for w in self.workloads if w.slo is not None]
        if sweep and searched:
            # A sweep's targets start together; an SLO search's probes would drift apart and load each other.
            raise ValueError(
                f"scenario.consolidation with an slo (workload {', '.join(repr(n) for n in searched)}): a consolidation "
                "sweep starts its targets' runs together, an SLO search's probes do not; remove the workload's slo "
                "or the scenario"
            )
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


# pydantic names the member of a union it tried (`clients.int`, `settings.x.float`): not a field.
_UNION_TAG = re.compile(r"^(str|int|float|bool|none|(list|dict|tuple)\[.*\])$")
# Why an upper bound is there, for the refusal's message.
_LIMIT_REASONS = {
    "duration_s": "a week at most; longer runs outgrow the worker's timers (split it into repetitions)",
    "provider": "a label for reports; it travels in every step's state",
    "transactions": "give duration_s for long runs",
    **LIMIT_REASONS,
}
NON_FINITE_FIX = "Infinity and NaN are not numbers a benchmark can use: give a finite number"


def _message(err: ErrorDetails) -> str:
    message = err["msg"].removeprefix("Value error, ")
    if isinstance(err.get("input"), bool) and err["type"] in ("int_type", "float_type", "list_type", "string_type"):
        # JSON true/false are not 1/0 here: `clients: true` must not run one client.
        return f"{json.dumps(err['input'])} is not a number: give a number"
    if err["type"] == "finite_number":
        return NON_FINITE_FIX
    if err["type"] in ("less_than_equal", "too_long") and err["loc"] and err["loc"][-1] in _LIMIT_REASONS:
        return f"{message}: {_LIMIT_REASONS[err['loc'][-1]]}"
    if err["type"] == "string_pattern_mismatch":
        return _PATTERN_HINTS.get(err["ctx"]["pattern"], message)
    if err["type"] == "extra_forbidden":
        return "unknown field: remove it or check its spelling (see `pgarena schema`)"
    return message


def problems_of(error: ValidationError) -> list[Problem]:
    by_path: dict[str, list[str]] = {}
    for err in error.errors():
        # Drop pydantic's union tags from the location: function tags ("function-after[...]"), the type a
        # union member is named by, and the workload discriminator ("pgbench", "sysbench") after a list index.
        raw_loc = err["loc"]
        loc = tuple(
            p
            for i, p in enumerate(raw_loc)
            if isinstance(p, int)
            or (
                "[" not in p
                and not (i > 0 and _UNION_TAG.match(p))
                and not (p in TOOL_NAMES and i > 0 and isinstance(raw_loc[i - 1], int))
            )
        )
        messages = by_path.setdefault(_json_path(loc), [])
        message = _message(err)
        if message not in messages:
            messages.append(message)
    # A value no member of a union took gets one problem, listing what each member wanted.
    return [Problem(path=path, message=" or ".join(messages)) for path, messages in by_path.items()]


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers the keys it was given more than once."""

    duplicates: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) < len(pairs):
        keys = [key for key, _ in pairs]
        obj.duplicates = tuple(sorted({key for key in keys if keys.count(key) > 1}))
    return obj


def _shape_problems(data: Any, path: str = "$", depth: int = 0) -> list[Problem]:
    """What JSON allows but a matrix must not have: keys given twice (json takes the last silently), nesting
    far deeper than any matrix (the validator's recursion), and non-finite numbers (caught here for every
    value, including those pydantic would not look at)."""
    if depth > MAX_NESTING:
        return [Problem(path=path, message=f"nested deeper than {MAX_NESTING} levels, far beyond any matrix: check the brackets")]
    problems = []
    if isinstance(data, dict):
        for key in getattr(data, "duplicates", ()):
            problems.append(Problem(path=f"{path}.{key}", message="given more than once in one object: keep one"))
        for key, value in data.items():
            problems += _shape_problems(value, f"{path}.{key}", depth + 1)
    elif isinstance(data, list):
        for index, item in enumerate(data):
            problems += _shape_problems(item, f"{path}[{index}]", depth + 1)
    elif isinstance(data, float) and not math.isfinite(data):
        problems.append(Problem(path=path, message=NON_FINITE_FIX))
    return problems


def _encoded_chars(value: Any) -> int:
    """Characters a value takes in a RunTask override: JSON in a JSON string (quotes and newlines escaped)."""
    return len(json.dumps(json.dumps(value)))


def _runtime_problems(campaign: Campaign) -> list[Problem]:
    """What validates field by field but cannot run: a worker's step outgrowing its RunTask overrides, or the
    plan outgrowing the execution's Step Functions state."""
    problems = []
    for w, workload in enumerate(campaign.workloads):
        # A fixed worker count is bounded field by field; only a per-worker client cap can make more.
        widest = max(workload.workers(c) for c in workload.client_counts)
        if widest > MAX_STARTED_TOGETHER:
            problems.append(
                Problem(
                    path=f"$.workloads[{w}].run.max_clients_per_worker",
                    message=f"makes {widest} workers for {max(workload.client_counts):,} clients, at most "
                    f"{MAX_STARTED_TOGETHER}: {FAN_OUT_REASON}; raise it to at least "
                    f"{-(-max(workload.client_counts) // MAX_STARTED_TOGETHER)}",
                )
            )
    step_budget = RUNTASK_OVERRIDES_LIMIT_CHARS - RUNTASK_RESERVED_CHARS
    workload_chars = [_encoded_chars(w.model_dump(mode="json")) for w in campaign.workloads]
    target_chars = [
        _encoded_chars(t.model_dump(mode="json", include={"endpoint", "embedded", "placement", "replicas"}))
        for t in campaign.targets
    ]
    for w, (workload, chars) in enumerate(zip(campaign.workloads, workload_chars)):
        for t, target in enumerate(campaign.targets):
            total = chars + target_chars[t]
            if total <= step_budget:
                continue
            long_field = workload.long_field
            path = (
                (f"$.workloads[{w}].{long_field}" if long_field else f"$.workloads[{w}]")
                if chars >= target_chars[t]
                else f"$.targets[{t}]"
            )
            problems.append(
                Problem(
                    path=path,
                    message=f"workload {workload.name} on target {target.name} needs about {total:,} characters in each "
                    f"worker's ECS RunTask overrides, which hold {RUNTASK_OVERRIDES_LIMIT_CHARS:,} in all "
                    f"({step_budget:,} for the matrix's part): shorten it (custom scripts, client counts, replicas, placement)",
                )
            )
            break
    if problems:
        return problems
    return _state_problems(campaign)


def _state_problems(campaign: Campaign) -> list[Problem]:
    """The execution's state carries the plan's refs only (pgarena.model.plan.PlanRef, PreflightRef; the
    plan lives in the bucket): what grows is the phase list and one target's steps in one phase."""
    problems = []
    budget = STATE_LIMIT_BYTES - STATE_RESERVED_BYTES
    size = len(campaign.model_dump_json(exclude_none=True))
    if size > STATE_LIMIT_BYTES:
        problems.append(
            Problem(
                path="$",
                message=f"the matrix is {size:,} bytes and is the execution's input, which Step Functions' StartExecution "
                f"accepts up to {STATE_LIMIT_BYTES:,} bytes (256 KiB): fewer targets or workloads, shorter custom scripts",
            )
        )
    sweep = campaign.scenario.consolidation if campaign.scenario else None
    phases = len(sweep.steps) if sweep else (len(campaign.workloads) * campaign.repetitions if campaign.repetitions > 1 else 1)
    if phases * PHASE_REF_BYTES > budget:
        problems.append(
            Problem(
                path="$.repetitions",
                message=f"{phases:,} phases (one per workload and repetition) make Validate And Plan's answer about "
                f"{phases * PHASE_REF_BYTES // 1024:,} KB, and a state in Step Functions holds {STATE_LIMIT_BYTES // 1024} KB "
                f"({STATE_RESERVED_BYTES // 1000} KB kept for failure messages): fewer repetitions or workloads, or split the campaign",
            )
        )
    # One target's steps in one phase: every workload's and repetition's in a single phase or a sweep's
    # step, else (interleaved repetitions) one workload's one repetition.
    whole = phases == 1 or sweep is not None
    per_phase = [_steps_per_target(w, campaign.repetitions if whole else 1) for w in campaign.workloads]
    steps = sum(per_phase) if whole else max(per_phase)
    if steps * STEP_REF_BYTES > budget:
        problems.append(
            Problem(
                path="$.workloads",
                message=f"{steps:,} steps of one target in one phase make Preflight Target's answer about "
                f"{steps * STEP_REF_BYTES // 1024:,} KB, and a state in Step Functions holds {STATE_LIMIT_BYTES // 1024} KB "
                f"({STATE_RESERVED_BYTES // 1000} KB kept for failure messages): fewer client counts or workloads, "
                "repetitions > 1 (one phase per workload and repetition), or split the campaign",
            )
        )
    if len(campaign.targets) > MAX_MAP_ITEMS:
        problems.append(
            Problem(
                path="$.targets",
                message=f"{len(campaign.targets):,} targets: a phase's targets are listed by States.ArrayRange, which makes "
                f"at most {MAX_MAP_ITEMS:,} items; split the campaign",
            )
        )
    return problems


def _steps_per_target(workload: Workload, repetitions: int) -> int:
    """Worker steps one target runs for a workload (as pgarena.planning plans them), shards not counted
    (a step's shards are indices made in the state machine, never listed in its state)."""
    return 1 + repetitions * len(workload.client_counts) + (1 if workload.cleans_up else 0)


def parse_campaign(data: Any) -> Campaign:
    """Validate a decoded matrix; raise MatrixError listing every problem with its JSON path."""
    problems = _shape_problems(data)
    if problems:
        raise MatrixError(problems)
    try:
        campaign = Campaign.model_validate(data)
    except ValidationError as error:
        raise MatrixError(problems_of(error)) from None
    problems = _runtime_problems(campaign)
    if problems:
        raise MatrixError(problems)
    return campaign


def load_campaign(path: Path) -> Campaign:
    """Read and validate a matrix file. A missing file raises FileNotFoundError; anything else unusable
    about the file (a directory, unreadable, not JSON) is a MatrixError with the fix."""
    return parse_campaign(read_json(path))


def read_json(path: Path) -> Any:
    """A matrix (or execution input) file decoded; FileNotFoundError, or a MatrixError with the fix."""
    try:
        text = path.read_text()
    except IsADirectoryError:
        raise MatrixError([Problem(path="$", message=f"{path} is a directory: give the matrix's JSON file")]) from None
    except FileNotFoundError:
        raise
    except OSError as error:
        raise MatrixError([Problem(path="$", message=f"cannot read {path}: {error.strerror}")]) from None
    except UnicodeDecodeError as error:
        raise MatrixError([Problem(path="$", message=f"not UTF-8 text: {error}")]) from None
    try:
        data = json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as error:
        raise MatrixError([Problem(path="$", message=f"not valid JSON: {error}")]) from None
    except RecursionError:
        raise MatrixError(
            [Problem(path="$", message=f"nested deeper than {MAX_NESTING} levels, far beyond any matrix: check the brackets")]
        ) from None
    return data


def json_schema() -> dict[str, Any]:
    return Campaign.model_json_schema()
