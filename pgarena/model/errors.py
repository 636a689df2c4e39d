"""Failure kinds: every failure ends as `error.kind` with a message and, where there is one, raw output; `error_info` is
the one place an exception, a tool's exit, a Catch or a driver's text gets its kind."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, field_validator

from pgarena.model.redact import redact


class ErrorInfo(BaseModel):
    kind: str
    message: str
    raw: str | None = None

    @field_validator("message")
    @classmethod
    def _no_secrets(cls, value: str) -> str:
        """Messages quote tools and drivers, which may echo a connection string: never keep its password."""
        return redact(value)

    def cause(self) -> str:
        """The Cause a worker sends with SendTaskFailure, which `error_info(Caught(...))` reads back."""
        return json.dumps({"errorType": self.kind, "errorMessage": self.message[:8000], "raw": self.raw})


class ErrorKind(StrEnum):
    """Every failure kind pgarena reports (`error.kind` in results.json). docs/guide/07-failures.md's table documents
    each one; tests/unit/test_errors.py keeps the two and the state machine's ErrorEquals in step."""

    # Reaching the target (preflight, workers): classified from libpq's and the server's texts
    CONNECTION_REFUSED = "connection_refused"
    CONNECTION_FAILED = "connection_failed"
    DNS_FAILURE = "dns_failure"
    AUTHENTICATION = "authentication"
    TOO_MANY_CLIENTS = "too_many_clients"
    POOLER_REFUSED = "pooler_refused"
    SERVER_CLOSED_CONNECTION = "server_closed_connection"
    SERVER_RESTARTED = "server_restarted"
    STATEMENT_TIMEOUT = "statement_timeout"
    DISK_FULL = "disk_full"
    TIMEOUT = "timeout"
    PREFLIGHT_FAILED = "preflight_failed"
    # Decisions made before any load
    INVALID_MATRIX = "invalid_matrix"
    CAMPAIGN_EXISTS = "campaign_exists"
    BUDGET_REFUSED = "budget_refused"
    COST_CAP_REFUSED = "cost_cap_refused"
    # Workers and the tools they run
    LAUNCH_FAILED = "launch_failed"
    WORKER_DID_NOT_START = "worker_did_not_start"
    WORKER_LOST = "worker_lost"
    WORKER_STOPPED = "worker_stopped"
    WORKER_CRASHED = "worker_crashed"
    TOOL_FAILED = "tool_failed"
    TASK_FAILED = "task_failed"
    # Aggregation: what a step's outcome and summaries add up to
    NOT_RUN = "not_run"
    MISSING_RESULT = "missing_result"
    NO_COMMON_WINDOW = "no_common_window"
    DEGRADED = "degraded"
    CANCELLED = "cancelled"
    EVIDENCE_INCOMPLETE = "evidence_incomplete"


class PgarenaError(Exception):
    """Base of the failures pgarena raises. The class name is the error name Lambda and Step Functions
    report (what the state machine's ErrorEquals match); `kind` is what results.json says."""

    kind: ClassVar[ErrorKind]

    def __init__(self, message: str, raw: str | None = None):
        super().__init__(message)
        self.raw = raw

    def info(self) -> ErrorInfo:
        return error_info(self)


class ConnectionRefused(PgarenaError):
    kind = ErrorKind.CONNECTION_REFUSED


class ConnectionFailed(PgarenaError):
    kind = ErrorKind.CONNECTION_FAILED


class DnsFailure(PgarenaError):
    kind = ErrorKind.DNS_FAILURE


class Authentication(PgarenaError):
    kind = ErrorKind.AUTHENTICATION


class TooManyClients(PgarenaError):
    kind = ErrorKind.TOO_MANY_CLIENTS


class PoolerRefused(PgarenaError):
    kind = ErrorKind.POOLER_REFUSED


class ServerClosedConnection(PgarenaError):
    kind = ErrorKind.SERVER_CLOSED_CONNECTION


class StatementTimeout(PgarenaError):
    kind = ErrorKind.STATEMENT_TIMEOUT


class DiskFull(PgarenaError):
    kind = ErrorKind.DISK_FULL


class Timeout(PgarenaError):
    kind = ErrorKind.TIMEOUT


class PreflightFailed(PgarenaError):
    kind = ErrorKind.PREFLIGHT_FAILED


