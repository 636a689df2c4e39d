"""A matrix as a user gives it, made a Campaign the runtime can run: JSON shape, the schema, then AWS's
limits measured on its plan. Every problem is a MatrixError naming its JSON path and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pgarena.model.errors import InvalidMatrix
from pgarena.model.execution import CAMPAIGN_ID_KEY, MATRIX_KEY, execution_request
from pgarena.model.matrix import Campaign
from pgarena.model.matrix_errors import MatrixError, Problem, problems_in_one_pass
from pgarena.model.matrix_json import read_json, shape_problems
from pgarena.planning.limits import limit_problems


def parse_campaign(data: Any) -> Campaign:
    """Validate a decoded matrix; raise MatrixError listing every problem with its JSON path."""
    problems = shape_problems(data)
    if problems:
        raise MatrixError(problems)
    try:
        campaign = Campaign.model_validate(data)
    except ValidationError as error:
        raise MatrixError(problems_in_one_pass(Campaign, data, error)) from None
    problems = limit_problems(campaign)
    if problems:
        raise MatrixError(problems)
    return campaign


def load_campaign(path: Path) -> Campaign:
    """Read and validate a matrix file. A missing file raises FileNotFoundError; anything else unusable
    about the file (a directory, unreadable, not JSON) is a MatrixError with the fix."""
    return parse_campaign(read_json(path))


def load_execution_input(path: Path) -> tuple[Campaign, str | None]:
    """A file as `start-execution --input file://...` takes it, a bare matrix or `{"campaign_id", "matrix"}`:
    the campaign and the id it gives (None: the execution's name gives it). Problems are a MatrixError
    whose paths point into the file (`$.matrix.…` in the wrapped shape)."""
    data = read_json(path)
    if not (isinstance(data, dict) and MATRIX_KEY in data):
        return parse_campaign(data), None
    try:
        request = execution_request(data, execution_name="execution-name")  # stands in only when no id is given
    except InvalidMatrix as error:
        raise MatrixError([Problem(path=f"$.{CAMPAIGN_ID_KEY}", message=str(error))]) from None
    try:
        campaign = parse_campaign(request.matrix)
    except MatrixError as error:
        raise MatrixError([Problem(path=f"$.{MATRIX_KEY}{p.path[1:]}", message=p.message) for p in error.problems]) from None
    return campaign, request.campaign_id if request.id_from == "input" else None
