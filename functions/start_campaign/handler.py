"""Start a scheduled campaign whose matrix is kept in S3 (EventBridge Scheduler invokes this)."""

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import StartCampaignEnv
from pgarena.campaign.scheduled import Firing, start_scheduled
from pgarena.model.matrix import NAME_PATTERN

# ISO 8601 as EventBridge Scheduler writes it (UTC, Z), or with an offset.
SCHEDULED_TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"


class StartCampaignEvent(BaseModel):
    schedule: str = Field(pattern=NAME_PATTERN)
    matrix_s3_key: str = Field(min_length=1)
    scheduled_time: str = Field(pattern=SCHEDULED_TIME_PATTERN, description="<aws.scheduler.scheduled-time>")


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=StartCampaignEvent)
def handler(event: StartCampaignEvent, context: LambdaContext) -> dict[str, object]:
    deps = Dependencies.of(StartCampaignEnv)
    firing = Firing(event.schedule, event.matrix_s3_key, event.scheduled_time)
    started = start_scheduled(firing, deps.documents, deps.executions(), deps.env.state_machine_arn)
    logger.info(
        "scheduled campaign started",
        schedule=event.schedule,
        matrix_s3_key=event.matrix_s3_key,
        campaign_id=started.campaign_id,
        execution_arn=started.execution_arn,
    )
    return {"execution_arn": started.execution_arn}
