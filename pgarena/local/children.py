"""Nothing outlives its coordinator: every process the local runtime starts for a campaign (a worker, an
embedded postmaster) is recorded in the campaign's folder (children.jsonl: pid, start time, program),
so that the next `run --local` or `resume` stops what a coordinator that died without stopping them
(SIGKILL, a crash, a power cut of the terminal) left running. The parent-death signal
(pgarena.system.processes) usually got there first; this is for what it cannot reach (a container, a
process that ignored it, a platform without it).

Only a process whose pid, start time and program all match the record is signalled: a pid reused since
is never touched. A folder whose coordinator still runs is another live campaign's, and left alone.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from pgarena.model.process import ChildRecord
from pgarena.system.processes import identity, is_running, me, program

log = logging.getLogger(__name__)

CHILDREN_FILE = "children.jsonl"
# How each kind of child is stopped: a worker with its process group (the tool it runs), a postmaster
# by immediate shutdown (it takes its backends down itself), a delay proxy (pgarena.local.delay_proxy) at once.
STOP_SIGNAL = {"worker": signal.SIGKILL, "postmaster": signal.SIGQUIT, "proxy": signal.SIGKILL}
DOCKER_RM_TIMEOUT_S = 60


def _remove_container(name: str) -> bool:
    try:
        done = subprocess.run(
            ["docker", "rm", "--force", name], capture_output=True, text=True, timeout=DOCKER_RM_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class Children:
    """The processes this coordinator started, appended to each campaign folder's children.jsonl as they start."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self.coordinator = me()
        self.files: set[Path] = set()
        self.lock = threading.Lock()

    def add(self, campaign_id: str, what: str, pid: int, group: bool = False, container: str | None = None) -> None:
        process = identity(pid)
        if process is None or not campaign_id or "/" in campaign_id or campaign_id.startswith("."):
            return  # gone already, or no campaign folder to record it in
        record = ChildRecord.model_validate(
            {
                "what": what,
                "campaign_id": campaign_id,
                "process": process,
                "coordinator": self.coordinator,
                "program": program(pid) or "",
                "group": group,
                "container": container,
            }
        )
        path = self.out_dir / campaign_id / CHILDREN_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.lock:
            # One write of one line, appended: concurrent workers' records never interleave.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, (record.model_dump_json() + "\n").encode())
            finally:
                os.close(fd)
            self.files.add(path)

    def close(self) -> None:
        """Every child was stopped with the runtime: nothing left for a later run to reap."""
        with self.lock:
            for path in self.files:
                path.unlink(missing_ok=True)
            self.files.clear()


def _records(path: Path) -> list[ChildRecord]:
    records = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as error:
        log.warning("cannot read %s: %s", path, error.strerror)
        return []
    for line in lines:
        try:
            records.append(ChildRecord.model_validate_json(line))
        except ValidationError:  # a line cut by a crash mid-write, or damage: it names no process to stop
            log.warning("ignored a damaged line of %s", path)
    return records


def _stop(record: ChildRecord, kill: Callable[[int, int], None], killpg: Callable[[int, int], None]) -> bool:
    """Signal the recorded process if it is the very one that was recorded; True if it was."""
    pid = record.process.pid
    if not is_running(record.process) or program(pid) != record.program:
        return False
    try:
        (killpg if record.group else kill)(pid, STOP_SIGNAL[record.what])
    except ProcessLookupError:  # it ended meanwhile
        return False
    return True


def reap(
    out_dir: Path,
    kill: Callable[[int, int], None] = os.kill,
    killpg: Callable[[int, int], None] = os.killpg,
    remove_container: Callable[[str], bool] = _remove_container,
) -> list[str]:
    """Stop what dead coordinators left running in the campaign folders under `out_dir`; one message per
    process (or container) stopped. A folder whose coordinator still runs is left as it is."""
    messages = []
    for path in sorted(out_dir.glob(f"*/{CHILDREN_FILE}")):
        records = _records(path)
        coordinators = {r.coordinator.model_dump_json(): r.coordinator for r in records}.values()
        if any(is_running(c) for c in coordinators):
            continue
        for record in records:
            why = f"left running by campaign {record.campaign_id}, whose coordinator (pid {record.coordinator.pid}) is gone"
            if _stop(record, kill, killpg):
                messages.append(f"stopped {record.what} pid {record.process.pid} ({record.program}) {why}")
            if record.container and remove_container(record.container):
                messages.append(f"removed container {record.container} {why}")
        path.unlink(missing_ok=True)
    return messages
