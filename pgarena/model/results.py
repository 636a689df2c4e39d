"""Result records: the step summaries workers write and the results.json contract."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, SerializeAsAny, model_validator

from pgarena.model.budget import Budget, ConnectionFacts
from pgarena.model.errors import ErrorInfo
from pgarena.model.figures import Latency, PointStats, UslFit
from pgarena.model.managed_metrics import ManagedMetrics
from pgarena.model.metrics import Finding, PointLatency, RunHistograms, Stability, TargetMetrics
from pgarena.model.monitor import ConnectionReport, Incident
from pgarena.model.pairwise import FootingProblem, NoiseWarning, PairComparison
from pgarena.model.replication import ReplicationResult
from pgarena.model.server_counters import ServerCounters
from pgarena.model.slo import SloSearch
from pgarena.model.tool_figures import ToolFigures


def now_iso() -> str:
    """Now, as every timestamp of results.json and the step summaries is written (UTC, milliseconds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


Status = Literal["succeeded", "failed"]


class ProgressSample(BaseModel):
    elapsed_s: float
    tps: float
    latency_avg_ms: float | None = None
    lag_ms: float | None = Field(None, description="schedule lag of the interval (a run under --rate)")
    percentile: float | None = Field(None, description="the percentile latency_pct_ms is, as the tool printed it per interval")
    latency_pct_ms: float | None = Field(None, description="the interval's latency at `percentile`, as the tool printed it")


class Barrier(BaseModel):
    start_epoch: float = Field(description="the start time the shards agreed on")
    released_epoch: float = Field(description="when this shard left the barrier")
    all_arrived: bool


# pg_settings' units, in bytes and in microseconds; SHOW prints a value in the largest that divides it.
_MEMORY_UNITS = {"TB": 1024**4, "GB": 1024**3, "MB": 1024**2, "kB": 1024, "B": 1}
_TIME_UNITS = {"d": 86_400_000_000, "h": 3_600_000_000, "min": 60_000_000, "s": 1_000_000, "ms": 1_000, "us": 1}


def _in_unit(value: int, units: dict[str, int]) -> str:
    """A value in the smallest of `units` as SHOW writes it: the largest unit it is a whole number of."""
    unit = next(u for u, size in units.items() if value % size == 0)
    return f"{value // units[unit]}{unit}"


class ServerSetting(BaseModel):
    """A setting not at its default (pg_settings), as the server reports it."""

    name: str
    setting: str
    unit: str | None = None
    source: str = Field(description="where the value comes from: configuration file, command line, database, ...")

    @property
    def shown(self) -> str:
        """The value as PostgreSQL's SHOW prints it: shared_buffers 16384 x 8kB is '128MB', not '16384 8kB'."""
        scaled = re.fullmatch(r"(\d*)(\D+)", self.unit or "")
        multiple, unit = (int(scaled[1] or 1), scaled[2]) if scaled else (1, "")
        units = _MEMORY_UNITS if unit in _MEMORY_UNITS else _TIME_UNITS if unit in _TIME_UNITS else None
        if units is None or not self.setting.lstrip("-").isdigit():  # no unit, text, or a real (2.5ms): as given
            return f"{self.setting}{self.unit or ''}"
        value = int(self.setting)
        if value <= 0:  # -1 and 0 mean off or the default: SHOW prints them bare
            return self.setting
        return _in_unit(value * multiple * units[unit], units)


class EcsTask(BaseModel):
    """The Fargate task a worker ran in (ECS task metadata endpoint v4)."""

    availability_zone: str | None = None
    cpu: float | None = Field(None, description="the task's vCPU limit")
    memory_mib: int | None = Field(None, description="the task's memory limit")
    launch_type: str | None = None
    task_arn: str | None = None


class WorkerFacts(BaseModel):
    """The machine a step's load generator ran on, and its network distance to the database."""

    cpu_model: str | None = None
    cpu_count: int | None = Field(None, description="CPUs this process may run on")
    cpu_limit: float | None = Field(
        None, description="CPUs the worker may use: its cgroup's quota (cpu.max, a Fargate task's size) when set, else cpu_count"
    )
    memory_bytes: int | None = Field(None, description="the container's memory limit, else the machine's memory")
    platform: str | None = None
    tools: dict[str, str] = Field(default_factory=dict, description="tool or library -> version")
    task: EcsTask | None = Field(None, description="set in AWS (ECS_CONTAINER_METADATA_URI_V4)")
    worker_id: str | None = Field(None, description="the worker that ran the step: its task ARN in ECS, else host:pid:nonce")
    step_of_worker: int | None = Field(None, description="how many steps its worker had run, this one included")
    rtt_ms: float | None = Field(None, description="median round trip of `select 1` over an open connection")
    rtt_samples: int = 0
    notes: list[str] = Field(default_factory=list, description="facts that could not be read, and why")


class HarnessCost(BaseModel):
    """What the worker itself cost while it ran a step, apart from the tool: a user can see the harness
    did not disturb the measurement. CPU from getrusage: RUSAGE_SELF (the worker process: its monitor,
    streaming, uploads, parsing) and RUSAGE_CHILDREN (the tool, once it exited)."""

    wall_s: float = Field(description="the worker's time on the step, from reading it to writing its summary")
    cpu_s: float = Field(description="CPU-seconds (user + system) of the worker process itself, the tool left out")
    tool_cpu_s: float = Field(description="CPU-seconds of the tool (and any other child process the worker ran)")
    log_processing_s: float = Field(description="wall time turning the tool's output and per-transaction log into figures")
    peak_rss_mib: float | None = Field(None, description="the worker process's peak resident memory")
    load_wall_s: float | None = Field(None, description="wall time the tool ran (its measured run, probes apart)")
    load_cpu_s: float | None = Field(None, description="CPU-seconds the worker and its tool used while the tool ran")
    throttled_share: float | None = Field(
        None, description="share of the cgroup's CPU quota periods that hit the quota while the tool ran (None: no quota)"
    )

    @property
    def share(self) -> float | None:
        """The worker's part of the CPU it and the tool used together."""
        spent = self.cpu_s + self.tool_cpu_s
        return self.cpu_s / spent if spent > 0 else None


class RawFile(BaseModel):
    """A raw file as its worker uploaded it: what a kept copy must match to count as the step's evidence."""

    size_bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class StoredObject(RawFile):
    """An object in the results bucket a record points to, with what it must match."""

    key: str


# A tool's subclass is written whole (SerializeAsAny), not as the base's fields only.
ToolFiguresField = SerializeAsAny[ToolFigures]
SERVER_COUNTERS = (
    "the server's counters over the run's window (pg_stat_database, checkpoints, WAL, I/O, the benchmark's tables): "
    "deltas of two snapshots read at its edges, kept in `raw`"
)
TOOL_FIGURES = "the tool's own figures, e.g. queries per second (qps); a figure the tool did not report is left out"


def _tool_figures_from_extra(data: Any) -> Any:
    """A summary or results.json written before `tool_figures` held the same figures as a dict named `extra`."""
    if isinstance(data, dict) and "extra" in data and "tool_figures" not in data:
        data = {**data, "tool_figures": data["extra"]}
        del data["extra"]
    return data


class StepSummary(BaseModel):
    """What one worker task measured; stored in DynamoDB and traceable to `raw`."""

    _from_extra = model_validator(mode="before")(_tool_figures_from_extra)

    campaign_id: str
    step_id: str
    target: str
    workload: str
    kind: Literal["init", "run", "cleanup"]
    tool: str
    repetition: int = 1
    clients: int | None = None
    requested_clients: int | None = None
    status: Status
    started_at: str
    finished_at: str
    wall_s: float
    exit_code: int | None = None
    tool_version: str | None = None
    tps: float | None = None
    tps_including_connections: float | None = None
    latency_ms: Latency = Latency()
    transactions: int | None = None
    failed_transactions: int | None = None
    progress: list[ProgressSample] = Field(default_factory=list)
    progress_ref: StoredObject | None = Field(
        None, description="where the progress series is kept when the summary's item holds a pointer instead (the bucket)"
    )
    warmup_s: int | None = Field(None, description="the run's first seconds, left out of every figure above")
    load_s: float | None = None
    load_phases_s: dict[str, float] = Field(default_factory=dict)
    latency_histogram: str | None = Field(None, description="HdrHistogram of every transaction's latency (us), encoded")
    series: str | None = Field(
        None, description="S3 key of the run's (or shard's) per-second histograms (every run whose tool keeps a transaction log)"
    )
    barrier: Barrier | None = None
    tool_figures: ToolFiguresField = Field(default_factory=ToolFigures, description=TOOL_FIGURES)
    connections: ConnectionReport | None = None
    server_counters: ServerCounters | None = Field(None, description=SERVER_COUNTERS)
    replication: ReplicationResult | None = Field(None, description="replicas' lag and catch-up after the run")
    worker: WorkerFacts | None = Field(None, description="the load generator's machine and its round trip to the database")
    harness: HarnessCost | None = Field(None, description="what the worker itself cost, apart from the tool")
    slo: SloSearch | None = Field(None, description="the SLO search's curve and tps at SLO (the run is its ceiling run)")
    raw: list[str] = Field(default_factory=list, description="S3 keys of the raw output")
    raw_files: dict[str, RawFile] = Field(
        default_factory=dict, description="each raw key's size and sha256 as uploaded: resume re-runs a step whose copy differs"
    )
    error: ErrorInfo | None = None


class PreflightOrigin(BaseModel):
    """Where a target's preflight ran: the home stack's function, or a worker on the target's site."""

    site: str = Field(description="the region it ran in, or the external site's name")
    runner: Literal["function", "worker"] = Field(description="function: the home preflight Lambda; worker: a task on the site")
    worker_id: str | None = Field(None, description="the worker's id (its task ARN in ECS), as its steps' facts give it")


class ServerInfo(BaseModel):
    """What preflight read from the live server, and the connection budget it derived."""

    version: str
    version_num: int
    max_connections: int
    facts: ConnectionFacts
    budget: Budget
    leased_by_others: int = 0
    allowed: int = Field(description="benchmark connections this campaign may open: budget capacity - leased by others")
    connections_needed: int
    clamped: bool = False
    postmaster_started_at: str | None = Field(
        None, description="pg_postmaster_start_time() at preflight: a later, different value means the server restarted"
    )
    address: str | None = Field(None, description="the address the host name resolved to at preflight (resolved once)")
    settings: list[ServerSetting] = Field(
        default_factory=list, description="every setting not at its default (pg_settings), secrets masked"
    )
    extensions: dict[str, str] = Field(default_factory=dict, description="installed extensions (pg_extension) -> version")
    database_size_bytes: int | None = Field(None, description="pg_database_size of the benchmark database at preflight")
    unreadable: list[str] = Field(default_factory=list, description="facts the role could not read, and why")
    preflight: PreflightOrigin | None = Field(None, description="where preflight ran")
    system_identifier: str | None = Field(
        None, description="pg_control_system()'s, where the role may read it: the server's identity, which its lease is keyed by"
    )
    share_server: bool = Field(
        False,
        description="connections.share_server: other sharing campaigns may have measured this server at the same "
        "time, their load in these figures; otherwise it was this campaign's alone while leased",
    )
    lease_waited_s: float = Field(0.0, description="how long preflight waited for its turn on the server")


class ShardResult(BaseModel):
    """One worker's part of a sharded run, as it ran on its own (kept beside the merged result)."""

    step_id: str
    clients: int | None
    status: Status
    tps: float | None = Field(None, description="as this shard's tool printed it, over its own run")
    transactions: int | None = None
    barrier: Barrier | None = None
    raw: list[str] = Field(default_factory=list)
    error: ErrorInfo | None = None


class WorkloadResult(BaseModel):
    _from_extra = model_validator(mode="before")(_tool_figures_from_extra)

    name: str
    tool: str
    clients: int | None = Field(description="clients that actually ran (after any budget clamp)")
    requested_clients: int | None = Field(None, description="clients the matrix asked for; differs from clients when clamped")
    repetition: int
    status: Status
    tps: float | None = None
    latency_ms: Latency = Latency()
    transactions: int | None = None
    failed_transactions: int | None = None
    progress: list[ProgressSample] = Field(default_factory=list)
    warmup_s: int | None = Field(
        None, description="the run's first seconds, left out of tps, transactions, percentiles, progress and stability"
    )
    tool_figures: ToolFiguresField = Field(default_factory=ToolFigures, description=TOOL_FIGURES)
    connections: ConnectionReport | None = None
    server_counters: ServerCounters | None = Field(None, description=SERVER_COUNTERS)
    managed_metrics: ManagedMetrics | None = Field(
        None,
        description="the target's cloudwatch instance metrics over the run's window (min, avg, max per metric), the "
        "GetMetricData answer kept in `raw`; a read refused or failed is its `note`",
    )
    shards: list[ShardResult] = Field(default_factory=list, description="set when several workers ran the step")
    start_skew_s: float | None = Field(None, description="latest shard start minus earliest")
    window_s: float | None = Field(
        None,
        description="the shards' common span, what the merged figures cover: from the latest shard's first transaction "
        "start to the earliest shard's last transaction end (transactions counted by their end)",
    )
    degraded: bool = Field(False, description="a shard failed: the merged result covers fewer clients")
    replication: ReplicationResult | None = Field(
        None, description="the target's replicas: lag during the run, catch-up after it, sustainable tps"
    )
    phase: int | None = Field(None, description="the consolidation step the run belongs to (multi-phase campaigns)")
    barrier: Barrier | None = Field(None, description="the start barrier the phase's targets met at (consolidation)")
    rate_tps: float | None = Field(None, description="the rate the run was throttled to (--rate)")
    incidents: list[Incident] = Field(
        default_factory=list, description="e.g. rate_not_sustained: the asked rate was not delivered"
    )
    stability: Stability | None = Field(None, description="the run's per-interval tps: CV, worst vs median, drops")
    worker: WorkerFacts | None = Field(None, description="the load generator (the first shard's, when sharded)")
    harness: HarnessCost | None = Field(None, description="what the worker(s) cost apart from the tool, summed over shards")
    slo: SloSearch | None = Field(
        None,
        description="the SLO search: its curve (rate, tps, p95, p99, lag, met) and slo_tps; the run's figures are its ceiling run's",
    )
    raw: list[str] = Field(default_factory=list, description="paths relative to the campaign folder")
    error: ErrorInfo | None = None
    # The run's histograms as aggregation read them (its series.json and summary), for its point's merged latency
    # (analysis.latency_intervals): never written to results.json, which keeps only what the point's merge gives.
    _histograms: RunHistograms | None = PrivateAttr(None)

    def with_histograms(self, histograms: RunHistograms | None) -> WorkloadResult:
        self._histograms = histograms
        return self

    @property
    def histograms(self) -> RunHistograms | None:
        return self._histograms

    # Its point's merged latency, once merged from the point's runs' histograms (which are then let go):
    # aggregation holds one target's histograms at a time (analysis.metrics.merge_point_latencies).
    _point_latency: PointLatency | None = PrivateAttr(None)
    _point_merged: bool = PrivateAttr(False)

    def with_point_latency(self, latency: PointLatency | None) -> WorkloadResult:
        self._point_latency, self._point_merged, self._histograms = latency, True, None
        return self

    @property
    def point_merged(self) -> bool:
        return self._point_merged

    @property
    def point_latency(self) -> PointLatency | None:
        return self._point_latency


class LoadResult(BaseModel):
    """Loading the data set (pgbench -i, sysbench prepare), or removing it (sysbench cleanup)."""

    workload: str
    kind: Literal["init", "cleanup"] = "init"
    status: Status
    seconds: float | None = None
    phases_s: dict[str, float] = Field(default_factory=dict)
    phase: int | None = Field(None, description="the consolidation step the load belongs to (multi-phase campaigns)")
    raw: list[str] = Field(default_factory=list)
    error: ErrorInfo | None = None
    connections: ConnectionReport | None = Field(
        None, description="the live monitor's report of a load (init): its lock waits and how long, as incidents"
    )


class WorkerSize(BaseModel):
    """A target's load generator, as its workers measured it: what equal footing compares (pgarena.analysis.footing)."""

    vcpu: float | None = Field(None, description="the task's vCPU limit, else the worker's CPU quota or CPU count")
    memory_mib: int | None = Field(None, description="the task's memory limit, else the container's or the machine's")
    cpu_model: str | None = Field(None, description="shown, not compared: Fargate does not let a task choose it")


class TargetResult(BaseModel):
    name: str
    provider: str
    status: Status
    error: ErrorInfo | None = None
    server: ServerInfo | None = None
    hourly_cost_usd: float | None = None
    rtt_ms: float | None = Field(None, description="median of the workers' median round trips to the database")
    site: str | None = Field(None, description="where its workers ran: an AWS region, or 'local' (this machine)")
    worker_size: WorkerSize | None = Field(None, description="its workers' size (the most common, when they differ)")
    harness: HarnessCost | None = Field(None, description="what its workers cost apart from the tools, every step summed")
    worker_changes: list[str] = Field(
        default_factory=list, description="phases whose steps ran on more than one worker (one was lost and replaced)"
    )
    loads: list[LoadResult] = Field(default_factory=list)
    workloads: list[WorkloadResult] = Field(default_factory=list)
    points: list[PointStats] = Field(
        default_factory=list, description="per workload x client count: mean, stddev, n and 95% interval of tps, p95, p99"
    )


class RankEntry(BaseModel):
    rank: int
    target: str
    score: float
    basis: str
    metrics: dict[str, float] = Field(default_factory=dict, description="per-metric scores, 1.0 = best ranked target")
    metric_ranks: dict[str, int] = Field(default_factory=dict, description="rank on each metric alone, ties shared")
    tied_with: list[str] = Field(
        default_factory=list,
        description="targets shown equivalent to it within the margin (see CampaignResults.comparisons): same rank",
    )
    undecided_with: list[str] = Field(
        default_factory=list,
        description="targets sharing its rank that nothing separated nor showed equivalent (inconclusive): same rank",
    )
    provisional: bool = Field(False, description="fewer than 3 runs per point: ordered by the means, not decided")
    flags: list[str] = Field(default_factory=list, description="runs left out of the comparison, and why")


class CampaignCost(BaseModel):
    """The cost guard's estimate and, once the campaign ran, what it cost (pgarena.cost, pgarena.ledger)."""

    region: str
    estimated_usd: float
    actual_usd: float | None = Field(None, description="priced from the workers the steps recorded and the wall time")
    actual_workers: int | None = Field(
        None, description="worker tasks the actual cost counts: the workers the steps recorded (a replaced one twice)"
    )
    bound_usd: float | None = Field(None, description="the most the campaign could have cost: every step to its timeout")
    cap_usd: float | None = None
    monthly_cap_usd: float | None = None
    month: str | None = Field(None, description="the ledger month the campaign is booked in (YYYY-MM)")
    refused: str | None = Field(None, description="why the cost guard refused the campaign")


class ConsolidationStep(BaseModel):
    """One step of a consolidation sweep: N targets running the same workload at the same time."""

    phase: int
    targets: int = Field(description="targets that ran at once")
    names: list[str]
    measured_tps: float | None = Field(None, description="sum of the targets' tps (mean over repetitions)")
    ideal_tps: float | None = Field(None, description="the first step's tps per target x targets")
    ratio: float | None = Field(None, description="measured / ideal")
    per_target_tps: dict[str, float | None] = Field(default_factory=dict)
    complete: bool = Field(description="every target of the step succeeded at this point (unclamped)")
    usl_tps: float | None = Field(None, description="what the USL fit predicts for this many targets")
    note: str | None = None


class ConsolidationTable(BaseModel):
    """Total throughput per step against ideal scaling, for one workload point (METHODOLOGY.md section 3)."""

    workload: str
    clients: int | None = Field(description="clients per target")
    threshold: float
    steps: list[ConsolidationStep]
    below_threshold_at: int | None = Field(
        None, description="targets at the first complete step whose measured / ideal fell below the threshold"
    )
    usl: UslFit | None = Field(None, description="fitted over the complete steps (three at least)")


class ReplicationPoint(BaseModel):
    """Sustainable throughput of one target at one client count, over repetitions (METHODOLOGY.md section 4)."""

    target: str
    workload: str
    clients: int | None
    runs: int
    tps: float | None = Field(None, description="primary's tps, mean over the runs")
    catch_up_s: float | None = Field(None, description="slowest replica's catch-up, mean over the runs")
    sustainable_tps: float | None = Field(None, description="mean over the runs where every replica caught up")
    caught_up: bool = Field(description="every replica caught up after every run")
    peak_lag_bytes: int | None = None


class Scenarios(BaseModel):
    consolidation: list[ConsolidationTable] = Field(default_factory=list, description="one table per workload point")
    replication: list[ReplicationPoint] = Field(default_factory=list)


class RunPass(BaseModel):
    """One pass of the state machine's phase Map: these targets, in this order."""

    phase: int
    workload: str | None = Field(None, description="the workload the pass runs; None: every workload")
    repetition: int | None = Field(None, description="the repetition the pass runs; None: every repetition")
    cleanup: bool = Field(False, description="an adaptive plan's cleanup of the workload, after its repetitions")
    targets: list[str] = Field(description="in the order they ran (target_concurrency at a time)")


class RunOrder(BaseModel):
    """How repetitions were interleaved: repetition r of every target before r + 1 of any, the targets'
    order within each pass shuffled by `seed`, so drift over the campaign hits every target alike."""

    seed: int
    seed_from: Literal["matrix", "campaign_id"] = Field(description="the matrix's order_seed, or derived from the id")
    targets: list[str] = Field(description="the matrix's order")
    passes: list[RunPass]


class Statistics(BaseModel):
    """How the points' intervals were computed, and whether there were any."""

    method: str
    repetitions: int
    note: str | None = Field(None, description="e.g. '1 run per point: no confidence interval'")


class Look(BaseModel):
    """One decision of an adaptive campaign, after a phase past its minimum repetitions."""

    phase: int = Field(description="the phase just run")
    workload: str | None = None
    repetitions: int = Field(description="the workload's repetitions run so far")
    more: bool = Field(description="another repetition was run")
    reason: str = Field(description="why: undecided, decided, or the maximum reached")


class AdaptiveRepetitions(BaseModel):
    """repetitions {min, max}: what ran, and the phases planned to max that were not needed."""

    min: int
    max: int
    looks: list[Look] = Field(default_factory=list)
    not_needed: list[int] = Field(
        default_factory=list, description="phases planned but not run: the verdict was decided without them (not failures)"
    )

    def repetitions_run(self, workload: str | None = None) -> int:
        """Repetitions the workload ran (the most of any when None)."""
        runs = [look.repetitions + look.more for look in self.looks if workload is None or look.workload == workload]
        return max(runs, default=self.min)


class CampaignResults(BaseModel):
    campaign_id: str
    campaign: str
    started_at: str
    finished_at: str
    targets: list[TargetResult]
    ranking: list[RankEntry]
    comparisons: list[PairComparison] = Field(
        default_factory=list, description="every pair of ranked targets compared metric by metric: the verdict's basis"
    )
    noise: list[NoiseWarning] = Field(default_factory=list, description="ranked points whose runs were noisy")
    footing: list[FootingProblem] = Field(
        default_factory=list,
        description="pairs of measured targets not on equal footing (round trip or worker size): not ranked together "
        "unless ranking.allow_unequal_footing",
    )
    metrics: list[TargetMetrics] = Field(
        default_factory=list,
        description="per target: every point's figures and intervals, scaling curves and findings, computed once at "
        "aggregation; the report, the CLI, the CSVs and `compare` read them from here",
    )
    findings: list[Finding] = Field(
        default_factory=list,
        description="where targets differ in their server counters' findings at one point (one checkpointed, the other "
        "did not): their ranking there compares unlike runs; each target's own findings are in its metrics",
    )
    cost: CampaignCost | None = None
    status: Literal["completed", "cancelled", "failed"] = Field(
        "completed",
        description="cancelled: stopped before the end (Ctrl-C, StopExecution); failed: the execution failed or "
        "timed out in AWS before Aggregate And Rank; either way what finished is listed",
    )
    resumed_from: list[str] = Field(
        default_factory=list, description="campaign ids whose successes this one kept (`pgarena resume`)"
    )
    scenarios: Scenarios | None = Field(None, description="consolidation and replication tables, when the matrix asks")
    statistics: Statistics | None = Field(None, description="the interval method; says so when points have one run")
    run_order: RunOrder | None = Field(None, description="the seeded, interleaved order the targets ran in")
    adaptive: AdaptiveRepetitions | None = Field(
        None, description="repetitions {min, max}: the decisions taken and the phases not needed"
    )
