"""A tool's own figures, beside the ones every run has (tps, latency, transactions): the step summary's
and results.json's `tool_figures`.

The figures that analysis and the worker read are declared here, shared by every tool, so nothing outside
a tool's package reads a figure by name; each tool's package declares the rest on its subclass
(pgarena.tools.<tool>.figures), which its Tool fills in. Read back from JSON without the tool's package,
a tool's own fields are kept as extra fields (`model_extra`); `<Subclass>.of(figures)` reads them typed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from pgarena.model.figures import Latency


class TransactionType(BaseModel):
    """One transaction type of a mix (a script of pgbench's weighted mix), over the measured window."""

    name: str = Field(description="the type's name, e.g. new_order")
    done: int = Field(description="transactions of this type completed in the window (a rolled-back one included)")
    failed: int = Field(0, description="transactions of this type that failed (an error, not a rollback by design)")
    rolled_back: bool = Field(
        False,
        description="every one ends with ROLLBACK by design (TPC-C's 1% of New-Orders with an unused item): counted "
        "as rollbacks, not as errors",
    )
    latency_ms: Latency = Field(default_factory=Latency, description="p50, p95, p99 and max from its histogram")
    histogram: str | None = Field(None, description="HdrHistogram of its latencies (us), encoded: shards merge it")


# A workload's consistency conditions, as a function of an open connection (DB-API) to the target.
DataChecks = Callable[[Any], list["ConsistencyCheck"]]


class ConsistencyCheck(BaseModel):
    """A condition the workload's data set must meet after the run (TPC-C's consistency conditions)."""

    name: str
    passed: bool
    detail: str = ""


class ToolFigures(BaseModel):
    # extra="allow": a tool's own figures survive a round trip through a summary or results.json,
    # read by code that only knows this base.
    model_config = ConfigDict(extra="allow")

    qps: float | None = Field(None, description="queries per second, where the tool counts queries apart from transactions")
    # pgbench's count (--max-tries).
    retried: int | None = Field(None, description="transactions retried after a serialization failure or a deadlock")
    # sysbench's count: each ignored error restarts the transaction it hit.
    ignored_errors: int | None = Field(None, description="errors ignored, each restarting its transaction")
    skipped_transactions: int | None = Field(
        None,
        description="transactions skipped for starting later than the latency limit allows (a rate with a latency "
        "limit); the measured window's when a warm-up was left out",
    )
    above_latency_limit: int | None = Field(None, description="transactions that finished later than the latency limit")
    scale: int | None = Field(
        None, description="the data set's scale the run found (its scaling factor: one branch row per unit)"
    )
    window_s: float | None = Field(
        None, description="the measured window's length, when a warm-up was left out (None: the whole run is measured)"
    )
    # An order-entry mix's (TPROC-C: docs/guide/03-measurements.md#tproc-c): NOPM and TPM.
    new_orders_per_minute: float | None = Field(
        None, description="new orders committed per minute: completed New-Order transactions (not the rolled-back) in the window"
    )
    transactions_per_minute: float | None = Field(
        None, description="transactions per minute: every completed transaction of every type in the window, rollbacks included"
    )
    rollbacks: int | None = Field(None, description="transactions ended with ROLLBACK by design (not errors), in the window")
    mix_window_s: float | None = Field(
        None,
        description="the window NOPM and TPM count over (s): from the warm-up's end, or the first logged transaction's "
        "start, to the last one's end (a sharded run's: None, each shard's own)",
    )
    transaction_types: list[TransactionType] | None = Field(None, description="per transaction type: counts and latency")
    consistency: list[ConsistencyCheck] | None = Field(
        None, description="the data set's consistency conditions, checked after the run by its first worker"
    )

    @model_serializer(mode="wrap")
    def _reported_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A figure the tool did not report is left out, not written as null."""
        return {name: value for name, value in handler(self).items() if value is not None}

    @classmethod
    def of(cls, figures: ToolFigures) -> Self:
        """`figures` as this tool's model: its own fields typed (they are extra fields when read back as the base)."""
        return figures if isinstance(figures, cls) else cls.model_validate(figures.model_dump())
