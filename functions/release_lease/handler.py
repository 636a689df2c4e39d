"""Release Connection Lease: give a target's slots back, after its steps or after its failure."""

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.dependencies import Dependencies
from functions.observability import logger, tracer
from pgarena.aws.settings import ResultsEnv
from pgarena.campaign.preflight import release_target
from pgarena.model.plan import TargetRef


class ReleaseEvent(TargetRef):
    """The target whose slots go back (Release Connection Lease's payload; Release Lease After Failure's
    says `failed`)."""

    failed: bool = False


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=ReleaseEvent)
def handler(event: ReleaseEvent, context: LambdaContext) -> dict[str, Any]:
    deps = Dependencies.of(ResultsEnv)
    target = release_target(event, deps.records, deps.leases, deps.worker_slots, event.failed)
    logger.info("lease released, worker slots closed", target=target.name, failed=event.failed)
    return {"released": target.name}
