"""The measured window: a run's first `warmup_s` seconds are left out of every figure. Pure.

The window starts `warmup_s` after the run's first logged transaction began and ends with its last
logged transaction. It is applied once, in the worker, as the per-transaction log is read
(pgarena.tools.pgbench.txlog: histograms, per-second series, counts) and to pgbench's progress
intervals here; tps, percentiles and stability are then computed from what is left, for single
and sharded runs alike.
"""

from __future__ import annotations

from pgarena.model.results import ProgressSample

# pgbench prints progress times to 0.1 s: an interval ending exactly at the warm-up's end is kept.
_PRINTED_S = 0.05


def measured_progress(progress: list[ProgressSample], warmup_s: float, interval_s: float) -> list[ProgressSample]:
    """The progress intervals wholly inside the window: the one printed at elapsed e covers (e - interval_s, e]."""
    if warmup_s <= 0:
        return progress
    return [p for p in progress if p.elapsed_s - interval_s >= warmup_s - _PRINTED_S]


def window_tps(transactions: int, since_epoch: float, end_epoch: float) -> float | None:
    """Transactions that ended in the window per second of it; None for an empty window."""
    window_s = end_epoch - since_epoch
    return transactions / window_s if window_s > 0 and transactions > 0 else None
