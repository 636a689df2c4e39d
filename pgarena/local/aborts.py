"""StopExecution as AWS applies it, in moto's interpreter: a stopped execution stays ABORTED.

moto's interpreter (moto.stepfunctions.parser) marks the program stopped, but an error that reaches
it afterwards (a stopped worker's SendTaskFailure, a heartbeat timeout) replaces the stop, and the
execution ends FAILED. AWS keeps it ABORTED whatever its tasks answer later, and the EventBridge
rule, finalize_stopped and `pgarena run --aws` act on that status.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped


def _unless_stopped(method: Callable[..., None]) -> Callable[..., None]:
    def guarded(self: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(self._program_state, ProgramStopped):  # the stop stands, as in AWS
            return
        method(self, *args, **kwargs)

    return guarded


@contextmanager
def stops_stand() -> Iterator[None]:
    """While it lasts, an error or a timeout never replaces a stop in moto's interpreter."""
    with (
        patch.object(Environment, "set_error", _unless_stopped(Environment.set_error)),
        patch.object(Environment, "set_timed_out", _unless_stopped(Environment.set_timed_out)),
    ):
        yield
