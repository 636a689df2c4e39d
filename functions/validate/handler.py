"""Validate And Plan: check the matrix and the campaign id before anything touches a database, then plan the steps."""

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.aws.settings import ResultsEnv
from pgarena.aws.store import ResultStore
from pgarena.model.errors import CampaignExists, InvalidMatrix
from pgarena.model.execution import execution_request
from pgarena.model.matrix import MatrixError, parse_campaign
from pgarena.planning.plan import plan_campaign


class ValidateEvent(BaseModel):
    input: Any  # the execution's input: a bare matrix, or {"campaign_id", "matrix"}
    execution_name: str  # $$.Execution.Name: the campaign id when the input gives none


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=ValidateEvent)
def handler(event: ValidateEvent, context: LambdaContext) -> dict:
    request = execution_request(event.input, event.execution_name)
    try:
        campaign = parse_campaign(request.matrix)
    except MatrixError as error:
        raise InvalidMatrix(str(error)) from None
    env = ResultsEnv.from_env()
    traces = ResultStore(env.results_bucket, env.results_table).campaign_traces(request.campaign_id)
    if traces:
        # Every worker's write-once summary would conflict and results.json would be overwritten: refuse now.
        fix = "give another campaign_id" if request.id_from == "input" else "start the execution under another name"
        raise CampaignExists(f"campaign id {request.campaign_id!r} is already used ({traces[0]}): {fix}")
    plan = plan_campaign(campaign, request.campaign_id)
    logger.info("campaign planned", campaign_id=plan.campaign_id, targets=len(plan.targets))
    return plan.model_dump(mode="json")
