"""The TPROC-C load (a tprocc workload's init step), run by the worker's SQL task process
(pgarena.worker.sql_task): the kit's schema, data and functions, its phases printed as pgbench -i prints
its own ("done in X s (phase Y s, ...)."), so that the load's time and phases are read by the same parser."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from typing import Any

from pgarena.tools.pgbench.tpcc.kit import load as load_kit

# The SQL task's reference to `load` (module:function), in the init step's command.
TASK = f"{__name__}:load"


def summary_line(total_s: float, phases_s: Mapping[str, float]) -> str:
    """pgbench -i's closing line (13+), which pgarena.tools.pgbench.parser reads the load's phases from."""
    phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases_s.items())
    return f"done in {total_s:.2f} s ({phases})."


def load(connect: Callable[[], Any], args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tprocc-load", description="load pgarena's TPROC-C data set")
    parser.add_argument("--warehouses", type=int, required=True)
    parser.add_argument("--parallel", type=int, default=1)
    options = parser.parse_args(args)
    print(f"loading {options.warehouses} warehouse(s) over {options.parallel} connection(s)", flush=True)
    started = time.monotonic()
    phases = load_kit(connect, options.warehouses, options.parallel)
    print(summary_line(time.monotonic() - started, phases), flush=True)
    return 0
