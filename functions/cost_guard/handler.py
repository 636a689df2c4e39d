"""Check Cost Cap: estimate the campaign and refuse it over its caps, before any worker starts."""

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, metrics, tracer
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.ledger import Ledger, check_cost
from pgarena.aws.settings import CostGuardEnv
from pgarena.aws.store import ResultStore


class CostGuardEvent(BaseModel):
    campaign_id: str


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=CostGuardEvent)
def handler(event: CostGuardEvent, context: LambdaContext) -> dict[str, object]:
    env = CostGuardEnv.from_env()
    state = CampaignState(ResultStore(env.results_bucket, env.results_table))
    ledger = Ledger(boto3.client("dynamodb"), env.results_table)
    decision = check_cost(state.plan(event.campaign_id), ledger, env.worker_cpu_units, env.worker_memory_mib, env.region)
    state.put_cost(decision)  # Aggregate And Rank reads it back: the estimate's lines stay out of the state
    metrics.add_metric(name="CampaignsRefusedForCost", unit=MetricUnit.Count, value=0 if decision.allowed else 1)
    logger.info(
        "cost checked",
        campaign_id=event.campaign_id,
        allowed=decision.allowed,
        estimated_usd=decision.estimate.total_usd,
        cap_usd=decision.cap_usd,
        monthly_cap_usd=decision.monthly_cap_usd,
        month_committed_usd=decision.month_committed_usd,
        reason=decision.reason,
    )
    return {"allowed": decision.allowed}
