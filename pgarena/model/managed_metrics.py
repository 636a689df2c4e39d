"""A managed server's own metrics over a run's window: CloudWatch's instance metrics of an RDS or Aurora
DB instance (namespace AWS/RDS, dimension DBInstanceIdentifier), when the target names its instance.

Pure: the matrix's field (`cloudwatch`), the GetMetricData queries for a window, and the summary of their
answer (min, average and max per metric over the window, with the datapoints' period). Finalize reads them
once the campaign's steps are done (pgarena.campaign.managed_metrics): CloudWatch publishes an instance's
datapoints a minute or more after the minute they cover, so a read at the end of each step would miss its
last minutes. The answer is kept as raw evidence beside the step's raw output; every figure of the summary
is recomputed from it (`summarize`).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from pgarena.model.tool_spec import Strict

# An RDS DB instance identifier: 1 to 63 letters, digits or hyphens, a letter first, no hyphen last and no
# two in a row (the RDS API's rule). The pattern spells "no two hyphens, none last" as hyphen-then-alnum groups.
INSTANCE_PATTERN = r"^[A-Za-z](-?[A-Za-z0-9])*$"
INSTANCE_MAX = 63
# Same as pgarena.model.matrix's (which imports this module): an AWS region's name.
_REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$"

NAMESPACE = "AWS/RDS"
DIMENSION = "DBInstanceIdentifier"
# RDS publishes its instance metrics once a minute (basic monitoring): a finer period has nothing more.
PERIOD_S = 60
# Each metric is read as its per-period minimum, average and maximum: the window's min is the least minimum,
# its max the greatest maximum, its average the mean of the periods' averages (each period one datapoint).
STATS = ("Minimum", "Average", "Maximum")


class MetricSpec(BaseModel):
    name: str
    unit: str


# The instance metrics read (CloudWatch names and units). A metric the instance does not publish (ReplicaLag
# on a primary, AuroraReplicaLag outside Aurora) has no datapoints and is left out of the summary.
METRICS = (
    MetricSpec(name="CPUUtilization", unit="Percent"),
    MetricSpec(name="ReadIOPS", unit="Count/Second"),
    MetricSpec(name="WriteIOPS", unit="Count/Second"),
    MetricSpec(name="DiskQueueDepth", unit="Count"),
    MetricSpec(name="FreeableMemory", unit="Bytes"),
    MetricSpec(name="ReplicaLag", unit="Seconds"),
    MetricSpec(name="AuroraReplicaLag", unit="Milliseconds"),
)


class CloudWatchSource(Strict):
    """The matrix's `cloudwatch` of a target: the DB instance whose CloudWatch metrics its runs are read with."""

    instance: str = Field(
        min_length=1,
        max_length=INSTANCE_MAX,
        pattern=INSTANCE_PATTERN,
        description="the RDS or Aurora DB instance identifier (DBInstanceIdentifier) the target's endpoint reaches",
    )
    region: str | None = Field(
        None,
        max_length=32,
        pattern=_REGION_PATTERN,
        description="the instance's region; default: the target's placement region, else the stack's home region",
    )


NoteKind = Literal["denied", "failed", "no_datapoints", "not_read"]


class MetricsNote(BaseModel):
    """Why a run has no managed metrics, or fewer: the read was refused or failed, or found nothing."""

    kind: NoteKind = Field(
        description="denied: the role may not read CloudWatch; failed: the read failed; no_datapoints: CloudWatch had "
        "none for the instance over the window; not_read: an earlier read of the target failed, so none was tried"
    )
    message: str


class MetricSummary(BaseModel):
    """One metric over the window, from its datapoints (each one period)."""

    name: str
    unit: str
    min: float
    avg: float
    max: float
    datapoints: int = Field(description="the periods with a datapoint in the window")


class ManagedMetrics(BaseModel):
    """A run's managed metrics (CloudWatch, AWS/RDS) over its measured window, read by finalize."""

    source: Literal["cloudwatch"] = "cloudwatch"
    instance: str
    region: str | None = Field(None, description="where they were read (None: the stack's home region)")
    window_start: str = Field(description="the measured window's start (after any warm-up)")
    window_end: str
    query_start: str = Field(description="the window widened to whole periods, as CloudWatch was asked")
    query_end: str
    period_s: int = Field(description="each datapoint's period")
    metrics: list[MetricSummary] = Field(default_factory=list, description="metrics with datapoints in the window")
    note: MetricsNote | None = Field(None, description="why nothing (or not everything) was read")
    raw: str | None = Field(
        None, description="the GetMetricData answer, kept (a path relative to the campaign folder in results.json)"
    )


class MetricsReadFailed(Exception):
    """A metrics read that was refused (`denied`: the role lacks cloudwatch:GetMetricData) or failed."""

    def __init__(self, message: str, denied: bool = False):
        super().__init__(message)
        self.denied = denied


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def query_window(start: datetime, end: datetime, period_s: int = PERIOD_S) -> tuple[datetime, datetime]:
    """The window widened to whole periods (CloudWatch aligns datapoints to them): its start floored, its end
    ceiled, at least one period long."""
    epoch = start.timestamp()
    floor = math.floor(epoch / period_s) * period_s
    ceil = max(math.ceil(end.timestamp() / period_s) * period_s, floor + period_s)
    return start - timedelta(seconds=epoch - floor), start + timedelta(seconds=ceil - epoch)


def query_id(metric: str, stat: str) -> str:
    """A query's id: CloudWatch wants a lowercase letter first, then letters, digits and underscores."""
    return f"{metric.lower()}_{stat.lower()}"


def metric_queries(instance: str, period_s: int = PERIOD_S) -> list[dict[str, Any]]:
    """GetMetricData's MetricDataQueries: every metric of METRICS, each as STATS, of the instance."""
    return [
        {
            "Id": query_id(spec.name, stat),
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": spec.name,
                    "Dimensions": [{"Name": DIMENSION, "Value": instance}],
                },
                "Period": period_s,
                "Stat": stat,
            },
            "ReturnData": True,
        }
        for spec in METRICS
        for stat in STATS
    ]


def _values(answer: dict[str, Any]) -> dict[str, list[float]]:
    """Each query's values, by id (an answer paginated in several parts is one list per id)."""
    values: dict[str, list[float]] = {}
    for result in answer.get("MetricDataResults", []):
        values.setdefault(str(result.get("Id")), []).extend(float(v) for v in result.get("Values", []))
    return values


def summarize(answer: dict[str, Any]) -> list[MetricSummary]:
    """Each metric with datapoints in GetMetricData's answer (its MetricDataResults, pages joined): the least
    minimum, the mean of the averages, the greatest maximum, and how many periods had a datapoint."""
    values = _values(answer)
    summaries = []
    for spec in METRICS:
        low, mean, high = (values.get(query_id(spec.name, stat), []) for stat in STATS)
        if not mean:
            continue
        summaries.append(
            MetricSummary(
                name=spec.name,
                unit=spec.unit,
                min=min(low or mean),
                avg=sum(mean) / len(mean),
                max=max(high or mean),
                datapoints=len(mean),
            )
        )
    return summaries


def measured_window(started_at: str, finished_at: str, warmup_s: int | None) -> tuple[datetime, datetime]:
    """A run's measured window: from its start past the warm-up to its end (as its summary records them)."""
    start, end = _parse(started_at), _parse(finished_at)
    return min(start + timedelta(seconds=warmup_s or 0), end), end
