"""The tool process port on subprocess: a child that dies with its worker, stdout and stderr merged."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from pgarena.campaign.ports import ToolProcess
from pgarena.system.processes import die_with_parent
from pgarena.tools.runner import tool_environment


class _Child:
    def __init__(self, proc: subprocess.Popen[str]):
        self.proc = proc

    def lines(self) -> Iterator[str]:
        assert self.proc.stdout is not None  # started with stdout=PIPE
        return iter(self.proc.stdout)

    def wait(self) -> int:
        return self.proc.wait()

    def kill(self) -> None:
        self.proc.kill()


class Subprocesses:
    @contextmanager
    def start(self, argv: list[str], env: dict[str, str]) -> Iterator[ToolProcess]:
        # The tool dies with the worker, even a SIGKILLed one (the thread that started it waits on it).
        with subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
            bufsize=1,
            preexec_fn=die_with_parent(signal.SIGKILL),
        ) as proc:
            yield _Child(proc)

    def version(self, binary: str) -> str | None:
        try:
            return (
                subprocess.run(
                    [binary, "--version"], capture_output=True, text=True, timeout=10, env=tool_environment({})
                ).stdout.strip()
                or None
            )
        except OSError:
            return None
