"""Failure kinds: every failure ends as `error.kind` with a message and, where there is one, raw output."""

from __future__ import annotations

import json
import re
from typing import Any

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


class PgarenaError(Exception):
    """Base of the failures pgarena reports; the class name is the Step Functions error name."""

    kind = "error"

    def __init__(self, message: str, raw: str | None = None):
        super().__init__(message)
        self.raw = raw

    def info(self) -> ErrorInfo:
        return ErrorInfo(kind=self.kind, message=str(self), raw=self.raw)


class BudgetRefused(PgarenaError):
    kind = "budget_refused"


class InvalidMatrix(PgarenaError):
    kind = "invalid_matrix"


_CLASSES: dict[str, type[PgarenaError]] = {"budget_refused": BudgetRefused, "invalid_matrix": InvalidMatrix}


def failure(kind: str, message: str, raw: str | None = None) -> PgarenaError:
    """An exception whose class name (the error name Lambda and Step Functions report) spells its kind."""
    if kind not in _CLASSES:
        name = "".join(part.capitalize() for part in kind.split("_"))
        _CLASSES[kind] = type(name, (PgarenaError,), {"kind": kind})
    return _CLASSES[kind](message, raw)


# Ordered: the first pattern found in the output names the kind. Texts are libpq's and the server's.
_PATTERNS: list[tuple[str, str]] = [
    ("dns_failure", r"could not translate host name|Name or service not known|nodename nor servname|getaddrinfo"),
    ("authentication", r"password authentication failed|no password supplied|authentication failed|no pg_hba\.conf entry"),
    (
        "too_many_clients",
        r"too many clients already|remaining connection slots are reserved|too many connections for (role|database)",
    ),
    ("connection_refused", r"Connection refused|could not connect to server|connection to server .* failed: (?!FATAL)"),
    (
        "server_closed_connection",
        r"server closed the connection unexpectedly|terminating connection due to administrator command|the database system is (shutting down|in recovery mode|starting up)",
    ),
    ("statement_timeout", r"canceling statement due to statement timeout"),
    ("disk_full", r"No space left on device|could not extend file"),
    ("timeout", r"timeout expired|timed out"),
]


def classify(text: str) -> str | None:
    """The failure kind named by a tool's or driver's error text, or None when nothing matches."""
    for kind, pattern in _PATTERNS:
        if re.search(pattern, text, flags=re.IGNORECASE):
            return kind
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_STATES_ERRORS = {
    "States.Timeout": "timeout",
    "States.HeartbeatTimeout": "worker_lost",
    "States.TaskFailed": "task_failed",
}


def from_step_functions(failure: dict[str, Any] | None) -> ErrorInfo | None:
    """Turn a Catch result ({Error, Cause}) into an ErrorInfo, whichever service raised it."""
    if not failure:
        return None
    name = str(failure.get("Error") or "Error")
    cause = failure.get("Cause") or ""
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
        kind = _STATES_ERRORS[name]
        message = message or name
    else:
        kind = _snake(name.split(".")[-1])
    return ErrorInfo(kind=kind, message=message or name, raw=raw)
