"""Validate And Plan: check the matrix and the campaign id before anything touches a database, then plan the steps."""

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import SitesEnv
from pgarena.campaign.claim import claim_and_plan
from pgarena.model.plan import PlanRef


class ValidateEvent(BaseModel):
    input: Any  # the execution's input: a bare matrix, or {"campaign_id", "matrix"}
    execution_name: str  # $$.Execution.Name: the campaign id when the input gives none


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=ValidateEvent)
def handler(event: ValidateEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(SitesEnv)
    plan = claim_and_plan(event.input, event.execution_name, deps.store, deps.records, deps.env.sites)
    logger.info("campaign planned", campaign_id=plan.campaign_id, targets=len(plan.targets), phases=len(plan.phases))
    return PlanRef.of(plan, deps.env.sites).model_dump(mode="json")
