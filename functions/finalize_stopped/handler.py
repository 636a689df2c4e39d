"""An execution that ended without Aggregate And Rank (stopped, failed, timed out): EventBridge's
execution status change brings it here, and it ends like any other campaign, through finalize:
results.json with what finished, the ledger settled with what ran, the leases given back."""

from datetime import UTC, datetime
from typing import Any, Literal

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.dependencies import Dependencies
from functions.observability import log_alerts, logger, tracer
from pgarena.aws.settings import ResultsEnv
from pgarena.campaign.finalize import Ending, StoppedExecution, finalize_stopped

ENDINGS: dict[str, Ending] = {"ABORTED": "cancelled", "FAILED": "failed", "TIMED_OUT": "failed"}


class ExecutionDetail(BaseModel):
    executionArn: str
    status: Literal["ABORTED", "FAILED", "TIMED_OUT"]
    startDate: int  # epoch milliseconds


class StatusChange(BaseModel):
    detail: ExecutionDetail


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=StatusChange)
def handler(event: StatusChange, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(ResultsEnv)
    started_at = datetime.fromtimestamp(event.detail.startDate / 1000, UTC).isoformat(timespec="milliseconds")
    stopped = StoppedExecution(event.detail.executionArn, ENDINGS[event.detail.status], started_at)
    finalized = finalize_stopped(stopped, deps.records, deps.executions(), deps.ending(leases=True))
    if finalized is None:  # it stopped before it had a plan: nothing was leased, booked or run
        logger.info("stopped before planning", execution=event.detail.executionArn)
        return {"finalized": False}
    results = finalized.results
    log_alerts(finalized.alerted, results.campaign_id)
    logger.info("stopped campaign finalized", campaign_id=results.campaign_id, status=results.status)
    return {"finalized": True, "campaign_id": results.campaign_id, "status": results.status}
