"""Result records: the step summaries workers write and the results.json contract."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pgarena.budget import Budget, ConnectionFacts
from pgarena.errors import ErrorInfo
from pgarena.monitor import ConnectionReport

Status = Literal["succeeded", "failed"]


class Latency(BaseModel):
    """Milliseconds. avg/stddev as the tool printed them; percentiles from an HdrHistogram of every
    transaction's latency (pgbench --log) or as the tool printed them (sysbench --percentile)."""

    avg: float | None = None
    stddev: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


class ProgressSample(BaseModel):
    elapsed_s: float
    tps: float
    latency_avg_ms: float | None = None


class Barrier(BaseModel):
    start_epoch: float = Field(description="the start time the shards agreed on")
    released_epoch: float = Field(description="when this shard left the barrier")
    all_arrived: bool


class StepSummary(BaseModel):
    """What one worker task measured; stored in DynamoDB and traceable to `raw`."""

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
    load_s: float | None = None
    load_phases_s: dict[str, float] = Field(default_factory=dict)
    latency_histogram: str | None = Field(None, description="HdrHistogram of every transaction's latency (us), encoded")
    series: str | None = Field(None, description="S3 key of the shard's per-second histograms (sharded runs)")
    barrier: Barrier | None = None
    extra: dict[str, float | int | None] = Field(default_factory=dict, description="tool-specific figures, e.g. sysbench qps")
    connections: ConnectionReport | None = None
    raw: list[str] = Field(default_factory=list, description="S3 keys of the raw output")
    error: ErrorInfo | None = None


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


class ShardResult(BaseModel):
    """One worker's part of a sharded run, as it ran on its own (kept beside the merged result)."""

    step_id: str
    clients: int | None
    status: Status
    tps: float | None = Field(None, description="as this shard's pgbench printed it, over its own run")
    transactions: int | None = None
    barrier: Barrier | None = None
    raw: list[str] = Field(default_factory=list)
    error: ErrorInfo | None = None


class WorkloadResult(BaseModel):
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
    extra: dict[str, float | int | None] = Field(default_factory=dict, description="tool-specific figures, e.g. sysbench qps")
    connections: ConnectionReport | None = None
    shards: list[ShardResult] = Field(default_factory=list, description="set when several workers ran the step")
    start_skew_s: float | None = Field(None, description="latest shard start minus earliest")
    window_s: int | None = Field(None, description="whole seconds when every shard ran: what the merged figures cover")
    degraded: bool = Field(False, description="a shard failed: the merged result covers fewer clients")
    raw: list[str] = Field(default_factory=list, description="paths relative to the campaign folder")
    error: ErrorInfo | None = None


class LoadResult(BaseModel):
    """Loading the data set (pgbench -i, sysbench prepare), or removing it (sysbench cleanup)."""

    workload: str
    kind: Literal["init", "cleanup"] = "init"
    status: Status
    seconds: float | None = None
    phases_s: dict[str, float] = Field(default_factory=dict)
    raw: list[str] = Field(default_factory=list)
    error: ErrorInfo | None = None


class TargetResult(BaseModel):
    name: str
    provider: str
    status: Status
    error: ErrorInfo | None = None
    server: ServerInfo | None = None
    hourly_cost_usd: float | None = None
    loads: list[LoadResult] = Field(default_factory=list)
    workloads: list[WorkloadResult] = Field(default_factory=list)


class RankEntry(BaseModel):
    rank: int
    target: str
    score: float
    basis: str
    metrics: dict[str, float] = Field(default_factory=dict, description="per-metric scores, 1.0 = best ranked target")
    metric_ranks: dict[str, int] = Field(default_factory=dict, description="rank on each metric alone, ties shared")
    tied_with: list[str] = Field(default_factory=list, description="targets within run-to-run noise: same rank")
    flags: list[str] = Field(default_factory=list, description="runs left out of the comparison, and why")


class CampaignCost(BaseModel):
    """The cost guard's estimate and, once the campaign ran, what it cost (pgarena.cost, pgarena.ledger)."""

    region: str
    estimated_usd: float
    actual_usd: float | None = Field(None, description="priced from the workers' measured times and the wall time")
    bound_usd: float | None = Field(None, description="the most the campaign could have cost: every step to its timeout")
    cap_usd: float | None = None
    monthly_cap_usd: float | None = None
    month: str | None = Field(None, description="the ledger month the campaign is booked in (YYYY-MM)")
    refused: str | None = Field(None, description="why the cost guard refused the campaign")


class CampaignResults(BaseModel):
    campaign_id: str
    campaign: str
    started_at: str
    finished_at: str
    targets: list[TargetResult]
    ranking: list[RankEntry]
    cost: CampaignCost | None = None
