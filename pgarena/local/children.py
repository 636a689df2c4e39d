"""Nothing outlives its coordinator: every process the local runtime starts for a campaign (a worker, an
embedded postmaster) is recorded in the campaign's folder (children.jsonl: pid, start time, program),
so that the next `run --local` or `resume` stops what a coordinator that died without stopping them
(SIGKILL, a crash, a power cut of the terminal) left running. The parent-death signal
(pgarena.system.processes) usually got there first; this is for what it cannot reach (a container, a
process that ignored it, a platform without it).

Only a process whose pid, start time, program and owner all match the record is signalled: a pid reused
since is never touched. A folder whose coordinator still runs is another live campaign's, and left alone.

The records are trusted only as far as who could have written them: a children.jsonl (and its campaign
folder) must be this user's and writable by no one else, or any user who can write in the --out folder
(or hands a folder to `resume`) would make root kill a process of their choosing. A container is removed
only when it carries pgarena's label naming the record's coordinator (pgarena.local.containers).
"""

from __future__ import annotations

import logging
import os
import signal
import stat
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from pgarena.local.containers import COORDINATOR_LABEL, coordinator_label
from pgarena.model.process import ChildRecord
from pgarena.system.processes import identity, is_running, me, program

log = logging.getLogger(__name__)

CHILDREN_FILE = "children.jsonl"
# How each kind of child is stopped: a worker with its process group (the tool it runs), a postmaster
# by immediate shutdown (it takes its backends down itself), a delay proxy (pgarena.local.delay_proxy) at once.
STOP_SIGNAL = {"worker": signal.SIGKILL, "postmaster": signal.SIGQUIT, "proxy": signal.SIGKILL}
DOCKER_RM_TIMEOUT_S = 60
MAX_RECORDS_BYTES = 16 * 1024 * 1024  # thousands of workers' records; a larger file is not read whole


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=DOCKER_RM_TIMEOUT_S, check=False)


def remove_labelled_container(name: str, label: str, docker: Callable[..., subprocess.CompletedProcess[str]] = _docker) -> bool:
    """Remove container `name` if, and only if, it carries pgarena's coordinator label with the value `label`."""
    try:
        inspected = docker(
            "inspect", "--type", "container", "--format", f'{{{{index .Config.Labels "{COORDINATOR_LABEL}"}}}}', name
        )
        if inspected.returncode != 0 or inspected.stdout.strip() != label:
            return False  # gone, or not a container pgarena started for that coordinator
        return docker("rm", "--force", name).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def owner(pid: int) -> int | None:
    """The uid a process runs as (its /proc entry's owner), None when there is none."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def trusted(path: Path, info: os.stat_result) -> str | None:
    """Why a record file or folder may not be acted on (None: it may): another user's, or writable by others."""
    if info.st_uid != os.geteuid():
        return f"{path} is owned by uid {info.st_uid}, not by this user"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by other users"
    return None


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
                "uid": owner(pid),
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


def _read_trusted(path: Path) -> str | None:
    """The file's text if it and its folder are this user's and no one else may write them; else None, logged."""
    try:
        folder = os.lstat(path.parent)  # lstat: a symlink planted in the folder's place is not followed
        refused = trusted(path.parent, folder) if stat.S_ISDIR(folder.st_mode) else f"{path.parent} is not a folder"
        if refused is None:
            # O_NOFOLLOW: a symlink planted in the file's place is refused; fstat: the file read is the file checked.
            with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as handle:
                info = os.fstat(handle.fileno())
                refused = trusted(path, info) if stat.S_ISREG(info.st_mode) else f"{path} is not a regular file"
                if refused is None:
                    return handle.read(MAX_RECORDS_BYTES).decode(errors="replace")
    except OSError as error:
        refused = f"cannot read it: {error.strerror}"
    log.warning("ignored %s: %s", path, refused)
    return None


def _records(path: Path) -> list[ChildRecord] | None:
    """The records of a file this user may act on; None for one another user could have written."""
    text = _read_trusted(path)
    if text is None:
        return None
    records = []
    for line in text.splitlines():
        try:
            records.append(ChildRecord.model_validate_json(line))
        except ValidationError:  # a line cut by a crash mid-write, or damage: it names no process to stop
            log.warning("ignored a damaged line of %s", path)
    return records


def _stop(record: ChildRecord, kill: Callable[[int, int], None], killpg: Callable[[int, int], None]) -> bool:
    """Signal the recorded process if it is the very one that was recorded; True if it was."""
    pid = record.process.pid
    if record.process.host != me().host or not is_running(record.process) or program(pid) != record.program:
        return False
    if record.uid is not None and owner(pid) != record.uid:
        return False  # the same pid and start yet another owner: not the process recorded
    try:
        (killpg if record.group else kill)(pid, STOP_SIGNAL[record.what])
    except ProcessLookupError:  # it ended meanwhile
        return False
    return True


def reap(
    out_dir: Path,
    kill: Callable[[int, int], None] = os.kill,
    killpg: Callable[[int, int], None] = os.killpg,
    remove_container: Callable[[str, str], bool] = remove_labelled_container,
) -> list[str]:
    """Stop what dead coordinators left running in the campaign folders under `out_dir`; one message per
    process (or container) stopped. A folder whose coordinator still runs is left as it is, and so is a
    record file another user could have written."""
    messages = []
    for path in sorted(out_dir.glob(f"*/{CHILDREN_FILE}")):
        records = _records(path)
        if records is None:
            continue  # not ours to act on, nor to delete
        coordinators = {r.coordinator.model_dump_json(): r.coordinator for r in records}.values()
        if any(is_running(c) for c in coordinators):
            continue
        for record in records:
            why = f"left running by campaign {record.campaign_id}, whose coordinator (pid {record.coordinator.pid}) is gone"
            if _stop(record, kill, killpg):
                messages.append(f"stopped {record.what} pid {record.process.pid} ({record.program}) {why}")
            if record.container and remove_container(record.container, coordinator_label(record.coordinator)):
                messages.append(f"removed container {record.container} {why}")
        path.unlink(missing_ok=True)
    return messages
