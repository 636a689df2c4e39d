"""A transaction mix's figures (TPROC-C's NOPM, TPM, per-type counts and latency) across a step's shards,
and its data checks' failure as a named incident. Pure.

Shards' rates add up (each shard's over its own measured window), their counts add up, and each type's
percentiles come from its shards' histograms merged, never from averaging the shards' percentiles."""

from __future__ import annotations

from pgarena.analysis.latency import encode, merged, percentiles_of
from pgarena.model.monitor import Incident
from pgarena.model.tool_figures import ConsistencyCheck, ToolFigures, TransactionType

# The incident a failed consistency condition makes (the run's figures stand, but the data set is wrong).
CONSISTENCY_FAILED = "consistency_failed"


def consistency_incident(checks: list[ConsistencyCheck] | None, at_s: float) -> Incident | None:
    """`consistency_failed` when a condition did not hold (or could not be checked), naming each."""
    failed = [c for c in checks or [] if not c.passed]
    if not failed:
        return None
    named = "; ".join(f"{c.name}: {c.detail}" if c.detail else c.name for c in failed)
    return Incident(
        kind=CONSISTENCY_FAILED,
        at_s=at_s,
        message=f"{len(failed)} of {len(checks or [])} consistency condition(s) failed after the run ({named}): "
        "the data set is not what the transactions should have left; its figures are not to be trusted",
    )


def _merged_type(types: list[TransactionType]) -> TransactionType:
    histograms = [t.histogram for t in types if t.histogram is not None]
    histogram = merged(histograms) if histograms else None
    return TransactionType(
        name=types[0].name,
        done=sum(t.done for t in types),
        failed=sum(t.failed for t in types),
        rolled_back=types[0].rolled_back,
        latency_ms=percentiles_of(histogram) if histogram is not None else types[0].latency_ms.model_copy(),
        histogram=encode(histogram) if histogram is not None else None,
    )


def merged_mix(shards: list[ToolFigures]) -> ToolFigures:
    """The shards' mix figures as one run's (only the ones every shard has; the first shard's checks)."""
    consistency = next((s.consistency for s in shards if s.consistency is not None), None)
    if not shards or any(
        s.new_orders_per_minute is None or s.transactions_per_minute is None or not s.transaction_types for s in shards
    ):
        return ToolFigures(consistency=consistency)
    by_type = zip(*(s.transaction_types or [] for s in shards), strict=True)
    return ToolFigures(
        consistency=consistency,
        new_orders_per_minute=round(sum(s.new_orders_per_minute or 0.0 for s in shards), 3),
        transactions_per_minute=round(sum(s.transactions_per_minute or 0.0 for s in shards), 3),
        rollbacks=sum(s.rollbacks or 0 for s in shards),
        transaction_types=[_merged_type(list(types)) for types in by_type],
    )
