"""The tools by name. With pgarena.tools.workloads, the one module outside a tool's package that
names the tools: everything else asks for `tool_for(step.tool)`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pgarena.model.tool_spec import StepSpec
from pgarena.tools.pgbench.tool import Pgbench
from pgarena.tools.sysbench.tool import Sysbench
from pgarena.tools.tool import Tool
from pgarena.tools.workloads import STEP_RECORDS, TOOL_NAMES

TOOLS: dict[str, Tool] = {tool.name: tool for tool in (Pgbench(), Sysbench())}
assert tuple(TOOLS) == TOOL_NAMES  # the schemas' names and the tools' are one list


def tool_for(name: str) -> Tool:
    return TOOLS[name]


@contextmanager
def registered(tool: Tool, record: type[StepSpec]) -> Iterator[Tool]:
    """`tool` found by its name while the block runs (a tool from outside pgarena, such as a test's), and
    its steps' run records (`record`, whose `tool` is its name) read from JSON as its own."""
    if tool.name in TOOLS or tool.name in STEP_RECORDS:
        raise ValueError(f"a tool named {tool.name} is registered already")
    TOOLS[tool.name], STEP_RECORDS[tool.name] = tool, record
    try:
        yield tool
    finally:
        del TOOLS[tool.name], STEP_RECORDS[tool.name]
