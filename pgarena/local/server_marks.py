"""Marks of the embedded servers' OS users and data directories, so that those of a coordinator killed
before it could remove them (kill -9, a crash, a power cut) are removed by the next run or `resume`.

Each server is marked before its user or folder is made: a JSON file in a folder only this user may write
(as root, `/var/lib/pgarena/servers`, 0700), naming the user (a `pgarena-<hex>` system user whose comment
is pgarena's), the server's folder and the process that made them. A mark whose maker is gone is reaped:
the user's leftover processes killed, the user and its group removed, the folder deleted, the mark last.
Only what a mark names is touched, and only a user with pgarena's comment and a folder named pgarena-*.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import shutil
import signal
import stat
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from pgarena.local.server_binaries import RUNTIME_ROOT, RUNTIME_ROOT_ENV
from pgarena.local.server_users import COMMENT, USER_PREFIX, ServerUser, remove_server_user
from pgarena.model.process import ProcessIdentity
from pgarena.system.processes import is_running, me

log = logging.getLogger(__name__)

MARKS_DIR = "servers"
DIR_PREFIX = "pgarena-"
MAX_MARK_BYTES = 64 * 1024
GONE_WAIT_S = 30  # a postmaster told to quit by its parent's death ends within a second or two; generous
GONE_POLL_S = 0.1


class ServerMark(BaseModel):
    """What one embedded server made on this machine, and who made it."""

    user: str | None = None  # the server's OS user (as root only)
    folder: str
    maker: ProcessIdentity


def marks_dir() -> Path:
    """This user's own folder of marks, 0700: root's under /var/lib/pgarena (or PGARENA_RUNTIME_DIR), any
    other user's under their runtime folder (XDG_RUNTIME_DIR) or the temporary one, named by their uid."""
    if os.geteuid() == 0:
        folder = Path(os.environ.get(RUNTIME_ROOT_ENV) or RUNTIME_ROOT) / MARKS_DIR
    else:
        base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
        folder = Path(base) / f"pgarena-servers-{os.geteuid()}"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(folder)  # lstat: a symlink planted in its place is refused, not followed
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise OSError(f"{folder} must be a folder of uid {os.geteuid()} that only it may open (mode 700): remove it")
    return folder


def mark(folder: Path, user: str | None) -> Path:
    """Mark a server's folder and user (not made yet, or just made) as this process's; returns the mark."""
    path = marks_dir() / f"{folder.name}.json"
    data = ServerMark(user=user, folder=str(folder), maker=me()).model_dump_json().encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path


def unmark(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)


def _read(path: Path) -> ServerMark | None:
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
                return None
            return ServerMark.model_validate_json(handle.read(MAX_MARK_BYTES))
    except (OSError, ValidationError, json.JSONDecodeError):
        return None


def _processes_of(uid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:  # ended meanwhile
                continue
    return pids


def _server_user(name: str) -> pwd.struct_passwd | None:
    """The OS user if it is one pgarena made for a server (its comment says so); None otherwise."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None  # never made, or removed already
    if not name.startswith(USER_PREFIX) or entry.pw_gecos != COMMENT or entry.pw_uid == 0:
        log.warning("left user %s alone: not a user pgarena made for a server", name)
        return None
    return entry


def _kill_processes(entry: pwd.struct_passwd) -> None:
    """The server's postmaster and backends, which nothing else runs as: gone before its folder and user."""
    deadline = time.monotonic() + GONE_WAIT_S
    while (pids := _processes_of(entry.pw_uid)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(GONE_POLL_S)


def _remove_user(entry: pwd.struct_passwd) -> str | None:
    remove_server_user(ServerUser(entry.pw_name, entry.pw_uid, entry.pw_gid))
    return None if user_exists(entry.pw_name) else f"removed user {entry.pw_name}"


def user_exists(name: str | None) -> bool:
    if name is None:
        return False
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _remove_folder(folder: Path, user: str | None) -> str | None:
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return None
    owners = {os.geteuid()}
    if user is not None:
        try:
            owners.add(pwd.getpwnam(user).pw_uid)
        except KeyError:
            pass
    if not folder.name.startswith(DIR_PREFIX) or not stat.S_ISDIR(info.st_mode) or info.st_uid not in owners:
        log.warning("left %s alone: not an embedded server's folder", folder)
        return None
    shutil.rmtree(folder, ignore_errors=True)  # rmtree never follows a symlink inside
    return None if folder.exists() else f"removed data directory {folder}"


def reap_servers() -> list[str]:
    """Remove the users and folders of embedded servers whose maker is gone; one message per thing removed."""
    try:
        folder = marks_dir()
    except OSError as error:
        log.warning("embedded servers left by killed runs are not reaped: %s", error)
        return []
    messages = []
    for path in sorted(folder.glob("*.json")):
        found = _read(path)
        if found is None:
            log.warning("ignored %s: not a mark of this user's", path)
            continue
        if is_running(found.maker):
            continue  # a live run's server
        why = f" (left by pid {found.maker.pid}, which is gone)"
        user = _server_user(found.user) if found.user else None
        if user is not None:
            _kill_processes(user)
        # The folder before the user: a folder of a removed user's would be owned by whoever gets its uid next.
        done = [_remove_folder(Path(found.folder), found.user), _remove_user(user) if user else None]
        messages += [message + why for message in done if message]
        if not user_exists(user.pw_name if user else None):
            path.unlink(missing_ok=True)  # else the next run tries again
    return messages
