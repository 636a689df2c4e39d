"""Decide More Phases: after an adaptive campaign's phases, whether another repetition is needed, and which phases run next."""

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import SitesEnv
from pgarena.campaign.decide import decide


class DecideEvent(BaseModel):
    campaign_id: str
    through: int  # the last phase run
    started_at: str  # $$.Execution.StartTime: the results so far are timed as Aggregate And Rank's


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=DecideEvent)
def handler(event: DecideEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(SitesEnv)
    answer = decide(event.campaign_id, event.through, event.started_at, deps.store, deps.records, deps.env.sites)
    logger.info(
        "phases decided", campaign_id=event.campaign_id, through=event.through, next=[p["phase"] for p in answer["phases"]]
    )
    return answer
