"""TPROC-C's figures from the per-transaction log's scripts: NOPM, TPM, rollbacks and each transaction
type's counts and latency percentiles (docs/guide/03-measurements.md#tproc-c). Pure.

The window is the log's measured one: from the warm-up's end (or the first logged transaction's start) to
the last logged transaction's end; every count is of transactions that ended inside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pgarena.analysis.latency import encode, percentiles_of
from pgarena.model.tool_figures import ConsistencyCheck, TransactionType
from pgarena.tools.pgbench.tpcc.kit import NEW_ORDER, TRANSACTIONS, check_consistency
from pgarena.tools.pgbench.txlog import ScriptLog

# The New-Orders that TPC-C rolls back on purpose (1%: an unused item id): the script ends with ROLLBACK,
# no error. They are New-Order transactions, but no order is created: NOPM leaves them out, TPM counts them.
ROLLED_BACK_BY_DESIGN = frozenset({"new_order_rollback"})
SCRIPTS = len(TRANSACTIONS)


@dataclass(frozen=True)
class OrderEntry:
    nopm: float
    tpm: float
    rollbacks: int
    window_s: float
    transaction_types: list[TransactionType]


def consistency(conn: Any) -> list[ConsistencyCheck]:
    """The kit's consistency conditions as results.json records them."""
    return [ConsistencyCheck(name=c.name, passed=c.passed, detail=c.detail) for c in check_consistency(conn)]


def transaction_types(scripts: list[ScriptLog]) -> list[TransactionType]:
    """The kit's transactions in its order (the log's script number is the index), with what each did."""
    return [
        TransactionType(
            name=transaction.name,
            done=log.histogram.get_total_count(),
            failed=log.not_done,
            rolled_back=transaction.name in ROLLED_BACK_BY_DESIGN,
            latency_ms=percentiles_of(log.histogram),
            histogram=encode(log.histogram) if log.histogram.get_total_count() else None,
        )
        for transaction, log in zip(TRANSACTIONS, scripts, strict=True)
    ]


def order_entry(scripts: list[ScriptLog], window_s: float) -> OrderEntry | None:
    """NOPM (committed New-Orders per minute) and TPM (every completed transaction per minute) over a window
    of window_s seconds; None for a window of no length (nothing was logged)."""
    if window_s <= 0:
        return None
    types = transaction_types(scripts)
    minutes = window_s / 60
    return OrderEntry(
        nopm=round(types[NEW_ORDER].done / minutes, 3),
        tpm=round(sum(t.done for t in types) / minutes, 3),
        rollbacks=sum(t.done for t in types if t.rolled_back),
        window_s=round(window_s, 6),
        transaction_types=types,
    )
