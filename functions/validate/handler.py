"""Validate And Plan: check the matrix before anything touches a database, then plan the steps."""

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from functions.observability import logger, tracer
from pgarena.model.errors import InvalidMatrix
from pgarena.model.matrix import CAMPAIGN_ID_PATTERN, MatrixError, parse_campaign
from pgarena.planning.plan import plan_campaign


class ValidateEvent(BaseModel):
    campaign_id: str = Field(pattern=CAMPAIGN_ID_PATTERN)
    matrix: dict


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=ValidateEvent)
def handler(event: ValidateEvent, context: LambdaContext) -> dict:
    try:
        campaign = parse_campaign(event.matrix)
    except MatrixError as error:
        raise InvalidMatrix(str(error)) from None
    plan = plan_campaign(campaign, event.campaign_id)
    logger.info("campaign planned", campaign_id=plan.campaign_id, targets=len(plan.targets))
    return plan.model_dump(mode="json")
