"""What analysis computes from results.json for the report: per-point metrics, stability, scaling curves and findings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from pgarena.model.figures import Interval, Latency, PointStats, UslFit
from pgarena.model.monitor import Incident


class Stability(BaseModel):
    """How steady the per-interval tps was during one run (or the worst of a point's runs)."""

    intervals: int
    cv: float | None = Field(None, description="coefficient of variation of the per-interval tps (pstdev / mean)")
    median_tps: float | None = None
    worst_tps: float | None = None
    worst_vs_median: float | None = Field(None, description="worst interval tps / median interval tps")
    incidents: list[Incident] = Field(default_factory=list)
    stalled: bool = Field(False, description="the run stalled (see STALL_ZERO_S, STALL_FRACTION): not ranked")

    @property
    def collapsed(self) -> bool:
        return any(i.kind == "tps_collapse" for i in self.incidents)


class TypeLatency(BaseModel):
    """One transaction type at a point: its transactions over the runs, and its percentiles' means over them."""

    name: str
    done: int
    failed: int = 0
    rolled_back: bool = False
    latency_ms: Latency = Latency()


@dataclass(frozen=True)
class IntervalHistogram:
    """One run's interval: when it ends (seconds since the run's first whole second), its histogram (encoded)."""

    elapsed_s: float
    transactions: int
    histogram: str


@dataclass(frozen=True)
class RunHistograms:
    """What a run keeps for its point's merge: its whole window's histogram and its intervals' (encoded), so a
    point holds a few strings per run, never a histogram's counts per second."""

    histogram: str
    interval_s: int
    intervals: tuple[IntervalHistogram, ...]


class LatencyInterval(BaseModel):
    """One progress interval of a point: the transactions of all its runs that ended in it, their
    histograms merged (never percentiles averaged), milliseconds."""

    elapsed_s: float = Field(description="the interval's end, seconds since the first whole second of the runs' windows")
    transactions: int
    runs: int = Field(description="runs with transactions in the interval")
    p50: float
    p95: float
    p99: float


class PercentileLatency(BaseModel):
    """A point on the percentile distribution: the latency (ms) that `percentile` % of transactions stayed at or under."""

    percentile: float
    ms: float


class PointLatency(BaseModel):
    """A point's latency from its runs' histograms merged (the runs' series.json and transaction logs are its raw):
    over time, per progress interval, and as a percentile distribution."""

    interval_s: int = Field(description="the intervals' length: the tool's progress interval, widened for long runs")
    transactions: int = Field(description="transactions in the merged histogram: every run's window")
    latency_ms: Latency = Field(description="p50/p95/p99/max of the merged histogram")
    intervals: list[LatencyInterval] = Field(default_factory=list)
    distribution: list[PercentileLatency] = Field(default_factory=list, description="from 0% (the fastest) up")


class PointMetrics(BaseModel):
    """One target x workload x client count, over its repetitions."""

    target: str
    workload: str
    clients: int | None = Field(description="client count the matrix asked for")
    ran_clients: list[int] = Field(default_factory=list, description="client counts that actually ran")
    clamped: bool = Field(False, description="a repetition ran with fewer clients than asked (budget clamp)")
    runs: int = Field(0, description="succeeded repetitions")
    failed_runs: int = 0
    error_kinds: list[str] = Field(default_factory=list, description="error kind of each failed repetition")
    tps: float | None = Field(None, description="mean over succeeded repetitions")
    tps_stddev: float | None = Field(None, description="sample stddev over repetitions; None with one")
    tps_runs: list[float] = Field(default_factory=list)
    tps_interval: Interval | None = Field(None, description="mean, stddev, n, 95% t-interval of tps over repetitions")
    p95_interval: Interval | None = Field(None, description="the same for p95 latency (ms), where every run has it")
    p99_interval: Interval | None = Field(None, description="the same for p99 latency (ms), where every run has it")
    qps: float | None = Field(None, description="queries per second (tools that count queries), mean over repetitions")
    latency_ms: Latency = Latency()
    error_rate: float | None = Field(None, description="failed / (processed + failed) transactions")
    retry_rate: float | None = Field(None, description="retried / processed transactions, where the tool reports it")
    stability: Stability = Stability(intervals=0)
    tps_per_usd_hour: float | None = Field(None, description="tps per dollar-hour of the target")
    sustainable_tps: float | None = Field(
        None, description="transactions / (run + replicas' catch-up), mean over runs; None unless every run caught up"
    )
    catch_up_s: float | None = Field(None, description="the slowest replica's catch-up, mean over runs")
    replicated: bool = Field(False, description="the target has replicas whose catch-up was timed")
    peak_lag_bytes: int | None = Field(None, description="the largest replica lag sampled during the runs")
    rate_not_sustained: bool = Field(False, description="a run fell short of its --rate: latency is not ranked here")
    stalled: bool = Field(False, description="a run stalled (no transactions, or under 10% of its median): not ranked")
    client_saturated: bool = Field(False, description="a run's load generator used 90%+ of its CPU: not ranked")
    warmup_s: int | None = Field(None, description="the runs' first seconds, left out of every figure")
    slo: str | None = Field(None, description="the latency objective searched, e.g. 'p99 <= 50 ms'")
    slo_tps: float | None = Field(
        None, description="tps at the SLO (pgarena.analysis.slo), mean over runs; None unless every run's search finished"
    )
    slo_tps_interval: Interval | None = Field(None, description="mean, stddev, n, 95% t-interval of tps at SLO")
    nopm: float | None = Field(None, description="new orders per minute (TPROC-C), mean over runs; None unless every run has it")
    nopm_interval: Interval | None = Field(None, description="mean, stddev, n, 95% t-interval of NOPM over repetitions")
    tpm: float | None = Field(None, description="transactions per minute (TPROC-C), mean over runs")
    rollbacks: int | None = Field(None, description="transactions rolled back by design (TPROC-C's New-Orders), over all runs")
    transaction_types: list[TypeLatency] = Field(
        default_factory=list, description="per transaction type of a mix: its count and latency percentiles, over the runs"
    )
    consistency: Literal["passed", "failed", "not checked"] | None = Field(
        None,
        description="the runs' data checks (TPROC-C's consistency conditions): passed in every run, failed in one "
        "(its incident consistency_failed), or not checked in one; None for a workload without checks",
    )
    merged_latency: PointLatency | None = Field(
        None,
        description="latency over time and its distribution from every run's histograms merged; None unless every "
        "run kept them (the transaction log's tools)",
    )

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.workload, self.clients)

    @property
    def tps_cv(self) -> float:
        """Run-to-run relative noise of tps; 0 when there is a single repetition."""
        if self.tps_stddev is None or not self.tps:
            return 0.0
        return self.tps_stddev / self.tps

    @property
    def stats(self) -> PointStats:
        return PointStats(
            workload=self.workload,
            clients=self.clients,
            n=self.runs,
            tps=self.tps_interval,
            p95_ms=self.p95_interval,
            p99_ms=self.p99_interval,
            nopm=self.nopm_interval,
        )

    @property
    def complete(self) -> bool:
        """Comparable with other targets: every repetition succeeded, none was clamped, stalled or paced by its client."""
        return (
            self.tps is not None and self.failed_runs == 0 and not self.clamped and not self.stalled and not self.client_saturated
        )


class ScalingPoint(BaseModel):
    clients: int
    tps: float
    ideal_tps: float = Field(description="first point's tps x clients / first point's clients")
    efficiency: float = Field(description="measured / ideal")
    usl_tps: float | None = Field(None, description="what the USL fit predicts at this client count")


class Scaling(BaseModel):
    target: str
    workload: str
    points: list[ScalingPoint]
    usl: UslFit | None = None


class Finding(BaseModel):
    """Something that went wrong, with where it happened and the files that show it."""

    target: str
    source: Literal["target", "load", "run", "stability", "connections", "server"]
    kind: str
    message: str
    workload: str | None = None
    clients: int | None = None
    repetition: int | None = None
    at_s: float | None = None
    raw: list[str] = Field(default_factory=list, description="paths relative to the campaign folder")


class TargetMetrics(BaseModel):
    target: str
    provider: str
    status: str
    hourly_cost_usd: float | None = None
    load_s: dict[str, float] = Field(default_factory=dict, description="workload -> init (load) seconds")
    points: list[PointMetrics] = Field(default_factory=list)
    scaling: list[Scaling] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
