"""sysbench's own figures (results.json's `tool_figures` of a sysbench run), as its summary printed them;
the ones analysis reads (qps, ignored errors) are declared on the shared base."""

from __future__ import annotations

from pydantic import Field

from pgarena.model.tool_figures import ToolFigures


class SysbenchFigures(ToolFigures):
    queries_read: int | None = None
    queries_write: int | None = None
    queries_other: int | None = None
    reconnects: int | None = None
    latency_min_ms: float | None = None
    percentile: float | None = Field(None, description="the percentile sysbench printed (--percentile)")
    latency_pct_ms: float | None = Field(None, description="the latency at that percentile")
