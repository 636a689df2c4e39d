"""Release Connection Lease: give a target's slots back, after its steps or after its failure."""

import boto3
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.leases import lease_store
from pgarena.aws.settings import ResultsEnv
from pgarena.aws.store import ResultStore
from pgarena.model.plan import planned_target
from pgarena.server.preflight import release


class ReleaseEvent(BaseModel):
    campaign_id: str
    phase: int
    target: int  # the target's index in the phase


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=ReleaseEvent)
def handler(event: ReleaseEvent, context: LambdaContext) -> dict[str, object]:
    env = ResultsEnv.from_env()
    state = CampaignState(ResultStore(env.results_bucket, env.results_table))
    target = planned_target(state.plan(event.campaign_id), event.phase, event.target)
    release(target, event.campaign_id, lease_store(boto3.client("dynamodb"), env.results_table, env.lease_dir))
    logger.info("lease released", target=target.name)
    return {"released": target.name}
