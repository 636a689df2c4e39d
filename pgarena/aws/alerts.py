"""The Alerts port on EventBridge and SNS: each change point a run found first is an event on the stack's
bus (the default bus unless the deploy names another), and an SNS message when the stack has a topic.
The event's detail, the message's body and attributes: docs/guide/09-history.md, Alerts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from pgarena.analysis.history.schema import ChangeAlert

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_sns import SNSClient

SOURCE = "pgarena"
DETAIL_TYPE = "Change point found"
# PutEvents takes at most 10 entries a call.
_EVENTS_PER_CALL = 10
# SNS caps a subject at 100 characters.
_SUBJECT_MAX = 100


def event_entry(alert: ChangeAlert, bus: str) -> dict[str, str]:
    return {"Source": SOURCE, "DetailType": DETAIL_TYPE, "Detail": alert.model_dump_json(), "EventBusName": bus}


def subject(alert: ChangeAlert) -> str:
    return f"pgarena {alert.campaign}: {alert.metric} {alert.direction} ({alert.target})"[:_SUBJECT_MAX]


def message(alert: ChangeAlert) -> str:
    """The SNS message: the sentence, then where the run's results are, then the event's detail as JSON."""
    where = f"s3://{alert.results_bucket}/{alert.results_key}" if alert.results_bucket else alert.results_key
    return f"{alert.message}\n\nfound by run {alert.run} ({alert.campaign_id}): {where}\n\n{alert.model_dump_json(indent=2)}"


class EventAlerts:
    def __init__(
        self, events: EventBridgeClient, bus: str, bucket: str, sns: SNSClient | None = None, topic_arn: str | None = None
    ) -> None:
        self.events, self.bus, self.bucket, self.sns, self.topic_arn = events, bus, bucket, sns, topic_arn

    def publish(self, alerts: list[ChangeAlert]) -> list[str]:
        """Every alert as an event, and a message when a topic is set; what failed, one line each (a failed
        publication does not fail the campaign, whose results are written: the caller logs them)."""
        located = [a.model_copy(update={"results_bucket": self.bucket}) for a in alerts]
        problems: list[str] = []
        for start in range(0, len(located), _EVENTS_PER_CALL):
            batch = located[start : start + _EVENTS_PER_CALL]
            try:
                answer = self.events.put_events(Entries=[event_entry(a, self.bus) for a in batch])  # type: ignore[misc]  # a TypedDict's keys
            except (ClientError, BotoCoreError) as error:
                problems += [f"event not published ({a.message}): {error}" for a in batch]
                continue
            for alert, entry in zip(batch, answer.get("Entries", []), strict=False):
                if "ErrorCode" in entry:
                    problems.append(
                        f"event not published ({alert.message}): {entry['ErrorCode']} {entry.get('ErrorMessage', '')}"
                    )
        if self.sns is not None and self.topic_arn:
            for alert in located:
                try:
                    self.sns.publish(
                        TopicArn=self.topic_arn,
                        Subject=subject(alert),
                        Message=message(alert),
                        # A subscription's filter policy can keep `worse` alone, or one campaign's.
                        MessageAttributes={
                            "direction": {"DataType": "String", "StringValue": alert.direction},
                            "campaign": {"DataType": "String", "StringValue": alert.campaign},
                            "metric": {"DataType": "String", "StringValue": alert.metric},
                        },
                    )
                except (ClientError, BotoCoreError) as error:
                    problems.append(f"message not published ({alert.message}): {error}")
        return problems
