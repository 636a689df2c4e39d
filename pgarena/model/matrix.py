"""The provider matrix: what a user writes to describe a campaign (targets x workloads), the schema and its
field-level validation. pgarena.planning.campaign.parse_campaign reads a matrix into it."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, ValidationInfo, field_validator, model_validator

# The tools' workload schemas sit beneath the matrix and share its base, names and bounds; the names
# others import from here are re-exported. MAX_STARTED_TOGETHER is the one AWS limit among them, as it
# bounds fields (workers, consolidation steps); the others are in pgarena.planning.limits, which
# measures the plan.
from pgarena.model.known_settings import embedded_major, unknown_settings
from pgarena.model.managed_metrics import CloudWatchSource
from pgarena.model.tool_spec import FAN_OUT_REASON as FAN_OUT_REASON
from pgarena.model.tool_spec import MAX_CLIENTS, Name, Strict
from pgarena.model.tool_spec import MAX_STARTED_TOGETHER as MAX_STARTED_TOGETHER
from pgarena.model.tool_spec import NAME_PATTERN as NAME_PATTERN
from pgarena.tools.workloads import Workload

# A campaign id prefixes S3 keys and DynamoDB keys: <name>-<stamp>-<hex> locally, <schedule>-<execution id>
# when scheduled. No slash, no leading dot, no space.
CAMPAIGN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
ENV_VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
SECRET_ARN_PATTERN = r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$"
# What an sslrootcert fetched at connect time starts with (pgarena.server.credentials.local_ca).
CA_SECRET_PREFIX = "arn:"
CA_URL_PREFIX = "s3://"
# An AWS region's name (us-east-1, ap-southeast-2, us-gov-west-1): a region reaches URLs, ARNs and file names.
REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$"
# Bounds of the schema's fields (each refusal names the bound).
MAX_SETTINGS = 200
MAX_SETTING_CHARS = 1_024
# Repetitions of each point, fixed or the most an adaptive campaign may run: each is a phase of every target.
MAX_REPETITIONS = 100
# The fewest runs of a point an adaptive campaign decides on: a between-run variance needs two.
MIN_ADAPTIVE_REPETITIONS = 2

EnvVarName = Annotated[str, Field(pattern=ENV_VAR_PATTERN)]
SecretArn = Annotated[str, Field(pattern=SECRET_ARN_PATTERN)]

INLINE_PASSWORD_FIX = (
    "passwords are never written in the matrix: remove 'password' and set 'password_env' to the name "
    "of an environment variable that holds it (local runs) or 'password_secret_arn' to a Secrets Manager "
    "secret (AWS runs)"
)


class Endpoint(Strict):
    """A server pgarena connects to. Credentials by reference only."""

    host: str = Field(min_length=1, max_length=255, description="host name or IP address of the server (or its pooler)")
    port: int = Field(5432, ge=1, le=65535, description="TCP port")
    dbname: str = Field("postgres", min_length=1, max_length=63, description="database the benchmark runs in")
    user: str = Field(min_length=1, max_length=63, description="role the benchmark connects as")
    password_env: EnvVarName | None = Field(
        None, description="name of the environment variable that holds the password (local runs)"
    )
    password_secret_arn: SecretArn | None = Field(
        None, description="ARN of the Secrets Manager secret that holds the password (AWS runs)"
    )
    sslmode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] = Field(
        "prefer", description="libpq sslmode; verify-ca and verify-full check the server against sslrootcert"
    )
    sslrootcert: str | None = Field(
        None,
        max_length=1024,
        description="CA bundle to verify the server with (verify-ca, verify-full): a PEM file where the worker and "
        "preflight run, a Secrets Manager secret ARN holding the PEM (named pgarena/...), or "
        "s3://<results bucket>/ca/<name>.pem; default: the system CAs plus the Amazon RDS CA bundle shipped "
        "with pgarena (in the worker image and the functions)",
    )
    use_resolved_address: bool = Field(
        False,
        description="workers connect to the address preflight resolved the host to (libpq hostaddr), not the name; "
        "TLS still verifies the name. The workaround for DNS failing under load",
    )
    # Declared only so that an inline password gets a message saying what to do instead.
    password: None = Field(
        None,
        exclude=True,
        description="never: a password written inline is refused (use password_env or password_secret_arn)",
        json_schema_extra={"deprecated": True},
    )

    @field_validator("password", mode="before")
    @classmethod
    def _reject_inline_password(cls, value: Any) -> None:
        if value is not None:
            raise ValueError(INLINE_PASSWORD_FIX)
        return None

    @field_validator("sslrootcert")
    @classmethod
    def _ca_reference(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value.startswith(CA_SECRET_PREFIX) and not re.match(SECRET_ARN_PATTERN, value):
            raise ValueError("a secret's ARN is arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME")
        if value.startswith(CA_URL_PREFIX) and not re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/ca/.+$", value):
            raise ValueError("give s3://<results bucket>/ca/<name>.pem: pgarena's roles read CA bundles under ca/ only")
        return value

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


# Settings naming a file or folder the server writes or reads. A relative one is read from the data directory,
# inside the server's own 0700 folder; an absolute one (log_directory: /tmp/x) or one going up (..) would
# write where other users read or own files, as the server's user, whose uid is later reused.
PATH_SETTINGS = frozenset(
    {
        "log_directory",
        "log_filename",
        "external_pid_file",
        "stats_temp_directory",
        "ssl_cert_file",
        "ssl_key_file",
        "ssl_ca_file",
        "ssl_crl_file",
        "ssl_crl_dir",
        "ssl_dh_params_file",
        "krb_server_keyfile",
        "extension_control_path",
        "extension_destdir",
    }
)


def _outside_server_folder(value: object) -> bool:
    """A path setting's value that leaves the data directory: absolute, or with a `..` part."""
    if not isinstance(value, str) or value == "":
        return False  # '' is "none" for the optional files
    return value.startswith(("/", "\\")) or any(part == ".." for part in re.split(r"[/\\]", value))


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
        default_factory=dict,
        description='postgresql.conf settings, e.g. {"shared_buffers": "64MB"}; a path (log_directory, ssl_cert_file, ...) '
        "is relative to the server's data directory and stays inside it",
    )
    replicas: int = Field(
        0, ge=0, le=4, description="streaming standbys the local runtime creates with pg_basebackup -R, each on its own port"
    )
    replica_settings: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description='the standbys\' postgresql.conf settings, e.g. {"recovery_min_apply_delay": "1s"}'
    )
    network_delay_ms: float = Field(
        0,
        ge=0,
        le=500,
        description="a far server: workers reach it through a local TCP proxy that delays every byte this long "
        "each way (0: directly)",
    )

    @field_validator("settings", "replica_settings")
    @classmethod
    def _paths_inside(cls, value: dict[str, Any]) -> dict[str, Any]:
        outside = sorted(
            name for name, setting in value.items() if name.lower() in PATH_SETTINGS and _outside_server_folder(setting)
        )
        if outside:
            raise ValueError(
                f"{', '.join(outside)}: a path outside the server's own folder; give a path relative to its data "
                "directory, without '..' (e.g. log_directory: log)"
            )
        return value

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
        # Checked here, not 8 s later when the server refuses to start: the wheel's major's pg_settings names.
        unknown = unknown_settings(list(value), embedded_major())
        if unknown:
            raise ValueError("; ".join(unknown) + ": check the spelling (SHOW ALL lists a server's settings)")
        return value


