"""Start a scheduled campaign whose matrix is kept in S3 (EventBridge Scheduler invokes this)."""

import boto3
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from functions.observability import logger, tracer
from pgarena.aws.schedule import start_from_s3
from pgarena.aws.settings import StartCampaignEnv
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
    env = StartCampaignEnv.from_env()
    arn = start_from_s3(
        boto3.client("s3"),
        boto3.client("stepfunctions"),
        env.results_bucket,
        event.matrix_s3_key,
        env.state_machine_arn,
        event.schedule,
        event.scheduled_time,
    )
    logger.info("scheduled campaign started", schedule=event.schedule, matrix_s3_key=event.matrix_s3_key, execution_arn=arn)
    return {"execution_arn": arn}
