"""Aggregate And Rank: join the outcomes with the workers' summaries, rank, write results.json."""

from datetime import datetime, timezone

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, metrics, tracer
from pgarena.aggregate import TargetOutcome, aggregate
from pgarena.plan import Plan
from pgarena.settings import ResultsEnv
from pgarena.store import ResultStore


class AggregateEvent(BaseModel):
    campaign_id: str
    started_at: str
    plan: Plan
    outcomes: list[TargetOutcome]


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=AggregateEvent)
def handler(event: AggregateEvent, context: LambdaContext) -> dict:
    env = ResultsEnv.from_env()
    store = ResultStore(env.results_bucket, env.results_table)
    finished_at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    results = aggregate(event.plan, event.outcomes, store.summaries(event.campaign_id), event.started_at, finished_at)
    key = store.put_json(f"{event.campaign_id}/results.json", results.model_dump(mode="json"))
    failed = sum(t.status == "failed" for t in results.targets)
    metrics.add_metric(name="TargetsFailed", unit=MetricUnit.Count, value=failed)
    logger.info("campaign aggregated", campaign_id=event.campaign_id, failed_targets=failed)
    return {
        "campaign_id": event.campaign_id,
        "results_key": key,
        "ranking": [r.model_dump(mode="json") for r in results.ranking],
        "statuses": {t.name: t.status for t in results.targets},
    }
