"""A tool's step that runs SQL itself (a data set's loader written in Python: TPROC-C's), as a process the
worker runs like any tool: `python -m pgarena.worker.sql_task <module>:<function> [args...]`.

The function, in a tool's package, is called as `function(connect, args) -> exit code`: `connect()` opens a
connection to the step's target as every server read opens one (pgarena.server.postgres: TLS as sslmode
asks, failures classified), from libpq's environment that the tool's command sets (PGHOST, PGPORT, PGUSER,
PGDATABASE, PGSSLMODE, PGSSLROOTCERT, PGPASSWORD, PGAPPNAME), so the password never reaches the command
line. Each connection is in DB-API's default mode, autocommit off: the task commits. Its output is the step's
raw output; connections it leaves open are closed when it returns. It is
named by the tool's command and imported by name, so that the worker names no tool."""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Literal, cast

import pg8000.dbapi

from pgarena.model.matrix import Endpoint
from pgarena.server.postgres import describe, open_connection

PASSWORD_ENV = "PGPASSWORD"
# Only a tool's own code is run: the module comes from its command, never from a matrix.
TOOLS_PACKAGE = "pgarena.tools."
SslMode = Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]
Task = Callable[[Callable[[], pg8000.dbapi.Connection], list[str]], int]


def endpoint_of(env: Mapping[str, str]) -> Endpoint:
    """The target as libpq's environment names it; the password stays in the environment (password_env)."""
    return Endpoint(
        host=env["PGHOST"],
        port=int(env.get("PGPORT", "5432")),
        dbname=env.get("PGDATABASE", "postgres"),
        user=env["PGUSER"],
        sslmode=cast(SslMode, env.get("PGSSLMODE", "prefer")),
        sslrootcert=env.get("PGSSLROOTCERT"),
        password_env=PASSWORD_ENV if PASSWORD_ENV in env else None,
    )


class Connections:
    """Opens the task's connections (from its threads, too) and closes whichever are still open at the end."""

    def __init__(self, endpoint: Endpoint, application_name: str) -> None:
        self.endpoint, self.application_name = endpoint, application_name
        self.opened: list[pg8000.dbapi.Connection] = []
        self.lock = threading.Lock()

    def open(self) -> pg8000.dbapi.Connection:
        conn = open_connection(self.endpoint, self.application_name)
        conn.autocommit = False  # DB-API's default: the task commits what belongs together (a warehouse's rows)
        with self.lock:
            self.opened.append(conn)
        return conn

    def close(self) -> None:
        for conn in self.opened:
            with suppress(Exception):  # closed already by the task
                conn.close()


def task_of(reference: str) -> Task:
    """`module:function` in a tool's package."""
    module, _, function = reference.partition(":")
    if not module.startswith(TOOLS_PACKAGE) or not function:
        raise ValueError(f"{reference!r}: not a task of a tool's package ({TOOLS_PACKAGE}<tool>...:<function>)")
    return cast(Task, getattr(importlib.import_module(module), function))


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    reference, *args = list(argv if argv is not None else sys.argv[1:]) or [""]
    environ = env if env is not None else os.environ
    task = task_of(reference)
    connections = Connections(endpoint_of(environ), environ.get("PGAPPNAME", "pgarena"))
    try:
        return task(connections.open, args)
    except Exception as error:  # whatever stopped the task is its output's last line, and its exit code 1
        print(f"error: {describe(error)}", file=sys.stderr, flush=True)
        return 1
    finally:
        connections.close()


if __name__ == "__main__":
    sys.exit(main())
