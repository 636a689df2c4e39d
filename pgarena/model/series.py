"""A sharded run's per-second latency histograms, as one shard writes them for the merge."""

from __future__ import annotations

import base64
import zlib
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import accumulate
from typing import Generic, TypeVar

from pydantic import BaseModel, Field

from pgarena.model.figures import Latency
from pgarena.model.metrics import IntervalHistogram
from pgarena.model.results import ProgressSample


class SecondBucket(BaseModel):
    """Transactions that completed in one wall-clock second [t, t+1)."""

    t: int
    count: int
    failed: int = 0
    hist: str = Field(description="HdrHistogram of their latencies (us), encoded")


def _packed(values: Sequence[int]) -> str:
    """int64s, zlib-compressed, base64 (about 5 bytes a transaction): a busy shard's edge seconds hold
    100,000s of transactions, and the aggregation reads every shard's series at once."""
    return base64.b64encode(zlib.compress(array("q", values).tobytes())).decode()


def _deltas(ordered: Sequence[int]) -> list[int]:
    """Sorted values as their differences: small numbers, which compress better."""
    return [b - a for a, b in zip([0, *ordered], ordered)]


def _unpacked(text: str) -> list[int]:
    return array("q", zlib.decompress(base64.b64decode(text))).tolist() if text else []


class EdgeSecond(BaseModel):
    """One of a shard's first or last seconds, transaction by transaction: where the shards' common span
    starts or ends inside a second, the merge counts exactly the transactions that ended within it."""

    t: int
    ends: str = Field(
        description="when each transaction done in the second ended, microseconds into it, sorted (packed differences)"
    )
    latencies: str = Field(description="their latencies in microseconds, in the same order (packed)")
    not_done: str = Field(
        "", description="when each failed or skipped one ended, microseconds into the second (packed differences)"
    )

    @classmethod
    def of(cls, t: int, ends_us: Sequence[int], latencies_us: Sequence[int], not_done_us: Sequence[int] = ()) -> EdgeSecond:
        return cls(t=t, ends=_packed(_deltas(ends_us)), latencies=_packed(latencies_us), not_done=_packed(_deltas(not_done_us)))

    def ends_us(self) -> list[int]:
        return list(accumulate(_unpacked(self.ends)))

    def latencies_us(self) -> list[int]:
        return _unpacked(self.latencies)

    def not_done_us(self) -> list[int]:
        return list(accumulate(_unpacked(self.not_done)))


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
    histogram: str = Field(description="every counted transaction's latency (us): what `latency` was read from, encoded")
    intervals: tuple[IntervalHistogram, ...] = Field((), description="the latency intervals merge was asked for")
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
