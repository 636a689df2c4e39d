"""Preflight Target: live server facts and the connection budget, before any benchmark connection."""

import boto3
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.leases import LeaseStore
from pgarena.plan import PlannedTarget
from pgarena.preflight import preflight
from pgarena.settings import ResultsEnv


class PreflightEvent(BaseModel):
    campaign_id: str
    target: PlannedTarget


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=PreflightEvent)
def handler(event: PreflightEvent, context: LambdaContext) -> dict:
    leases = LeaseStore(boto3.client("dynamodb"), ResultsEnv.from_env().results_table)
    result = preflight(event.target, event.campaign_id, leases)
    logger.info(
        "preflight passed",
        target=event.target.name,
        max_connections=result.server.max_connections,
        allowed=result.server.allowed,
        binding=result.server.budget.binding,
        clamped=result.server.clamped,
    )
    return result.model_dump(mode="json")
