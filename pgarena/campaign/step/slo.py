"""A step's SLO search (pgarena.analysis.slo) in the worker: the step's own run is its closed-loop
ceiling, then its open-loop probes run one after the other."""

from __future__ import annotations

from collections.abc import Callable

from aws_lambda_powertools import Logger

from pgarena.analysis.slo import probe_result, search
from pgarena.model.plan import Step
from pgarena.model.results import StepSummary
from pgarena.model.slo import SloProbe

logger = Logger(service="pgarena-worker")


def slo_search(step: Step, ceiling: StepSummary, run_probe: Callable[[float, int], SloProbe]) -> StepSummary:
    """`ceiling` with its search: `run_probe(rate, n)` runs the n-th probe at rate (heartbeats go on), each
    kept under probe-<n>/."""
    slo = step.spec.slo
    assert slo is not None  # tool_runs > 1
    ceiling_point = probe_result(slo, None, ceiling.tps, ceiling.latency_ms, ceiling.progress, ceiling.raw, ceiling.error)
    count = iter(range(1, slo.probes + 1))
    found = search(slo, ceiling_point, lambda rate: run_probe(rate, next(count)))
    logger.info("slo search finished", step_id=step.step_id, slo_tps=found.slo_tps, probes=len(found.curve) - 1)
    return ceiling.model_copy(update={"slo": found, "raw": [*ceiling.raw, *(k for p in found.curve[1:] for k in p.raw)]})