class InvalidMatrix(PgarenaError):
    kind = ErrorKind.INVALID_MATRIX


class CampaignExists(PgarenaError):
    """The campaign id already has results, a plan or items: a second campaign under it would overwrite them."""

    kind = ErrorKind.CAMPAIGN_EXISTS


class BudgetRefused(PgarenaError):
    kind = ErrorKind.BUDGET_REFUSED


class LaunchFailed(PgarenaError):
    kind = ErrorKind.LAUNCH_FAILED


# The exception raised for each kind that is raised (the others are recorded, never raised).
RAISED: dict[ErrorKind, type[PgarenaError]] = {cls.kind: cls for cls in PgarenaError.__subclasses__()}


def error_name(kind: ErrorKind | str) -> str:
    """The Error a state's Catch and Retry match for a kind: its exception's name (ConnectionRefused), as
    a Lambda function raising it reports it; a worker answering a task token sends the same."""
    return "".join(part.capitalize() for part in str(kind).split("_"))


def failure(kind: ErrorKind | str, message: str, raw: str | None = None) -> PgarenaError:
    """The exception of a kind (`error_info(text, ...).kind` picks one from a tool's or driver's text)."""
    return RAISED[ErrorKind(kind)](message, raw)


# Ordered: the first pattern found in the output names the kind. Texts are libpq's and the server's.
_PATTERNS: list[tuple[ErrorKind, str]] = [
    (ErrorKind.DNS_FAILURE, r"could not translate host name|Name or service not known|nodename nor servname|getaddrinfo"),
    (
        ErrorKind.AUTHENTICATION,
        r"password authentication failed|no password supplied|authentication failed|no pg_hba\.conf entry",
    ),
    # pgbouncer's refusal: its client limit, not the server's (before too_many_clients, which pgpool's resembles)
    (ErrorKind.POOLER_REFUSED, r"no more connections allowed \(max_client_conn\)|max_client_conn"),
    (
        ErrorKind.TOO_MANY_CLIENTS,
        r"too many clients already|remaining connection slots are reserved|too many connections for (role|database)",
    ),
    (ErrorKind.CONNECTION_REFUSED, r"Connection refused|could not connect to server|connection to server .* failed: (?!FATAL)"),
    (
        ErrorKind.SERVER_CLOSED_CONNECTION,
        r"server closed the connection unexpectedly|terminating connection due to administrator command|the database system is (shutting down|in recovery mode|starting up)",
    ),
    (ErrorKind.STATEMENT_TIMEOUT, r"canceling statement due to statement timeout"),
    (ErrorKind.DISK_FULL, r"No space left on device|could not extend file"),
    (ErrorKind.TIMEOUT, r"timeout expired|timed out"),
]


# What to do about a kind, added to its message where a tool's or driver's text named it.
HINTS: dict[ErrorKind, str] = {
    ErrorKind.POOLER_REFUSED: "a connection pooler refused the clients (its max_client_conn): declare it in the "
    'target\'s "pooler" (kind, max_client_connections) so the budget counts its limit, or raise max_client_conn',
    ErrorKind.AUTHENTICATION: "check the endpoint's user and its password reference (password_env locally, "
    "password_secret_arn in AWS)",
}


def with_hint(kind: ErrorKind | str, message: str) -> str:
    """The message with what to do about its kind, once."""
    hint = HINTS.get(ErrorKind(kind)) if kind in ErrorKind._value2member_map_ else None
    return f"{message}; {hint}" if hint and hint not in message else message


def _classify(text: str) -> ErrorKind | None:
    """The failure kind named by a tool's or driver's error text, or None when nothing matches."""
    for kind, pattern in _PATTERNS:
        if re.search(pattern, text, flags=re.IGNORECASE):
            return kind
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_STATES_ERRORS = {
    "States.Timeout": ErrorKind.TIMEOUT,
    "States.HeartbeatTimeout": ErrorKind.WORKER_LOST,
    "States.TaskFailed": ErrorKind.TASK_FAILED,
}

# A tool the worker killed at the step's timeout exits with this code (SIGKILL).
KILLED = -9
# How many of the tool's last error lines go into an error message.
ERROR_LINES = 3

STOPPED_MESSAGE = (
    "the worker was stopped (SIGTERM: StopTask for a cancelled campaign, a Fargate Spot interruption) while its step ran"
)


