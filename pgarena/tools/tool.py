"""The Tool protocol: what the worker and the CLI ask of a benchmark tool, one implementation per tool
package (pgarena.tools.<tool>.tool), found by name in pgarena.tools.registry.

What the matrix and the planner ask of a tool (sizing, the steps a workload makes, connections, runs,
sharding, the run record's warm-up, rate and SLO) is its schemas' part (pgarena.model.tool_spec): the
matrix and the Lambda functions reach it without the worker's dependencies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from pgarena.model.plan import Step
from pgarena.model.tool_figures import DataChecks
from pgarena.tools.runner import Measured


class Tool(Protocol):
    @property
    def name(self) -> str: ...

    # The environment variable naming the tool's program, when it is not the one on PATH.
    binary_env: str

    def binary(self) -> str: ...

    def command(self, step: Step, password: str | None, workdir: Path) -> tuple[list[str], dict[str, str]]:
        """The step's command line and the environment it adds (the password goes there, never in argv)."""
        ...

    def measure(self, step: Step, text: str, exit_code: int, workdir: Path) -> Measured:
        """What the step measured, from the tool's output `text` and the artifacts it left in workdir."""
        ...

    def artifacts(self, workdir: Path) -> list[Path]:
        """Files the tool wrote besides its output (per-transaction logs), uploaded as raw output."""
        ...

    def checks(self, step: Step) -> DataChecks | None:
        """What the step's data set must meet after its run, checked by the first worker over one snapshot
        (TPROC-C's consistency conditions); None when the workload has none."""
        ...

    def parse(self, text: str) -> BaseModel:
        """The tool's raw output parsed (`pgarena parse`)."""
        ...