# An external site's name: what its ECS Anywhere instances carry as their `pgarena.site` attribute.
SITE_NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,39}$"


class Placement(Strict):
    """Where workers and preflight run, next to the database: an AWS region (its subnets and security groups)
    or an external site (machines in another cloud registered to the stack's cluster through ECS Anywhere)."""

    region: str | None = Field(None, max_length=32, pattern=REGION_PATTERN, description="the AWS region of the subnets")
    site: str | None = Field(
        None,
        pattern=SITE_NAME_PATTERN,
        description="an external site (ECS Anywhere) named in the stack's pgarena:external_sites; not with region, "
        "subnets or security_groups",
    )
    subnets: list[Annotated[str, Field(max_length=64)]] = Field(
        default_factory=list, max_length=16, description="subnet ids the workers and preflight run in"
    )
    security_groups: list[Annotated[str, Field(max_length=64)]] = Field(
        default_factory=list, max_length=5, description="security group ids of the workers and preflight"
    )

    @model_validator(mode="after")
    def _site_or_region(self) -> Placement:
        # An external site's machines are outside AWS: no region's subnets or security groups apply there.
        if self.site is not None and (self.region is not None or self.subnets or self.security_groups):
            raise ValueError(
                f"site {self.site!r} is an external site (ECS Anywhere): give either site, or region with its "
                "subnets and security_groups, not both"
            )
        return self


