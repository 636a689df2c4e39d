"""Figures shared by results.json and the metrics computed from it: latency, intervals, the USL."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Latency(BaseModel):
    """Milliseconds. avg/stddev as the tool printed them; percentiles from an HdrHistogram of every
    transaction's latency (pgbench --log) or as the tool printed them (sysbench --percentile)."""

    avg: float | None = None
    stddev: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


class Interval(BaseModel):
    """One figure over a point's repetitions: mean, sample stddev, n and its 95% t-interval
    (pgarena.analysis.intervals). stddev and the interval are None with one run: no noise was measured."""

    n: int
    mean: float
    stddev: float | None = None
    ci95_low: float | None = None
    ci95_high: float | None = None

    @property
    def half_width(self) -> float | None:
        return None if self.ci95_low is None or self.ci95_high is None else (self.ci95_high - self.ci95_low) / 2


class PointStats(BaseModel):
    """One workload x client count of a target over its succeeded repetitions."""

    workload: str
    clients: int | None
    n: int = Field(description="succeeded repetitions the figures are over")
    tps: Interval | None = None
    p95_ms: Interval | None = None
    p99_ms: Interval | None = None
    nopm: Interval | None = Field(None, description="new orders per minute (TPROC-C), where the workload has them")


# A fit whose worst point is off by more than this describes the data poorly (e.g. a collapse).
USL_GOOD_FIT_ERROR = 0.25


def usl(n: float, lambda_tps: float, sigma: float, kappa: float) -> float:
    """X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1)) (Gunther's Universal Scalability Law)."""
    return lambda_tps * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


class UslFit(BaseModel):
    """A Universal Scalability Law fit. N is the clients of a client sweep (the report's scaling curves) or
    the targets running at once in a consolidation sweep (results.json's consolidation tables)."""

    # results.json named the peak for the consolidation tables, the only fits it carries: the key stays.
    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)

    lambda_tps: float = Field(description="throughput at N = 1 without contention")
    sigma: float = Field(description="contention (serial fraction); negative means superlinear")
    kappa: float = Field(description="coherency (crosstalk) cost; > 0 means throughput peaks then falls")
    peak_n: float | None = Field(
        None, alias="peak_targets", description="sqrt((1 - sigma) / kappa); None when kappa = 0 or the curve has no peak"
    )
    peak_tps: float | None = None
    max_error: float = Field(description="largest relative error of the fit over the measured points")
    points: int = Field(description="N values fitted; with three, three parameters fit them exactly")

    @property
    def good(self) -> bool:
        return self.max_error <= USL_GOOD_FIT_ERROR

    def predict(self, n: float) -> float:
        return usl(n, self.lambda_tps, self.sigma, self.kappa)
