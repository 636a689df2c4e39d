"""Throughput at a latency SLO: the highest open-loop rate at which the objective holds. Pure.

The search is bounded and its cost known before it starts: one closed-loop run gives the ceiling
(the most the target delivers with these clients), then `probes` open-loop runs bisect the rate
between 0 and the ceiling's tps. A probe meets the objective when its rate was sustained (>= 95%
delivered, schedule lag not growing: pgarena.analysis.rate) and its p95 or p99 is at or under the
limit; the next probe goes halfway up when it did, halfway down when it did not. tps at SLO is the
tps achieved by the highest-rate probe that met it (resolution: ceiling / 2^probes), 0 when none did.
"""

from __future__ import annotations

from collections.abc import Callable

from pgarena.analysis.rate import lag_grows, rate_incident
from pgarena.model.errors import ErrorInfo
from pgarena.model.figures import Latency
from pgarena.model.results import ProgressSample
from pgarena.model.slo import SloProbe, SloSearch
from pgarena.model.tool_spec import Slo

# pgbench --rate takes fractions; a tenth of a transaction per second is finer than any probe needs.
RATE_DIGITS = 1
MIN_RATE_TPS = 0.1


def probe_result(  # noqa: PLR0913  # a probe's measurements, each a field of the result
    slo: Slo,
    rate_tps: float | None,
    tps: float | None,
    latency: Latency,
    progress: list[ProgressSample],
    raw: list[str],
    error: ErrorInfo | None = None,
) -> SloProbe:
    """One run's point on the curve and its verdict. The closed-loop run (rate None) is never `met`:
    without a schedule its latency does not answer "at what offered load"."""
    base = SloProbe(rate_tps=rate_tps, tps=tps, p95_ms=latency.p95, p99_ms=latency.p99, raw=raw, error=error)
    if error is not None or tps is None or rate_tps is None:
        return base
    sustained = rate_incident(rate_tps, tps, progress) is None
    value = latency.p95 if slo.percentile == 95 else latency.p99
    met = sustained and value is not None and value <= slo.limit_ms
    return base.model_copy(update={"lag_growing": lag_grows(progress), "sustained": sustained, "met": met})


def midpoint(low: float, high: float) -> float:
    return max(MIN_RATE_TPS, round((low + high) / 2, RATE_DIGITS))


def search(slo: Slo, ceiling: SloProbe, run_probe: Callable[[float], SloProbe]) -> SloSearch:
    """Bisect the rate in (0, ceiling tps] with slo.probes open-loop runs; run_probe runs one at a rate."""
    curve = [ceiling]
    if ceiling.error is not None or not ceiling.tps:
        return outcome(slo, curve, note="the closed-loop ceiling run failed: no rate was probed")
    low, high = 0.0, ceiling.tps
    for _ in range(slo.probes):
        rate = midpoint(low, high)
        probe = run_probe(rate)
        curve.append(probe)
        if probe.met:
            low = rate
        else:
            high = rate
    return outcome(slo, curve)


def outcome(slo: Slo, curve: list[SloProbe], note: str | None = None) -> SloSearch:
    """The search's result from its curve: the highest-rate probe that met the objective."""
    ceiling = curve[0] if curve else None
    base = SloSearch(
        percentile=slo.percentile,
        limit_ms=slo.limit_ms,
        probes=slo.probes,
        ceiling_tps=ceiling.tps if ceiling else None,
        curve=curve,
        note=note,
    )
    if note is not None:
        return base
    met = [p for p in curve if p.met and p.rate_tps is not None]
    if not met:
        lowest = min((p.rate_tps for p in curve if p.rate_tps is not None), default=None)
        return base.model_copy(
            update={
                "slo_tps": 0.0,
                "note": f"p{slo.percentile} <= {slo.limit_ms:g} ms held at no probed rate"
                + (f" (the lowest was {lowest:,.1f} tps)" if lowest is not None else ""),
            }
        )
    best = max(met, key=lambda p: p.rate_tps or 0.0)
    return base.model_copy(update={"slo_tps": best.tps, "slo_rate_tps": best.rate_tps})
