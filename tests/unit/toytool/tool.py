"""The toy tool as the worker runs it: `toy --operations N --clients C` prints `operations: N` and
`ops/s: R`; that is all it measures."""

import os
import re
from pathlib import Path

from pydantic import BaseModel

from pgarena.model.errors import ErrorInfo, ErrorKind
from pgarena.model.plan import Step
from pgarena.tools.runner import Measured
from tests.unit.toytool.spec import ToyStep


class ToyReport(BaseModel):
    operations: int | None = None
    ops_per_s: float | None = None


class Toy:
    name = "toy"
    binary_env = "TOYTOOL_BINARY"

    def binary(self) -> str:
        return os.environ.get(self.binary_env, "toy")

    def command(self, step: Step, password: str | None, workdir: Path) -> tuple[list[str], dict[str, str]]:
        spec = step.spec
        assert isinstance(spec, ToyStep)
        return [self.binary(), "--operations", str(spec.operations), "--clients", str(step.clients)], {
            "TOY_PASSWORD": password or ""
        }

    def checks(self, step: Step) -> None:
        return None

    def parse(self, text: str) -> ToyReport:
        operations = re.search(r"^operations: (\d+)$", text, re.MULTILINE)
        rate = re.search(r"^ops/s: ([0-9.]+)$", text, re.MULTILINE)
        return ToyReport(
            operations=int(operations.group(1)) if operations else None, ops_per_s=float(rate.group(1)) if rate else None
        )

    def measure(self, step: Step, text: str, exit_code: int, workdir: Path) -> Measured:
        report = self.parse(text)
        error = None
        if exit_code != 0 or report.ops_per_s is None:
            error = ErrorInfo(kind=ErrorKind.TOOL_FAILED, message=f"toy exited {exit_code}")
        return Measured(tps=report.ops_per_s, transactions=report.operations, error=error)

    def artifacts(self, workdir: Path) -> list[Path]:
        return []