class WorkerStopped(BaseException):
    """SIGTERM arrived in a worker. A BaseException, so that no `except Exception` on the way swallows it;
    `raw` is the tool's output until then, once uploaded."""

    kind: ClassVar[ErrorKind] = ErrorKind.WORKER_STOPPED

    def __init__(self, raw: str | None = None):
        super().__init__(STOPPED_MESSAGE)
        self.raw = raw


@dataclass(frozen=True)
class ToolExit:
    """How a benchmark tool ended: its exit code, all it printed, and the error lines its parser picked out."""

    tool: str
    exit_code: int
    output: str
    error_lines: Sequence[str] = ()
    timeout_s: int = 0


@dataclass(frozen=True)
class Caught:
    """What a state's Catch put in `$.failure` ({"Error", "Cause"}), whichever service raised it.
    `worker_timeouts_s` (heartbeat timeout, step timeout) is set for a worker's step that wrote no summary."""

    failure: Mapping[str, Any]
    worker_timeouts_s: tuple[int, int] | None = None


Failure = BaseException | ToolExit | Caught | str


def error_info(failure: Failure, otherwise: ErrorKind = ErrorKind.WORKER_CRASHED, message: str | None = None) -> ErrorInfo:
    """The one place a failure gets its kind. `failure` is an exception, a tool's exit, a state machine's Catch,
    or a driver's error text. `otherwise` is the kind of an exception pgarena did not raise (a crash) or of a
    text no pattern names; `message`, what to say about a text instead of the text itself."""
    if isinstance(failure, ToolExit):
        return _tool_exit(failure)
    if isinstance(failure, Caught):
        return _caught(failure)
    if isinstance(failure, WorkerStopped | PgarenaError):
        return ErrorInfo(kind=failure.kind, message=str(failure), raw=failure.raw)
    if isinstance(failure, BaseException):
        return ErrorInfo(kind=otherwise, message=f"{type(failure).__name__}: {failure}")
    kind = _classify(failure) or otherwise
    return ErrorInfo(kind=kind, message=with_hint(kind, message or failure))


def _tool_exit(exit: ToolExit) -> ErrorInfo:
    if exit.exit_code == KILLED:
        return ErrorInfo(
            kind=ErrorKind.TIMEOUT, message=f"{exit.tool} ran past the step's {exit.timeout_s} s timeout and was killed"
        )
    lines = list(exit.error_lines) or [line for line in exit.output.splitlines() if line.strip()]
    message = " | ".join(lines[-ERROR_LINES:]) or f"{exit.tool} exited with code {exit.exit_code}"
    return error_info(exit.output, ErrorKind.TOOL_FAILED, message)


def _caught(caught: Caught) -> ErrorInfo:
    name = str(caught.failure.get("Error") or "Error")
    cause = caught.failure.get("Cause") or ""
    message, raw = cause, None
    try:
        decoded = json.loads(cause)
    except (TypeError, ValueError):
        decoded = None
    if isinstance(decoded, dict):
        name = str(decoded.get("errorType") or name)
        message = str(decoded.get("errorMessage") or message)
        raw = decoded.get("raw")
    if name in _STATES_ERRORS:
        kind: str = _STATES_ERRORS[name]
        message = message or name
    else:
        kind = _snake(name.split(".")[-1])
    if caught.worker_timeouts_s is not None and name in _STATES_ERRORS and kind in (ErrorKind.TIMEOUT, ErrorKind.WORKER_LOST):
        # The state machine stopped waiting and the worker never wrote a summary (a live worker writes
        # one even when its tool times out): the worker was lost. moto reports a missed heartbeat as
        # States.Timeout, AWS as States.HeartbeatTimeout. (A stopped task's WorkerLost, sent at once by
        # task_stopped, keeps its own message: ECS's reason.)
        heartbeat_s, timeout_s = caught.worker_timeouts_s
        return ErrorInfo(
            kind=ErrorKind.WORKER_LOST,
            message=(
                f"the worker stopped reporting ({message or name}: no heartbeat for {heartbeat_s} s or "
                f"past the step's {timeout_s} s) and wrote no summary: killed, out of memory, or its host gone"
            ),
        )
    return ErrorInfo(kind=kind, message=message or name, raw=raw)
