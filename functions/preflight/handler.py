"""Preflight Target: live server facts and the connection budget, before any benchmark connection."""

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.observability import logger, tracer
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.leases import lease_store
from pgarena.aws.settings import ResultsEnv
from pgarena.aws.store import ResultStore
from pgarena.model.errors import PgarenaError
from pgarena.model.layout import evidence_key
from pgarena.model.plan import PreflightRef, planned_target
from pgarena.model.redact import redact
from pgarena.server.preflight import preflight


class PreflightEvent(BaseModel):
    campaign_id: str
    phase: int  # the phase's number
    target: int  # the target's index in the phase


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_parser(model=PreflightEvent)
def handler(event: PreflightEvent, context: LambdaContext) -> dict[str, object]:
    env = ResultsEnv.from_env()
    store = ResultStore(env.results_bucket, env.results_table)
    state = CampaignState(store)
    target = planned_target(state.plan(event.campaign_id), event.phase, event.target)
    leases = lease_store(store.dynamodb, env.results_table, env.lease_dir)
    key = evidence_key(event.campaign_id, target.name)
    try:
        result = preflight(target, event.campaign_id, leases)
    except PgarenaError as error:
        # The evidence of a target that failed before any worker ran (results.json points at it).
        store.put_json(
            key,
            {
                "target": target.name,
                "host": target.endpoint.host,
                "port": target.endpoint.port,
                "error": redact(error.info().model_dump()),
            },
        )
        raise
    store.put_json(key, {"target": target.name, "server": result.server.model_dump(mode="json")})
    # The steps (clamped, sharded) stay in the bucket; the state gets their indices and timers.
    state.put_preflight(event.campaign_id, event.phase, event.target, result)
    logger.info(
        "preflight passed",
        target=target.name,
        max_connections=result.server.max_connections,
        allowed=result.server.allowed,
        binding=result.server.budget.binding,
        clamped=result.server.clamped,
    )
    return PreflightRef(name=target.name, steps=result.step_refs()).model_dump(mode="json")
