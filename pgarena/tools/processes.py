"""Processes that die with their parent, and the identity that tells a live process from a reused pid.

Linux's parent-death signal (prctl PR_SET_PDEATHSIG) is sent when the *thread* that started a child
ends, so children that must live as long as this process are started from one thread that never ends
(`spawn`). Elsewhere (not Linux) `die_with_parent` does nothing and the runtime's reaping is all there is.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

from pgarena.model.process import ProcessIdentity

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")

T = TypeVar("T")


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> Callable[[], None] | None:
    """A Popen preexec_fn: the child gets `sig` when the thread that started it ends (its parent died)."""
    if _LIBC is None:
        return None
    prctl, parent = _LIBC.prctl, os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect: nobody would signal us
            os.kill(os.getpid(), sig)

    return preexec


class _Spawner(threading.Thread):
    """One thread, for this process's lifetime, that starts the children which must die with it."""

    def __init__(self) -> None:
        super().__init__(name="pgarena-spawner", daemon=True)
        self.jobs: queue.SimpleQueue[tuple[Callable[[], object], Future[object]]] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            job, future = self.jobs.get()
            try:
                future.set_result(job())
            except BaseException as error:  # the caller's thread raises it
                future.set_exception(error)


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def spawn(start: Callable[[], T]) -> T:
    """Run `start` (a Popen with die_with_parent) on the spawner thread: its children then die when this
    process does, not when the caller's thread (an HTTP request's) ends."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = _Spawner()
            _spawner.start()
        spawner = _spawner
    future: Future[object] = Future()
    spawner.jobs.put((start, future))
    result: T = future.result()  # type: ignore[assignment]  # the job is `start`: its result is a T
    return result


def _boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return "unknown"


def identity(pid: int) -> ProcessIdentity | None:
    """The process with this pid now, or None when there is none (a zombie counts as gone: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name, in parentheses, may hold spaces
    state, start_ticks = fields[0], fields[19]  # stat fields 3 and 22
    if state in ("Z", "X"):
        return None
    return ProcessIdentity(pid=pid, host=socket.gethostname(), started=f"{_boot_id()}:{start_ticks}")


def me() -> ProcessIdentity:
    found = identity(os.getpid())
    assert found is not None  # this process runs
    return found


def is_running(process: ProcessIdentity) -> bool:
    """Whether the very process recorded still runs (on this host: elsewhere nothing can be told)."""
    if process.host != socket.gethostname():
        return True
    return identity(process.pid) == process


def program(pid: int) -> str | None:
    """The file name of the process's executable (`python3.11`, `postgres`, `docker`), None if unreadable."""
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return None
