"""Validate And Plan: check the matrix and the campaign id before anything touches a database, then plan the steps."""

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.settings import ResultsEnv
from pgarena.aws.store import ResultStore
from pgarena.model.errors import InvalidMatrix
from pgarena.model.execution import execution_request
from pgarena.model.matrix import MatrixError, parse_campaign
from pgarena.model.plan import PlanRef
from pgarena.planning.planner import plan_campaign


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
    state = CampaignState(ResultStore(env.results_bucket, env.results_table))
    fix = "give another campaign_id" if request.id_from == "input" else "start the execution under another name"
    state.claim(request.campaign_id, event.execution_name, fix)
    plan = plan_campaign(campaign, request.campaign_id)
    # The plan stays in the bucket: the execution's state carries the campaign id and indices only.
    state.put_plan(plan, event.execution_name)
    logger.info("campaign planned", campaign_id=plan.campaign_id, targets=len(plan.targets), phases=len(plan.phases))
    return PlanRef.of(plan).model_dump(mode="json")
