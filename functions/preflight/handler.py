"""Preflight Target: live server facts and the connection budget, before any benchmark connection, for a
target preflighted at home (one on a site is preflighted by a worker there: pgarena.worker.preflight)."""

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import ResultsEnv
from pgarena.campaign.preflight import preflight
from pgarena.model.plan import TargetRef
from pgarena.model.results import PreflightOrigin


class PreflightEvent(TargetRef):
    """One target of one phase (Preflight Target's payload)."""


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=PreflightEvent)
def handler(event: PreflightEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(ResultsEnv)
    origin = PreflightOrigin(site=deps.env.region, runner="function")
    preflighted = preflight(event, deps.store, deps.records, deps.leases, origin)
    ref, server = preflighted.ref, preflighted.server
    logger.info(
        "preflight passed",
        target=ref.name,
        max_connections=server.max_connections,
        allowed=server.allowed,
        binding=server.budget.binding,
        clamped=server.clamped,
    )
    return ref.model_dump(mode="json")
