"""Logger, Tracer and Metrics, created once for every handler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics, Tracer

if TYPE_CHECKING:  # task_stopped, kept small, loads nothing of the campaign's
    from pgarena.campaign.alerting import Alerted

SERVICE = "pgarena"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace="pgarena", service=SERVICE)


def log_alerts(alerted: Alerted, campaign_id: str) -> None:
    """The change points a run found first (published) and what kept one from being published: a
    publication that failed leaves the campaign's results as they are, so it is said here."""
    for alert in alerted.alerts:
        logger.info("change point found", campaign_id=campaign_id, direction=alert.direction, change=alert.message)
    for problem in alerted.problems:
        logger.warning("change point alert", campaign_id=campaign_id, problem=problem)