class ConnectionPolicy(Strict):
    """What to do when a workload needs more connections than the target can give."""

    policy: Literal["clamp", "fail"] = Field(
        "fail", description="fail: refuse the workload; clamp: run with the largest client count that fits"
    )
    safety_margin: int = Field(2, ge=0, le=MAX_CLIENTS, description="slots left free for admins and the unexpected")
    lease_wait_s: int = Field(
        120,
        ge=0,
        le=600,
        description="how long to wait for the server while other campaigns measure it (or, sharing, hold the slots needed)",
    )
    share_server: bool = Field(
        False,
        description="measure the server while other campaigns that also share it do (their load is in this one's figures; "
        "results say so); by default each campaign has the server to itself, in turns",
    )
    monitor_interval_s: float = Field(5.0, ge=0.2, le=300, description="pg_stat_activity sampling interval during runs")


class Pooler(Strict):
    """A connection pooler in front of the target, with a client limit of its own."""

    kind: Literal["pgbouncer", "pgpool", "rds_proxy", "other"] = Field(description="which pooler")
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
    endpoint: Endpoint | None = Field(None, description="a server to reach; exactly one of endpoint and embedded")
    embedded: EmbeddedServer | None = Field(None, description="a server the local runtime starts (local runs only)")
    placement: Placement | None = Field(
        None, description="AWS only: where workers run, next to the database (a region, or an external site)"
    )
    hourly_cost_usd: float | None = Field(
        None, ge=0, le=1_000_000, description="what the target costs per hour, for cost-efficiency figures"
    )
    pooler: Pooler | None = Field(None, description="a pooler in front of the target: the budget is the lower of both limits")
    connections: ConnectionPolicy | None = Field(None, description="overrides the campaign's connection policy")
    replicas: list[Replica] = Field(
        default_factory=list, description="replicas whose catch-up is timed after each run (sustainable throughput)"
    )
    cloudwatch: CloudWatchSource | None = Field(
        None,
        description="RDS and Aurora: the DB instance whose CloudWatch metrics (CPU, IOPS, disk queue, freeable memory, "
        "replica lag) are read over each run's window; none when absent",
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


RankingMetric = Literal["throughput", "latency", "stability", "cost", "sustainable", "slo_tps", "nopm"]
# The composite score's default weights (docs/ranking.md). slo_tps counts only in
# campaigns whose workloads declare an slo: a metric no target has gives its weight up. nopm (TPROC-C's
# new orders per minute) weighs only where the matrix gives it a weight.
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
        0.02,
        ge=0,
        le=1,
        description="with fewer than 3 runs per point (no interval): composite scores closer than this relative difference "
        "share a provisional rank",
    )
    equivalence_margin_pct: float = Field(
        5.0,
        ge=0,
        le=100,
        description="two targets are equivalent on a metric when the decision's interval of their ratio lies within this "
        "many percent of 1 (two one-sided tests); only equivalent targets tie (docs/ranking.md)",
    )
    allow_unequal_footing: bool = Field(
        False,
        description="rank targets together whose median round trips differ by more than 1 ms and 2x, or whose workers "
        "differ in size; the verdict then says so (docs/guide/05-deploy.md, 'Equal footing')",
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
    region: str | None = Field(None, pattern=REGION_PATTERN, description="price table region; default: the coordinator's region")
    schedule: Name | None = Field(None, description="the schedule that started the campaign, recorded in the ledger")


class Consolidation(Strict):
    """Run the workload on the first N targets at once, for each N in `steps`, and compare the total with
    ideal scaling (the first step's throughput per target x N): docs/guide/08-methodology.md, section 3."""

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
    """A study repeated as a campaign (docs/guide/03-measurements.md, "Scenarios")."""

    consolidation: Consolidation | None = Field(None, description="the same workload on the first N targets at once")


class RepetitionRange(Strict):
    """Adaptive repetitions: `min` phases always run, then one more at a time while a ranked pair is undecided,
    up to `max` (docs/guide/02-matrix.md, "Repetitions until decided")."""

    min: int = Field(
        ge=MIN_ADAPTIVE_REPETITIONS,
        le=MAX_REPETITIONS,
        description="repetitions always run before the first decision; 3 or more recommended",
    )
    max: int = Field(
        ge=MIN_ADAPTIVE_REPETITIONS,
        le=MAX_REPETITIONS,
        description=f"repetitions at most (at most {MAX_REPETITIONS}); the estimate and the cost guard price this many",
    )

    @model_validator(mode="after")
    def _min_within_max(self) -> RepetitionRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max}): lower min or raise max")
        return self


