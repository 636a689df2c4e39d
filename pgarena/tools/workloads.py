"""The tools' schemas by name: the matrix's workload union and a step's run record by its tool. Pure.

With pgarena.tools.registry, the one module outside a tool's package that names the tools: adding a
tool adds its schemas here and its Tool there, and nothing else outside its package.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field, SerializeAsAny

from pgarena.model.tool_spec import StepSpec, ToolWorkload
from pgarena.tools.pgbench import spec as pgbench
from pgarena.tools.sysbench import spec as sysbench

Workload = Annotated[pgbench.PgbenchWorkload | sysbench.SysbenchWorkload, Field(discriminator="tool")]
TOOL_NAMES = ("pgbench", "sysbench")
# A step's run record by its tool's name: pgarena's own, and any tool registered for a while
# (pgarena.tools.registry.registered). A record is read as its tool's model, whatever the tool.
STEP_RECORDS: dict[str, type[StepSpec]] = {"pgbench": pgbench.PgbenchStep, "sysbench": sysbench.SysbenchStep}


def _step_record(value: object) -> object:
    """A record as its tool's model: a dict (JSON) validated by the model its `tool` names."""
    if isinstance(value, StepSpec) or not isinstance(value, dict):
        return value
    record = STEP_RECORDS.get(str(value.get("tool")))
    if record is None:
        raise ValueError(f"no tool named {value.get('tool')!r}: one of {', '.join(sorted(STEP_RECORDS))}")
    return record.model_validate(value)


# Step.spec's type: serialized with its tool's fields, not only the shared ones.
ToolStep = Annotated[StepSpec, BeforeValidator(_step_record), SerializeAsAny()]
# Why a tool's upper bounds are there, for the matrix's refusals.
LIMIT_REASONS = {**pgbench.LIMIT_REASONS, **sysbench.LIMIT_REASONS}
# Per tool, what it calls another tool's field ("run.clients" -> "threads"), for a misplaced field's message.
COUNTERPARTS = {"pgbench": pgbench.COUNTERPARTS, "sysbench": sysbench.COUNTERPARTS}

# The schemas keep their contracts (checked by mypy).
_WORKLOADS: tuple[type[ToolWorkload], ...] = (pgbench.PgbenchWorkload, sysbench.SysbenchWorkload)
