"""Start a scheduled campaign whose matrix is kept in the results bucket (EventBridge Scheduler's firing
of a schedule; an inline schedule's input is written at synth and starts the state machine itself)."""

from __future__ import annotations

from dataclasses import dataclass

from pgarena.campaign.ports import Documents, Executions
from pgarena.model.schedule import EXECUTION_NAME_MAX, campaign_input


@dataclass(frozen=True)
class Firing:
    """One firing of a schedule: its name, its matrix's key in the bucket, the time it was scheduled for."""

    schedule: str
    matrix_key: str
    scheduled_time: str


@dataclass(frozen=True)
class Started:
    campaign_id: str
    execution_arn: str


def start_scheduled(firing: Firing, documents: Documents, executions: Executions, state_machine_arn: str) -> Started:
    """Read the schedule's matrix and start its campaign. The execution is named after the campaign, whose
    id comes from the firing's scheduled time: a retried firing meets the execution its first attempt
    started, running or ended (the port answers its ARN), and nothing is started twice."""
    payload = campaign_input(firing.schedule, documents.get_json(firing.matrix_key), firing.scheduled_time)
    campaign_id = payload["campaign_id"]
    return Started(campaign_id, executions.start(state_machine_arn, campaign_id[:EXECUTION_NAME_MAX], payload))
