"""A tool's own figures, beside the ones every run has (tps, latency, transactions): the step summary's
and results.json's `tool_figures`.

The figures that analysis and the worker read are declared here, shared by every tool, so nothing outside
a tool's package reads a figure by name; each tool's package declares the rest on its subclass
(pgarena.tools.<tool>.figures), which its Tool fills in. Read back from JSON without the tool's package,
a tool's own fields are kept as extra fields (`model_extra`); `<Subclass>.of(figures)` reads them typed.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


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

    @model_serializer(mode="wrap")
    def _reported_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A figure the tool did not report is left out, not written as null."""
        return {name: value for name, value in handler(self).items() if value is not None}

    @classmethod
    def of(cls, figures: ToolFigures) -> Self:
        """`figures` as this tool's model: its own fields typed (they are extra fields when read back as the base)."""
        return figures if isinstance(figures, cls) else cls.model_validate(figures.model_dump())
