"""CloudWatch's GetMetricData behind the MetricReads port (pgarena.campaign.ports): a managed server's
instance metrics, read by finalize in the instance's region.

cloudwatch:GetMetricData takes no resource in IAM (the service authorization reference lists no resource
type for it): its grant is the access map's SERVICE_ACTIONS, on "*".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from pgarena.model.managed_metrics import MetricsReadFailed

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_cloudwatch.type_defs import MetricDataQueryTypeDef

# The error codes of a refused call (the role lacks the action, or its keys are not the account's).
DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "InvalidClientTokenId", "UnrecognizedClientException"}
)


def _stamp(value: datetime | str) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


class CloudWatchMetrics:
    """GetMetricData through a client made for the region asked (None: the function's own)."""

    def __init__(self, client_in: Callable[[str | None], CloudWatchClient]):
        self._client_in = client_in

    def metric_data(self, region: str | None, queries: list[dict[str, Any]], start: datetime, end: datetime) -> dict[str, Any]:
        where = region or "the home region"
        results: list[dict[str, Any]] = []
        messages: list[dict[str, Any]] = []
        try:
            pages = self._client_in(region).get_paginator("get_metric_data")
            typed: list[MetricDataQueryTypeDef] = queries  # type: ignore[assignment]  # built as plain dicts (model/managed_metrics.py)
            for page in pages.paginate(MetricDataQueries=typed, StartTime=start, EndTime=end, ScanBy="TimestampAscending"):
                results.extend(
                    {
                        "Id": result.get("Id"),
                        "Label": result.get("Label"),
                        "StatusCode": result.get("StatusCode"),
                        "Timestamps": [_stamp(t) for t in result.get("Timestamps", [])],
                        "Values": list(result.get("Values", [])),
                    }
                    for result in page.get("MetricDataResults", [])
                )
                messages.extend({"Code": m.get("Code"), "Value": m.get("Value")} for m in page.get("Messages", []))
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            message = str(error.response.get("Error", {}).get("Message", error))
            raise MetricsReadFailed(f"cloudwatch:GetMetricData in {where}: {code}: {message}", denied=code in DENIED) from error
        except BotoCoreError as error:
            raise MetricsReadFailed(f"cloudwatch:GetMetricData in {where}: {type(error).__name__}: {error}") from error
        return {"MetricDataResults": results, "Messages": messages}
