"""Release Connection Lease: give a target's slots back, after its steps or after its failure."""

import boto3
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.aws.leases import lease_store
from pgarena.aws.settings import ResultsEnv
from pgarena.model.plan import PlannedTarget
from pgarena.target.preflight import release


class ReleaseEvent(BaseModel):
    campaign_id: str
    target: PlannedTarget


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=ReleaseEvent)
def handler(event: ReleaseEvent, context: LambdaContext) -> dict:
    env = ResultsEnv.from_env()
    release(event.target, event.campaign_id, lease_store(boto3.client("dynamodb"), env.results_table, env.lease_dir))
    logger.info("lease released", target=event.target.name)
    return {"released": event.target.name}
