"""What an execution of the state machine is started with: a bare matrix, or `{"campaign_id", "matrix"}`. Pure.

`aws stepfunctions start-execution --input file://matrix.json` hands the state machine a bare matrix;
scheduled campaigns and callers that choose the id give `{"campaign_id": ..., "matrix": ...}`. Without
an id, the campaign is named after the execution, whose name is unique per state machine (AWS keeps
a used name for 90 days; the console and the CLI default to a UUID).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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


def execution_request(execution_input: Any, execution_name: str) -> ExecutionRequest:
    """The campaign id and the matrix an execution input asks for; InvalidMatrix names what is wrong."""
    wrapped = isinstance(execution_input, dict) and MATRIX_KEY in execution_input
    matrix = execution_input[MATRIX_KEY] if wrapped else execution_input
    given = execution_input.get(CAMPAIGN_ID_KEY) if wrapped else None
    campaign_id, id_from = (given, "input") if given is not None else (execution_name, "execution name")
    if not isinstance(campaign_id, str) or not re.match(CAMPAIGN_ID_PATTERN, campaign_id):
        where = "$.campaign_id" if id_from == "input" else "the execution name"
        raise InvalidMatrix(
            f"{where} {campaign_id!r} is not a valid campaign id ({CAMPAIGN_ID_PATTERN}: letters, digits, '.', '_', '-'; "
            "it prefixes the campaign's S3 keys): give another"
        )
    return ExecutionRequest(campaign_id, matrix, id_from)
