"""Connection leases shared by every local runtime on this machine: the pgarena.campaign.leases port
on a JSON file per server, each change made under an exclusive flock."""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pgarena.campaign.leases import Leases
from pgarena.model.lease import HOLDERS, Holder


class FileLeases(Leases):
    """Leases shared by every local runtime on this machine: `<directory>/<host>_<port>.json`, each
    change made under an exclusive flock of a lock file beside it (the JSON file is replaced whole)."""

    def __init__(self, directory: Path, clock: Callable[[], float] = time.time):
        self.directory = directory
        self.clock = clock
        directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / (re.sub(r"[^A-Za-z0-9_.-]", "_", key) + ".json")

    @contextmanager
    def _locked(self, key: str, mode: int) -> Iterator[Path]:
        path = self._path(key)
        with open(path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, mode)
            try:
                yield path
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @staticmethod
    def _load(path: Path) -> tuple[list[Holder], int]:
        if not path.exists():
            return [], 0
        record = json.loads(path.read_text())
        return HOLDERS.validate_python(record["holders"]), int(record["version"])

    def _read_all(self, key: str) -> tuple[list[Holder], int]:
        with self._locked(key, fcntl.LOCK_SH) as path:
            return self._load(path)

    def _write(self, key: str, holders: list[Holder], version: int) -> bool:
        with self._locked(key, fcntl.LOCK_EX) as path:
            if self._load(path)[1] != version:
                return False
            record = {"holders": HOLDERS.dump_python(holders, mode="json"), "version": version + 1}
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w") as out:
                json.dump(record, out)
            os.replace(tmp, path)  # readers see the old record or the new one, never half of one
        return True


def default_lease_dir() -> Path:
    """Where local runtimes keep their shared leases: the user's runtime dir, else /tmp."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "pgarena-leases" if runtime else Path(tempfile.gettempdir()) / "pgarena-leases"
