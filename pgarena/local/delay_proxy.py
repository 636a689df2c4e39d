"""A far server on this machine: a TCP proxy that delivers every byte `delay_ms` after it arrived, each
way, so that workers measure an embedded server as they would one across a network (the matrix's
`embedded.network_delay_ms`).

Each direction is a queue of (due time, bytes): reading never waits for the delay, so pipelined
messages keep their spacing and the proxy adds latency, not a bandwidth limit. The queue is bounded:
a reader far ahead of its writer waits (backpressure) instead of holding the stream in memory.

It runs as a process of its own (`python -m pgarena.local.delay_proxy`), not a thread of the runtime,
so its timing does not share an interpreter lock with the coordinator; the runtime starts it with the
parent-death signal and records it in the campaign's children.jsonl (pgarena.local.children), so it ends
with its server, or with the coordinator however that ends. Started by root, it becomes `nobody` (no
groups) once its port is bound: relaying bytes needs no privilege.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import os
import pwd
import select
import signal
import subprocess
import sys
from collections.abc import Callable

from pgarena.local.embedded import EmbeddedStartError
from pgarena.system.processes import PR_SET_PDEATHSIG, die_with_parent, spawn

CHUNK_BYTES = 64 * 1024
QUEUED_CHUNKS = 256  # per direction: past this, reading the sender waits for the writer
READY_TIMEOUT_S = 30.0
LISTENING = "listening on port "
UNPRIVILEGED_USER = "nobody"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    """Copy reader to writer, each chunk `delay_s` after it was read; half-close the writer at the end."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(QUEUED_CHUNKS)

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:  # the sender's end of stream, delayed like its bytes
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    delivering = asyncio.create_task(deliver())
    try:
        while data := await reader.read(CHUNK_BYTES):
            await queue.put((loop.time() + delay_s, data))
        await queue.put((loop.time() + delay_s, b""))
        await delivering
    finally:
        delivering.cancel()


async def _relay(
    client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter, host: str, port: int, delay_s: float
) -> None:
    try:
        server_reader, server_writer = await asyncio.open_connection(host, port)
    except OSError:
        client_writer.close()
        return
    try:
        # Either side resetting ends both: the other pipe's error is the same connection's end.
        await asyncio.gather(_pipe(client_reader, server_writer, delay_s), _pipe(server_reader, client_writer, delay_s))
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        for writer in (client_writer, server_writer):
            writer.close()


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def rearm_parent_death(parent: int, sig: signal.Signals = signal.SIGKILL) -> None:
    """Set the parent-death signal again (Linux clears it when a process changes its user or group); if the
    parent already died, take the signal now."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def unprivileged(user: str = UNPRIVILEGED_USER) -> None:
    """As root, become `user` with its group and no other: refused (KeyError) when there is no such user,
    rather than relay as root. The parent-death signal, which Linux clears on the change, is set again."""
    if os.geteuid() != 0:
        return
    entry = pwd.getpwnam(user)
    parent = os.getppid()
    os.setgroups([])
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    rearm_parent_death(parent)


async def serve(host: str, port: int, delay_ms: float, ready: Callable[[int], None], listen: str = "127.0.0.1") -> None:
    """Proxy connections on `listen` (a free port) to host:port until cancelled; `ready` gets the port once
    it is bound (and may give up root then: unprivileged)."""
    delay_s = delay_ms / 1000

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _relay(reader, writer, host, port, delay_s)

    server = await asyncio.start_server(relay, listen, 0)
    async with server:
        ready(server.sockets[0].getsockname()[1])
        await server.serve_forever()


class DelayProxy:
    """The proxy process in front of host:port; `start` returns the port workers connect to instead."""

    def __init__(self, host: str, port: int, delay_ms: float):
        self.host, self.port, self.delay_ms = host, port, delay_ms
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> int:
        command = [sys.executable, "-m", "pgarena.local.delay_proxy", self.host, str(self.port), str(self.delay_ms)]
        # Started from the runtime's spawner thread: killed when the coordinator dies, not when a request's thread ends.
        self.process = spawn(
            lambda: subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent(signal.SIGKILL)
            )
        )
        assert self.process.stdout is not None  # piped above
        readable, _, _ = select.select([self.process.stdout], [], [], READY_TIMEOUT_S)
        line = self.process.stdout.readline().decode() if readable else ""
        if not line.startswith(LISTENING):
            self.stop()
            raise EmbeddedStartError(f"the delay proxy to {self.host}:{self.port} did not start within {READY_TIMEOUT_S:g} s")
        return int(line.removeprefix(LISTENING))

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.kill()
        self.process.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="delay every byte to and from host:port by delay_ms, each way")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("delay_ms", type=float)
    args = parser.parse_args(argv)

    def ready(port: int) -> None:
        unprivileged()  # bound: no privilege needed from here on
        print(f"{LISTENING}{port}", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port, args.delay_ms, ready))


if __name__ == "__main__":
    main()
