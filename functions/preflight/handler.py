"""Preflight Target: live server facts and the connection budget, before any benchmark connection."""

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.plan import PlannedTarget
from pgarena.preflight import preflight


class PreflightEvent(BaseModel):
    campaign_id: str
    target: PlannedTarget


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=PreflightEvent)
def handler(event: PreflightEvent, context: LambdaContext) -> dict:
    server = preflight(event.target)
    logger.info("preflight passed", target=event.target.name, max_connections=server.max_connections, budget=server.budget)
    return server.model_dump(mode="json")
