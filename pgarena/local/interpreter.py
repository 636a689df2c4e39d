"""moto's Step Functions interpreter made to behave as AWS does where a campaign meets the difference.

- StopExecution: moto marks the program stopped, but an error that reaches it afterwards (a stopped
  worker's SendTaskFailure, a heartbeat timeout) replaces the stop, and the execution ends FAILED.
  AWS keeps it ABORTED whatever its tasks answer later, and the EventBridge rule, finalize_stopped and
  `pgarena run --aws` act on that status.
- Early heartbeats: AWS accepts SendTaskHeartbeat for a task token from the moment the task is
  scheduled. moto creates the token before invoking the Lambda but sets up the heartbeat wait only
  after the invocation returned, and refuses a beat in between with InvalidToken. A worker beats as
  soon as it starts; on a loaded machine it can start and beat before the launching Lambda's answer
  has reached the interpreter, and a refused beat means "the state machine gave this step up" to
  the worker, which then stops itself: a repetition lost for nothing. Likewise a step that ends
  (SendTaskSuccess) before that wait begins is answered at once, not after a heartbeat timeout.
- SendTaskFailure's cause: moto's API layer passes the error on to the interpreter and drops the cause;
  AWS puts both in the TaskFailed event a Catch reads (a worker that did not start is told by its cause).
- A stopped execution's Map iterations: moto aborts each with the stop's error string where its event
  details hold a dict (`executionFailedEventDetails=ProgramStopped.error`); the Catch reading it then
  raised `AttributeError('str' object has no attribute 'get')` and every interpreter component on the way
  up logged its whole parse tree (~1,650 lines on a Ctrl-C). The string is made the dict AWS would give,
  and the interpreter's own error log, which repeats what the execution's history records, is kept quiet.
- GetExecutionHistory's pages: moto answers the whole history, oldest first, whatever reverseOrder,
  maxResults and nextToken say; AWS answers one page (100 events unless told, at most 1,000) in the order
  asked. The runtime follows its execution by the newest events (pgarena.remote.follow): with moto's
  answer each poll serialized the whole history, a cost that grew with every step.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from moto.core.responses import ActionResult, EmptyResult
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint, HeartbeatEndpoint
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
from moto.stepfunctions.responses import StepFunctionResponse


def _unless_stopped(method: Callable[..., None]) -> Callable[..., None]:
    def guarded(self: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(self._program_state, ProgramStopped):  # the stop stands, as in AWS
            return
        method(self, *args, **kwargs)

    return guarded


def _accept_early_heartbeat(method: Callable[[CallbackEndpoint], bool]) -> Callable[[CallbackEndpoint], bool]:
    def beat(self: CallbackEndpoint) -> bool:
        if self._heartbeat_endpoint is None:  # the task is scheduled, its wait not yet begun: nothing to extend
            return True
        return method(self)

    return beat


def _answered_at_once(
    method: Callable[[CallbackEndpoint, int], HeartbeatEndpoint],
) -> Callable[[CallbackEndpoint, int], HeartbeatEndpoint]:
    def setup(self: CallbackEndpoint, heartbeat_seconds: int) -> HeartbeatEndpoint:
        wait = method(self, heartbeat_seconds)
        if self.get_outcome() is not None:  # the task answered before its wait began
            wait.notify()  # type: ignore[no-untyped-call]  # moto leaves it unannotated
        return wait

    return setup


def _send_task_failure_with_cause(self: StepFunctionResponse) -> Any:
    # The interpreter's backend (execute_state_machine) takes the cause; moto's handler leaves it out.
    self.stepfunction_backend.send_task_failure(  # type: ignore[call-arg]  # the parser backend's signature
        self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
    )
    return EmptyResult()


def _details_as_dicts(init: Callable[..., None]) -> Callable[..., None]:
    def normalised(self: FailureEvent, env: Environment, error_name: Any, event_type: Any, event_details: Any = None) -> None:
        if event_details:  # {"executionFailedEventDetails": "Cancelled"} -> {"executionFailedEventDetails": {"error": ...}}
            event_details = {
                kind: (details if isinstance(details, dict) else {"error": details} if details else {})
                for kind, details in event_details.items()
            }
        init(self, env, error_name, event_type, event_details)

    return normalised


# The interpreter's components log each failure with their whole parse tree; the history has the failure.
INTERPRETER_LOGGER = "moto.stepfunctions.parser"


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


# GetExecutionHistory's page when maxResults is not given, and its largest.
HISTORY_DEFAULT_PAGE, HISTORY_MAX_PAGE = 100, 1000


def history_page(events: list[Any], reverse: bool, max_results: int | None, token: str | None) -> dict[str, Any]:
    """One page of a history (oldest first) as GetExecutionHistory answers it. The next page's token is where
    it starts in the history, which only grows at its end: pages read while events are added neither skip
    nor repeat one (newest first, a token counted from the newest would)."""
    size = min(max_results or HISTORY_DEFAULT_PAGE, HISTORY_MAX_PAGE)
    if reverse:
        end = len(events) if token is None else int(token)
        start = max(end - size, 0)
        page: dict[str, Any] = {"events": events[start:end][::-1]}
        if start > 0:
            page["nextToken"] = str(start)
        return page
    start = int(token or 0)
    page = {"events": events[start : start + size]}
    if start + size < len(events):
        page["nextToken"] = str(start + size)
    return page


def _events(execution: Any) -> list[Any]:
    """The execution's events as they stand, not copied: moto's own reader deep-copies the whole history
    (under the lock the interpreter takes to add an event) where a page is all that is answered."""
    env = execution.exec_worker.env if execution.exec_worker is not None else None
    if env is None:  # not started yet
        return []
    manager = env.event_manager
    with manager._mutex:  # moto's EventManager keeps both private
        return list(manager._history_event_list)


def _get_execution_history_paged(self: StepFunctionResponse) -> Any:
    events = _events(self.stepfunction_backend.describe_execution(self._get_param("executionArn")))
    page = history_page(
        events, bool(self._get_param("reverseOrder")), self._get_param("maxResults"), self._get_param("nextToken")
    )
    return ActionResult({**page, "events": copy.deepcopy(page["events"])})


@contextmanager
def as_aws() -> Iterator[None]:
    """While it lasts, a stop stands whatever comes after it, a task's heartbeats and answer count from its
    scheduling, the history is read a page at a time, and a stop aborts the Map iterations quietly."""
    with (
        patch.object(Environment, "set_error", _unless_stopped(Environment.set_error)),
        patch.object(Environment, "set_timed_out", _unless_stopped(Environment.set_timed_out)),
        patch.object(CallbackEndpoint, "notify_heartbeat", _accept_early_heartbeat(CallbackEndpoint.notify_heartbeat)),
        patch.object(CallbackEndpoint, "setup_heartbeat_endpoint", _answered_at_once(CallbackEndpoint.setup_heartbeat_endpoint)),
        patch.object(StepFunctionResponse, "send_task_failure", _send_task_failure_with_cause),
        patch.object(StepFunctionResponse, "get_execution_history", _get_execution_history_paged),
        patch.object(FailureEvent, "__init__", _details_as_dicts(FailureEvent.__init__)),
        _quiet(INTERPRETER_LOGGER),
    ):
        yield
