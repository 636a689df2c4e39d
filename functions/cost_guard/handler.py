"""Check Cost Cap: estimate the campaign and refuse it over its caps, before any worker starts."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.dependencies import Dependencies
from functions.observability import logger, metrics, tracer
from pgarena.aws.settings import CostGuardEnv
from pgarena.campaign.cost_guard import guard_cost
from pgarena.model.ledger import WorkerPricing


class CostGuardEvent(BaseModel):
    campaign_id: str


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=CostGuardEvent)
def handler(event: CostGuardEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(CostGuardEnv)
    env = deps.env
    pricing = WorkerPricing(cpu_units=env.worker_cpu_units, memory_mib=env.worker_memory_mib, default_region=env.region)
    decision = guard_cost(event.campaign_id, deps.records, deps.ledger, pricing)
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
