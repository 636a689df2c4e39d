"""Aggregate And Rank: join the outcomes with the workers' summaries, rank, write results.json and the reports."""

from datetime import UTC, datetime

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, metrics, tracer
from pgarena.analysis.aggregate import aggregate
from pgarena.aws.ledger import CostDecision, Ledger, settle_campaign
from pgarena.aws.settings import ResultsEnv
from pgarena.aws.store import ResultStore
from pgarena.model.outcomes import Outcomes
from pgarena.model.plan import Plan
from pgarena.model.series import ShardSeries
from pgarena.report import write_reports


class AggregateEvent(BaseModel):
    campaign_id: str
    started_at: str
    plan: Plan
    outcomes: Outcomes  # per phase of the campaign, flattened: one outcome per target and phase
    cost: CostDecision | None = None  # the cost guard's decision: a refusal to list, an estimate to settle


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=AggregateEvent)
def handler(event: AggregateEvent, context: LambdaContext) -> dict:
    env = ResultsEnv.from_env()
    store = ResultStore(env.results_bucket, env.results_table)
    finished_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    summaries = store.summaries(event.campaign_id)
    refusal = event.cost.refusal if event.cost else None
    # Sharded runs are merged from each shard's per-second histograms, kept beside its raw output.
    series = {s.step_id: ShardSeries.model_validate(store.get_json(s.series)) for s in summaries if s.series}
    raw_keys = store.keys(f"{event.campaign_id}/raw/")  # what lost workers and failed preflights left
    results = aggregate(event.plan, event.outcomes, summaries, event.started_at, finished_at, refusal, series, raw_keys)
    if event.cost is not None:
        ledger = Ledger(boto3.client("dynamodb"), env.results_table)
        spent = settle_campaign(event.cost, event.plan, event.outcomes, summaries, event.started_at, finished_at, ledger)
        results = results.model_copy(update={"cost": spent})
        logger.info(
            "campaign cost",
            campaign_id=event.campaign_id,
            estimated_usd=spent.estimated_usd,
            actual_usd=spent.actual_usd,
            refused=spent.refused is not None,
        )
    key = store.put_json(f"{event.campaign_id}/results.json", results.model_dump(mode="json"))
    try:
        reports = write_reports(
            results, lambda name, data, content_type: store.put_bytes(f"{event.campaign_id}/{name}", data, content_type)
        )
        logger.info("reports written", campaign_id=event.campaign_id, files=reports)
    except Exception:  # results.json is the contract; a report can be rebuilt from it with `pgarena report`
        logger.exception("reports not written", campaign_id=event.campaign_id)
        metrics.add_metric(name="ReportsFailed", unit=MetricUnit.Count, value=1)
    failed = sum(t.status == "failed" for t in results.targets)
    metrics.add_metric(name="TargetsFailed", unit=MetricUnit.Count, value=failed)
    logger.info("campaign aggregated", campaign_id=event.campaign_id, failed_targets=failed)
    return {
        "campaign_id": event.campaign_id,
        "results_key": key,
        "ranking": [r.model_dump(mode="json") for r in results.ranking],
        "statuses": {t.name: t.status for t in results.targets},
    }
