"""A sharded run's per-second latency histograms, as one shard writes them for the merge."""

from __future__ import annotations

from pydantic import BaseModel, Field

from pgarena.model.figures import Latency
from pgarena.model.results import ProgressSample


class SecondBucket(BaseModel):
    """Transactions that completed in one wall-clock second [t, t+1)."""

    t: int
    count: int
    failed: int = 0
    hist: str = Field(description="HdrHistogram of their latencies (us), encoded")


class ShardSeries(BaseModel):
    """One worker's measured window and per-second latency histograms, from its per-transaction log."""

    start_epoch: float = Field(description="when its first logged transaction began")
    end_epoch: float = Field(description="when its last logged transaction completed")
    seconds: list[SecondBucket]


class MergedRun(BaseModel):
    """What the shards of a run measured together, over the window all of them ran (analysis.merge)."""

    start_skew_s: float
    window_start_epoch: float
    window_end_epoch: float
    window_s: int
    tps: float
    transactions: int
    failed_transactions: int
    latency: Latency
    progress: list[ProgressSample]
    shard_tps: list[float]
