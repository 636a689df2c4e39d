"""Server leases shared by every local runtime on this machine: the pgarena.campaign.leases port on a JSON
file per server (its holders and its queue), each change made under an exclusive flock."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pgarena.campaign.leases import Leases
from pgarena.model.lease import HOLDERS, WAITERS, LeaseRecord
from pgarena.model.process import ProcessIdentity
from pgarena.system.processes import is_running, me

log = logging.getLogger(__name__)


class LeaseDirError(Exception):
    """The lease folder is not safe to share: another user could forge or remove leases in it."""


def private_dir(directory: Path) -> Path:
    """The lease folder, created 0700; refused when it is not a folder of this user's that only they may write."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(directory)  # lstat: a symlink planted in its place is refused, not followed
    fix = "remove it, or set PGARENA_LEASE_DIR to a folder of yours (mode 700)"
    if not stat.S_ISDIR(info.st_mode):
        raise LeaseDirError(f"lease folder {directory} is not a folder: {fix}")
    if info.st_uid != os.getuid():
        raise LeaseDirError(f"lease folder {directory} is owned by uid {info.st_uid}, not by you: {fix}")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise LeaseDirError(f"lease folder {directory} is group or world writable: chmod 700 {directory}, or {fix}")
    return directory


class FileLeases(Leases):
    """Leases shared by every local runtime on this machine: `<directory>/<server key>.json`, each
    change made under an exclusive flock of a lock file beside it (the JSON file is replaced whole)."""

    def __init__(self, directory: Path, clock: Callable[[], float] = time.time):
        self.directory = directory
        self.clock = clock
        private_dir(directory)

    def _identity(self) -> ProcessIdentity:
        # The local runtime runs the handlers in its own process: the coordinator's identity is this one's.
        return me()

    def _gone(self, process: ProcessIdentity | None) -> bool:
        return process is not None and not is_running(process)

    def _path(self, key: str) -> Path:
        return self.directory / (re.sub(r"[^A-Za-z0-9_.-]", "_", key) + ".json")

    @contextmanager
    def _locked(self, key: str, mode: int) -> Iterator[Path]:
        path = self._path(key)
        # O_NOFOLLOW: a lock file replaced by a symlink fails (ELOOP) rather than create or lock its target
        fd = os.open(path.with_suffix(".lock"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, mode)
            try:
                yield path
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @staticmethod
    def _load(path: Path) -> LeaseRecord:
        if not path.exists():
            return LeaseRecord()
        try:
            record = json.loads(path.read_text())
            return LeaseRecord(
                holders=HOLDERS.validate_python(record["holders"]),
                queue=WAITERS.validate_python(record.get("queue", [])),  # a file written before the queue: none
                version=int(record["version"]),
            )
        except (ValueError, TypeError, KeyError, AttributeError) as error:  # ValueError: bad JSON, bad UTF-8, a ValidationError
            # One server's damaged record must not stop every local campaign: it holds nothing, the next write replaces it.
            log.warning("lease file %s is corrupt, counted as no holders: %s", path, error)
            return LeaseRecord()

    def _read_all(self, key: str) -> LeaseRecord:
        with self._locked(key, fcntl.LOCK_SH) as path:
            return self._load(path)

    def _write(self, key: str, lease: LeaseRecord) -> bool:
        with self._locked(key, fcntl.LOCK_EX) as path:
            if self._load(path).version != lease.version:
                return False
            record = {
                "holders": HOLDERS.dump_python(lease.holders, mode="json"),
                "queue": WAITERS.dump_python(lease.queue, mode="json"),
                "version": lease.version + 1,
            }
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w") as out:
                json.dump(record, out)
            os.replace(tmp, path)  # readers see the old record or the new one, never half of one
        return True


def default_lease_dir() -> Path:
    """Where local runtimes keep their shared leases: the user's runtime dir, else /tmp."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "pgarena-leases" if runtime else Path(tempfile.gettempdir()) / "pgarena-leases"


class LocalLeases(FileLeases):
    """The local runtime's handlers' leases: in files, shared by every local runtime on this machine. A
    target preflighted on its site was leased by a worker there, in the results table (the one lease store
    a site reaches, as in AWS; this runtime's own moto), so a release gives the holder's slots back in both."""

    def __init__(self, directory: Path, table: Leases, clock: Callable[[], float] = time.time):
        super().__init__(directory, clock)
        self.table = table

    def release(self, key: str, holder: str) -> None:
        super().release(key, holder)
        self.table.release(key, holder)
