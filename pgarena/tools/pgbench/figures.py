"""pgbench's own figures (results.json's `tool_figures` of a pgbench run): its summary's, as printed, and the
per-transaction log's; the ones analysis reads (retried, skipped, above the latency limit, the window)
are declared on the shared base."""

from __future__ import annotations

from pydantic import Field

from pgarena.model.tool_figures import ToolFigures


class PgbenchFigures(ToolFigures):
    lag_avg_ms: float | None = Field(None, description="schedule lag, average over the run, as pgbench printed it (--rate)")
    lag_max_ms: float | None = Field(None, description="schedule lag, maximum over the run, as pgbench printed it (--rate)")
    retries: int | None = Field(None, description="retries in all, as pgbench printed it (--max-tries)")
    logged_transactions: int | None = Field(None, description="transactions done in the per-transaction log (measured)")
    logged_failed: int | None = Field(None, description="failed transactions in the per-transaction log (measured)")
    logged_skipped: int | None = Field(None, description="skipped transactions in the per-transaction log (measured)")
    # With a warm-up, pgbench's whole-run figures (the run's tps and counts are the window's).
    run_tps: float | None = Field(None, description="pgbench's tps over the whole run, warm-up included")
    run_transactions: int | None = Field(None, description="pgbench's transactions over the whole run, warm-up included")
    run_skipped_transactions: int | None = Field(None, description="pgbench's skipped transactions over the whole run")
    run_above_latency_limit: int | None = Field(
        None, description="pgbench's transactions above --latency-limit over the whole run (the window's: above_latency_limit)"
    )
    warmup_transactions: int | None = Field(None, description="logged transactions that ended in the warm-up")
    window_start_epoch: float | None = Field(None, description="when the measured window began (Unix time)")