def _repetitions_form(value: Any) -> str:
    # Tags with "[" are dropped from a refusal's path (pgarena.model.matrix_errors): "$.repetitions.min".
    return "range[min,max]" if isinstance(value, dict | RepetitionRange) else "int"


Repetitions = Annotated[
    Annotated[int, Field(ge=1, le=MAX_REPETITIONS), Tag("int")] | Annotated[RepetitionRange, Tag("range[min,max]")],
    Discriminator(_repetitions_form),
]


class Campaign(Strict):
    campaign: Name
    targets: list[Target] = Field(min_length=1, description="the servers compared")
    workloads: list[Workload] = Field(min_length=1, description="what is run on every target, in order")
    repetitions: Repetitions = Field(
        1,
        description=(
            "runs of each point, interleaved across targets; 3 or more for confidence intervals; "
            "or {min, max}: more runs only while the verdict is undecided"
        ),
    )
    order_seed: int | None = Field(
        None, ge=0, description="seeds the shuffled target order of each repetition; derived from the campaign id when absent"
    )
    target_concurrency: int = Field(
        1, ge=1, le=40, description="targets benchmarked at once; 1 keeps local targets from competing for CPU"
    )
    connections: ConnectionPolicy = Field(
        default_factory=ConnectionPolicy, description="the connection budget's policy; a target may override it"
    )
    # The clock starts when the state launches the worker: a cold Fargate start (ENI, image pull) takes
    # one to three minutes before the first beat, so the default leaves room for it.
    heartbeat_timeout_s: int = Field(
        300, ge=2, le=3600, description="a worker silent for this long is declared lost (worker_lost); it beats more often"
    )
    ranking: RankingConfig | None = Field(None, description="composite score weights and tie rule; defaults when absent")
    cost: CostPolicy | None = Field(None, description="cost caps and the price region; no caps when absent")
    scenario: Scenario | None = Field(None, description="a consolidation sweep; a plain comparison when absent")
    only_steps: list[str] | None = Field(
        None,
        description="set by `pgarena resume`: the step ids this campaign runs, every other planned step kept from the "
        "campaign it resumes (a plain comparison only); every step when absent",
    )

    @property
    def max_repetitions(self) -> int:
        """Repetitions planned: all of them when fixed, the most an adaptive campaign may run."""
        return self.repetitions.max if isinstance(self.repetitions, RepetitionRange) else self.repetitions

    @property
    def min_repetitions(self) -> int | None:
        """Repetitions always run before deciding whether more are needed; None when they are fixed."""
        return self.repetitions.min if isinstance(self.repetitions, RepetitionRange) else None

    @model_validator(mode="after")
    def _adaptive_not_in_a_sweep(self) -> Campaign:
        if self.min_repetitions is not None and self.scenario and self.scenario.consolidation:
            # A sweep's phases are its steps, each running every repetition: there is no phase to add.
            raise ValueError(
                "repetitions {min, max} with scenario.consolidation: a consolidation sweep runs a fixed number of "
                "repetitions in each step; give repetitions as a number"
            )
        return self

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
        if sweep and self.only_steps is not None:
            raise ValueError(
                "only_steps with scenario.consolidation: a sweep's phases run their targets together; remove only_steps"
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


def json_schema() -> dict[str, Any]:
    return Campaign.model_json_schema()
