"""What an execution of the state machine is started with: a bare matrix, or `{"campaign_id", "matrix"}`. Pure.

`aws stepfunctions start-execution --input file://matrix.json` hands the state machine a bare matrix;
scheduled campaigns and callers that choose the id give `{"campaign_id": ..., "matrix": ...}`. Without
an id, the campaign is named after the execution, whose name is unique per state machine (AWS keeps
a used name for 90 days; the console and the CLI default to a UUID).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pgarena.model.errors import InvalidMatrix
from pgarena.model.matrix import CAMPAIGN_ID_PATTERN

# The one key that tells the wrapped shape from a bare matrix (a matrix has no field of this name).
MATRIX_KEY = "matrix"
CAMPAIGN_ID_KEY = "campaign_id"


@dataclass(frozen=True)
class ExecutionRequest:
    campaign_id: str
    matrix: Any  # the matrix as given, validated by pgarena.planning.campaign.parse_campaign
    id_from: str  # "input" | "execution name": what a refusal names as the fix


# A scheduled firing's id: `<schedule>-<aws.scheduler.scheduled-time>`, the time as EventBridge Scheduler
# writes it (ISO 8601, with the colons an S3-prefix id cannot have). The same firing retried has the
# same time, so the same id: it finds its campaign instead of starting a second one.
SCHEDULED_ID_RE = re.compile(
    r"^(?P<schedule>[A-Za-z0-9][A-Za-z0-9_.-]*)-(?P<time>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))$"
)


def scheduled_campaign_id(given: str) -> str:
    """`nightly-2026-11-26T02:00:00Z` as a campaign id, `nightly-20261126T020000Z`; any other id as given."""
    match = SCHEDULED_ID_RE.match(given)
    if match is None:
        return given
    at = datetime.fromisoformat(match["time"].replace("Z", "+00:00")).astimezone(UTC)
    return f"{match['schedule']}-{at:%Y%m%dT%H%M%SZ}"


def execution_request(execution_input: Any, execution_name: str) -> ExecutionRequest:
    """The campaign id and the matrix an execution input asks for; InvalidMatrix names what is wrong."""
    wrapped = isinstance(execution_input, dict) and MATRIX_KEY in execution_input
    matrix = execution_input[MATRIX_KEY] if wrapped else execution_input
    given = execution_input.get(CAMPAIGN_ID_KEY) if wrapped else None
    campaign_id, id_from = (given, "input") if given is not None else (execution_name, "execution name")
    if isinstance(campaign_id, str):
        campaign_id = scheduled_campaign_id(campaign_id)
    if not isinstance(campaign_id, str) or not re.match(CAMPAIGN_ID_PATTERN, campaign_id):
        where = "$.campaign_id" if id_from == "input" else "the execution name"
        raise InvalidMatrix(
            f"{where} {campaign_id!r} is not a valid campaign id ({CAMPAIGN_ID_PATTERN}: letters, digits, '.', '_', '-'; "
            "it prefixes the campaign's S3 keys): give another"
        )
    return ExecutionRequest(campaign_id, matrix, id_from)
