"""One run of a step's tool: its output streamed to the raw file (secrets masked) and echoed, uploaded
every so often while it runs, and the tool killed at its timeout or when the worker stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aws_lambda_powertools import Logger

from pgarena.campaign.ports import ToolProcesses
from pgarena.campaign.step.worker import UPLOAD_EVERY_S
from pgarena.model.errors import KILLED
from pgarena.model.redact import Redactor

logger = Logger(service="pgarena-worker")


@dataclass(frozen=True)
class ToolRun:
    argv: list[str]
    env: dict[str, str]  # the tool's whole environment
    raw_path: Path
    timeout_s: float
    redactor: Callable[[str], str] = field(default_factory=Redactor)
    on_chunk: Callable[[], object] | None = None  # uploads the raw output so far
    upload_every_s: float = UPLOAD_EVERY_S


def run_tool(processes: ToolProcesses, run: ToolRun) -> int:
    """Run the tool with stdout and stderr merged into raw_path (secrets masked), echoing lines as they come;
    its exit code, KILLED past its timeout.

    Anything raised while it runs (the worker stopped by SIGTERM) kills the tool first: no orphan keeps
    loading the target after its worker is gone."""
    last_upload = time.monotonic()
    deadline = time.monotonic() + run.timeout_s
    with run.raw_path.open("w") as raw, processes.start(run.argv, run.env) as proc:
        killer = threading.Timer(run.timeout_s, proc.kill)
        killer.start()
        try:
            for line in proc.lines():
                line = run.redactor(line)
                raw.write(line)
                raw.flush()
                print(line, end="", flush=True)
                if run.on_chunk and time.monotonic() - last_upload > run.upload_every_s:
                    _upload_chunk(run.on_chunk)
                    last_upload = time.monotonic()
            code = proc.wait()
        except BaseException:
            proc.kill()
            raise
        finally:
            killer.cancel()
    if time.monotonic() > deadline:
        return KILLED
    return code


def _upload_chunk(on_chunk: Callable[[], object]) -> None:
    try:
        on_chunk()
    except Exception as error:  # a missed chunk is not fatal: the next one, or the final upload, carries it
        logger.warning("raw output chunk not uploaded", error=str(error))
