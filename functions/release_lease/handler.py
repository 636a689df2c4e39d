"""Release Connection Lease: give a target's slots back, after its steps or after its failure."""

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import ResultsEnv
from pgarena.campaign.preflight import release_target


class ReleaseEvent(BaseModel):
    campaign_id: str
    phase: int
    target: int  # the target's index in the phase


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=ReleaseEvent)
def handler(event: ReleaseEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(ResultsEnv)
    target = release_target(event.campaign_id, event.phase, event.target, deps.records, deps.leases)
    logger.info("lease released", target=target.name)
    return {"released": target.name}
