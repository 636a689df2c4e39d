"""Preflight Target: live server facts and the connection budget, before any benchmark connection, for a
target preflighted at home (one on a site is preflighted by a worker there: pgarena.worker.preflight).
Check Targets calls it too (payload `"check": "targets"`): every home target logged into before any
target's load starts (pgarena.campaign.check_targets)."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import ResultsEnv
from pgarena.campaign.check_targets import CheckTargetsEvent, check_targets
from pgarena.campaign.preflight import preflight
from pgarena.model.plan import TargetRef
from pgarena.model.results import PreflightOrigin

# The key Check Targets' payload has and a preflight's has not: one function (in the VPC, reading the
# targets' secrets) serves both states.
CHECK_KEY = "check"


class PreflightEvent(TargetRef):
    """One target of one phase (Preflight Target's payload)."""


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: Any, context: LambdaContext) -> dict[str, Any]:
    if isinstance(event, dict) and CHECK_KEY in event:
        return _check({k: v for k, v in event.items() if k != CHECK_KEY})
    return _preflight(PreflightEvent.model_validate(event))


def _check(event: dict[str, Any]) -> dict[str, Any]:
    deps = Dependencies.of(ResultsEnv)
    checked = check_targets(CheckTargetsEvent.model_validate(event), deps.records)
    logger.info("targets checked", checked=checked.checked, left_to_preflight=list(checked.left_to_preflight))
    return checked.model_dump(mode="json")


def _preflight(event: PreflightEvent) -> dict[str, Any]:
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
