"""An execution that ended without Aggregate And Rank (stopped, failed, timed out): EventBridge's
execution status change brings it here, and it ends like any other campaign, through finalize:
results.json with what finished, the ledger settled with what ran, the leases given back."""

from datetime import UTC, datetime
from typing import Any, Literal

import boto3
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import ResultsEnv
from pgarena.campaign.finalize import Ending, finalize_stopped
from pgarena.remote.follow import history

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
    results = finalize_stopped(
        history(boto3.client("stepfunctions"), event.detail.executionArn),
        started_at,
        deps.store,
        deps.records,
        ledger=deps.ledger,
        leases=deps.leases,
        ending=ENDINGS[event.detail.status],
        execution_name=event.detail.executionArn.rsplit(":", 1)[1],  # the campaign id of a bare matrix's execution
        slots=deps.worker_slots,
    )
    if results is None:  # it stopped before it had a plan: nothing was leased, booked or run
        logger.info("stopped before planning", execution=event.detail.executionArn)
        return {"finalized": False}
    logger.info("stopped campaign finalized", campaign_id=results.campaign_id, status=results.status)
    return {"finalized": True, "campaign_id": results.campaign_id, "status": results.status}
