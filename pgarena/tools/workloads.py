"""The tools' schemas by name: the matrix's workload union and a step's run record union. Pure.

With pgarena.tools.registry, the one module outside a tool's package that names the tools: adding a
tool adds its schemas here and its Tool there, and nothing else outside its package.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from pgarena.model.tool_spec import StepSpec, ToolWorkload
from pgarena.tools.pgbench import spec as pgbench
from pgarena.tools.sysbench import spec as sysbench

Workload = Annotated[pgbench.PgbenchWorkload | sysbench.SysbenchWorkload, Field(discriminator="tool")]
ToolStep = Annotated[pgbench.PgbenchStep | sysbench.SysbenchStep, Field(discriminator="tool")]
TOOL_NAMES = ("pgbench", "sysbench")
# Why a tool's upper bounds are there, for the matrix's refusals.
LIMIT_REASONS = {**pgbench.LIMIT_REASONS, **sysbench.LIMIT_REASONS}

# The schemas keep their contracts (checked by mypy).
_WORKLOADS: tuple[type[ToolWorkload], ...] = (pgbench.PgbenchWorkload, sysbench.SysbenchWorkload)
_STEPS: tuple[type[StepSpec], ...] = (pgbench.PgbenchStep, sysbench.SysbenchStep)
