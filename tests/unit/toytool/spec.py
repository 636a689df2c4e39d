"""The toy tool's run record: a number of operations, on top of what every tool's step carries."""

from typing import Literal

from pydantic import Field

from pgarena.model.tool_spec import StepSpec


class ToyStep(StepSpec):
    tool: Literal["toy"] = "toy"
    operations: int = Field(gt=0, description="operations the toy performs")
