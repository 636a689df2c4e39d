"""Aggregate And Rank: join the outcomes with the workers' summaries, rank, write results.json and the reports."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.dependencies import Dependencies
from functions.observability import log_alerts, logger, metrics, tracer
from pgarena.aws.settings import ResultsEnv
from pgarena.campaign.finalize import aggregate_and_rank


class AggregateEvent(BaseModel):
    """The plan, the cost decision and the outcomes are read back from where the states kept them."""

    campaign_id: str
    started_at: str


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=AggregateEvent)
def handler(event: AggregateEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(ResultsEnv)
    finalized = aggregate_and_rank(event.campaign_id, event.started_at, deps.records, deps.ending(leases=False))
    results, reports = finalized.results, finalized.reports
    logger.info("reports written", campaign_id=event.campaign_id, files=reports)
    if results.cost is not None:
        logger.info(
            "campaign cost",
            campaign_id=event.campaign_id,
            estimated_usd=results.cost.estimated_usd,
            actual_usd=results.cost.actual_usd,
            refused=results.cost.refused is not None,
        )
    if len(reports) == 0:  # results.json is the contract; a report can be rebuilt from it with `pgarena report`
        metrics.add_metric(name="ReportsFailed", unit=MetricUnit.Count, value=1)
    log_alerts(finalized.alerted, event.campaign_id)
    failed = sum(t.status == "failed" for t in results.targets)
    metrics.add_metric(name="TargetsFailed", unit=MetricUnit.Count, value=failed)
    logger.info("campaign aggregated", campaign_id=event.campaign_id, failed_targets=failed)
    return {
        "campaign_id": event.campaign_id,
        "results_key": finalized.results_key,
        "ranking": [r.model_dump(mode="json") for r in results.ranking],
        "statuses": {t.name: t.status for t in results.targets},
    }
