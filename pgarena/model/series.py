"""A sharded run's per-second latency histograms, as one shard writes them for the merge."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from pydantic import BaseModel, Field

from pgarena.model.results import Latency, ProgressSample


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


Location = TypeVar("Location")  # where a series is: a bucket key, a file's path


class SeriesOnDemand(Mapping[str, ShardSeries], Generic[Location]):
    """Each shard's series by step id, read only when the merge asks for it and never kept: aggregation
    holds one step's shards at a time (at most MAX_STARTED_TOGETHER), never every shard of the campaign."""

    def __init__(self, locations: Mapping[str, Location], read: Callable[[Location], ShardSeries]):
        self._locations = dict(locations)  # step id -> where its series is (a bucket key, a file)
        self._read = read

    def __getitem__(self, step_id: str) -> ShardSeries:
        return self._read(self._locations[step_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._locations)

    def __len__(self) -> int:
        return len(self._locations)
