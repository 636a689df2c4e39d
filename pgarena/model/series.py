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


class EdgeSecond(BaseModel):
    """One of a shard's first or last seconds, transaction by transaction: where the shards' common span
    starts or ends inside a second, the merge counts exactly the transactions that ended within it."""

    t: int
    ends_us: list[int] = Field(description="when each transaction done in the second ended, microseconds into it, sorted")
    latencies_us: list[int] = Field(description="their latencies, in the same order")
    not_done_us: list[int] = Field(default_factory=list, description="when each failed or skipped one ended, sorted")


class ShardSeries(BaseModel):
    """One worker's measured window and per-second latency histograms, from its per-transaction log."""

    start_epoch: float = Field(description="when its first logged transaction began")
    end_epoch: float = Field(description="when its last logged transaction completed")
    seconds: list[SecondBucket]
    edges: list[EdgeSecond] = Field(default_factory=list, description="its first and last seconds, transaction by transaction")


class MergedRun(BaseModel):
    """What the shards of a run measured together, over the window all of them ran (analysis.merge)."""

    start_skew_s: float
    window_start_epoch: float = Field(description="the latest shard's first transaction start")
    window_end_epoch: float = Field(description="the earliest shard's last transaction end")
    window_s: float = Field(description="window_end_epoch - window_start_epoch")
    tps: float
    transactions: int
    failed_transactions: int
    latency: Latency
    progress: list[ProgressSample]
    shard_tps: list[float]
