"""Open-loop runs (pgbench --rate): was the asked rate delivered? Pure.

A run that falls behind its schedule measures a queue, not the server: its latencies include the
time transactions waited to start. Such a run is flagged `rate_not_sustained` and its latency is
not ranked (analysis.ranking). pgbench schedules --rate as Poisson arrivals, so a run that kept its
schedule delivers rate x window transactions give or take sqrt(rate x window): a shortfall counts
only when it is beyond that noise (a one-sided test of the delivered and skipped transactions
against rate x window, at RATE_ALPHA) and beyond SUSTAINED_FRACTION of the rate (with no counts,
the fraction alone). A run with --latency-limit keeps its schedule by skipping the transactions
already late when their turn came (a `transactions_skipped` incident); past SKIPPED_SHARE of the
schedule skipped, it has not sustained its rate either: its latency, measured on the few that ran,
would rank a target that skips more as faster.
"""

from __future__ import annotations

import math
from statistics import NormalDist, median

from pgarena.model.monitor import Incident
from pgarena.model.results import ProgressSample

RATE_NOT_SUSTAINED = "rate_not_sustained"
TRANSACTIONS_SKIPPED = "transactions_skipped"
# Delivered below this fraction of the asked rate, and below it beyond Poisson noise: the rate was not met.
SUSTAINED_FRACTION = 0.95
# The one-sided level of the Poisson test: a run that kept its schedule is flagged this often at most.
RATE_ALPHA = 0.001
# Skipped (--latency-limit) more than this share of the schedule: the rate was not sustained.
SKIPPED_SHARE = 0.05
# Schedule lag "grows" when the last third of the run's intervals lags the first third by more than
# this many ms and by more than this ratio: a met rate keeps a bounded, jittery lag; a missed one
# builds a backlog that grows for as long as the run lasts.
LAG_GROWTH_MS = 10.0
LAG_GROWTH_RATIO = 2.0
# Fewer lag samples than this cannot show a trend.
LAG_MIN_SAMPLES = 3


def lag_trend(progress: list[ProgressSample]) -> tuple[float, float] | None:
    """Median schedule lag (ms) over the first and the last third of the progress intervals."""
    lags = [p.lag_ms for p in progress if p.lag_ms is not None]
    if len(lags) < LAG_MIN_SAMPLES:
        return None
    third = len(lags) // 3
    return median(lags[:third]), median(lags[-third:])


def lag_grows(progress: list[ProgressSample]) -> bool | None:
    """The schedule lag built a backlog over the run; None when too few lag samples show a trend."""
    trend = lag_trend(progress)
    if trend is None:
        return None
    first, last = trend
    return last - first > LAG_GROWTH_MS and last > LAG_GROWTH_RATIO * first


def scheduled_tps(tps: float, transactions: int | None, skipped: int | None) -> float:
    """The rate the run kept its schedule at: the transactions it delivered and those it skipped, over
    the same time (pgbench skips a transaction at its scheduled start, so the schedule reached it)."""
    if not skipped or not transactions:
        return tps
    return tps * (transactions + skipped) / transactions


def skipped_share(transactions: int | None, skipped: int | None) -> float | None:
    """The share of the scheduled transactions pgbench skipped (--latency-limit); None when unknown."""
    if skipped is None or transactions is None or transactions + skipped == 0:
        return None
    return skipped / (transactions + skipped)


def beyond_poisson_noise(rate_tps: float, tps: float, transactions: int | None, skipped: int | None) -> bool:
    """Are the delivered and skipped transactions fewer than the Poisson schedule of rate x window would give,
    at RATE_ALPHA (normal approximation, continuity corrected)? True without counts (the fraction alone)."""
    if not transactions or tps <= 0:
        return True
    expected = rate_tps * transactions / tps  # the window is transactions / tps
    observed = transactions + (skipped or 0)
    return NormalDist().cdf((observed + 0.5 - expected) / math.sqrt(expected)) < RATE_ALPHA


def rate_incident(
    rate_tps: float | None,
    tps: float | None,
    progress: list[ProgressSample],
    transactions: int | None = None,
    skipped: int | None = None,
) -> Incident | None:
    """A `rate_not_sustained` incident when a run with a rate did not keep its schedule: its delivered
    and skipped transactions came under 95% of the rate beyond Poisson noise, it skipped more than
    SKIPPED_SHARE of its schedule, or it fell further and further behind; None for a kept schedule, or
    a run without a rate."""
    if rate_tps is None or tps is None:
        return None
    reasons = []
    kept = scheduled_tps(tps, transactions, skipped)
    if kept < SUSTAINED_FRACTION * rate_tps and beyond_poisson_noise(rate_tps, tps, transactions, skipped):
        with_skipped = f" ({kept:,.1f} with the {skipped:,} skipped)" if kept != tps else ""
        reasons.append(f"delivered {tps:,.1f} tps{with_skipped}, {kept / rate_tps:.0%} of the {rate_tps:,.0f} tps asked")
    share = skipped_share(transactions, skipped)
    if share is not None and share > SKIPPED_SHARE:
        reasons.append(f"skipped {share:.1%} of the schedule (over {SKIPPED_SHARE:.0%}, --latency-limit)")
    trend = lag_trend(progress)
    if trend is not None and lag_grows(progress):
        first, last = trend
        reasons.append(f"schedule lag grew from {first:,.1f} ms to {last:,.1f} ms")
    if not reasons:
        return None
    at_s = progress[-1].elapsed_s if progress else 0.0
    return Incident(
        kind=RATE_NOT_SUSTAINED,
        at_s=at_s,
        message=f"rate {rate_tps:,.0f} tps not sustained: {'; '.join(reasons)}; latency not ranked",
    )


def skipped_incident(transactions: int | None, skipped: int | None, at_s: float) -> Incident | None:
    """A `transactions_skipped` incident when --latency-limit skipped transactions: their count and share
    of the scheduled ones; None when none was skipped (or the counts are unknown)."""
    if not skipped or transactions is None:
        return None
    share = skipped / (transactions + skipped)
    return Incident(
        kind=TRANSACTIONS_SKIPPED,
        at_s=at_s,
        message=f"{skipped:,} transactions skipped ({share:.1%} of the {transactions + skipped:,} scheduled): "
        "already later than the latency limit when their turn came, never run; tps counts only those run",
    )
