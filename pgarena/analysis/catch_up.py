"""Replication figures from catch-up measurements: sustainable throughput and peaks. Pure."""

from __future__ import annotations

from pgarena.model.replication import LagSample, ReplicaCatchUp, ReplicationResult


def lsn_to_int(lsn: str) -> int:
    """'16/B374D848' -> a byte position; two positions' difference is the WAL between them in bytes."""
    high, _, low = lsn.partition("/")
    if not low:
        raise ValueError(f"not a WAL position: {lsn!r}")
    return (int(high, 16) << 32) + int(low, 16)


def sustainable_tps(transactions: float, run_s: float, catch_up_s: float) -> float:
    """Transactions executed / (run time + catch-up time): what the primary and its replicas sustain.

    10,000 tps for 30 min with 15 min of catch-up: 18,000,000 / 2,700 s = 6,666.7 tps.
    """
    if run_s <= 0 or catch_up_s < 0:
        raise ValueError("the run time must be > 0 and the catch-up time >= 0")
    return transactions / (run_s + catch_up_s)


def run_seconds(duration_s: float | None, transactions: int | None, tps: float | None) -> float | None:
    """The measured run's length: its fixed duration (-T), else transactions / tps (-t runs)."""
    if duration_s:
        return float(duration_s)
    if transactions and tps:
        return transactions / tps
    return None


def replication_result(
    replicas: list[ReplicaCatchUp], transactions: int | None, run_s: float | None, raw: str | None = None
) -> ReplicationResult:
    """The run's figures: the slowest replica bounds what the pair sustains."""
    replicas = [r.model_copy(update={"lag_series": raw}) for r in replicas]
    caught_up = bool(replicas) and all(r.caught_up for r in replicas)
    catch_ups = [r.catch_up_s for r in replicas if r.catch_up_s is not None]
    catch_up = max(catch_ups) if caught_up and catch_ups else None
    sustainable = None
    if catch_up is not None and transactions is not None and run_s:
        sustainable = sustainable_tps(transactions, run_s, catch_up)
    return ReplicationResult(
        replicas=replicas,
        run_s=run_s,
        transactions=transactions,
        catch_up_s=catch_up,
        caught_up=caught_up,
        sustainable_tps=sustainable,
        raw=raw,
    )


def peaks(samples: list[LagSample], replica: str) -> tuple[int | None, float | None]:
    mine = [s for s in samples if s.replica == replica]
    lag_bytes = [s.lag_bytes for s in mine if s.lag_bytes is not None]
    lag_s = [s.lag_s for s in mine if s.lag_s is not None]
    return (max(lag_bytes) if lag_bytes else None), (max(lag_s) if lag_s else None)
