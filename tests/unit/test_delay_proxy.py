"""The delay proxy (pgarena.local.delay_proxy): bytes pass unchanged both ways, each way later by its delay."""

import os
import pwd
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pgarena.local.children import CHILDREN_FILE, reap
from pgarena.local.delay_proxy import DelayProxy
from pgarena.model.process import ChildRecord, ProcessIdentity
from pgarena.system.processes import identity, me, program

DELAY_MS = 20.0
TIMEOUT_S = 30


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo_port():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(echo_port):
    proxy = DelayProxy("127.0.0.1", echo_port, DELAY_MS)
    port = proxy.start()
    yield port
    proxy.stop()


def _received(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_bytes_round_trip_unchanged(proxy):
    # Given a proxy in front of an echo server, When a megabyte of every byte value goes through it
    payload = bytes(range(256)) * 4096
    with socket.create_connection(("127.0.0.1", proxy), timeout=TIMEOUT_S) as conn:
        conn.sendall(payload)
        echoed = _received(conn, len(payload))
    # Then it comes back whole and in order
    assert echoed == payload


def test_each_way_is_delayed(proxy):
    # Given a proxy that delays 20 ms each way, When a message goes to the echo server and back
    with socket.create_connection(("127.0.0.1", proxy), timeout=TIMEOUT_S) as conn:
        conn.sendall(b"ping")  # the first exchange: the proxy's connection to the server is open after it
        assert _received(conn, 4) == b"ping"
        t0 = time.perf_counter()
        conn.sendall(b"pong")
        assert _received(conn, 4) == b"pong"
        elapsed_ms = (time.perf_counter() - t0) * 1000
    # Then the round trip took at least both delays (a lower bound: a loaded machine only adds to it)
    assert elapsed_ms >= 2 * DELAY_MS


def test_stop_ends_the_proxy(echo_port):
    # Given a running proxy, When it is stopped
    proxy = DelayProxy("127.0.0.1", echo_port, DELAY_MS)
    port = proxy.start()
    proxy.stop()
    # Then its process is gone and nothing listens on its port
    assert proxy.process is not None and proxy.process.poll() is not None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)


def _gone(pid: int, timeout_s: float = 60) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if identity(pid) is None:
            return True
        time.sleep(0.05)
    return False


COORDINATOR = """
import sys, time
from pgarena.local.delay_proxy import DelayProxy
proxy = DelayProxy("127.0.0.1", int(sys.argv[1]), 5)
proxy.start()
print(proxy.pid, flush=True)
time.sleep(600)
"""


def test_the_proxy_dies_with_its_coordinator(echo_port):
    # Given a coordinator that started a proxy
    coordinator = subprocess.Popen([sys.executable, "-c", COORDINATOR, str(echo_port)], stdout=subprocess.PIPE, text=True)
    proxy_pid = int(coordinator.stdout.readline())
    assert identity(proxy_pid) is not None
    # When the coordinator is killed outright
    coordinator.kill()
    coordinator.wait()
    # Then the proxy ends too (the parent-death signal)
    assert _gone(proxy_pid)


def test_a_proxy_left_by_a_dead_coordinator_is_reaped(tmp_path, echo_port):
    # Given a campaign folder recording a running proxy whose coordinator is gone
    proxy = DelayProxy("127.0.0.1", echo_port, DELAY_MS)
    proxy.start()
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = ProcessIdentity(pid=gone.pid, host=me().host, started="boot:1")
    record = ChildRecord(
        what="proxy", campaign_id="crashed", process=identity(proxy.pid), coordinator=dead, program=program(proxy.pid)
    )
    (tmp_path / "crashed").mkdir()
    (tmp_path / "crashed" / CHILDREN_FILE).write_text(record.model_dump_json() + "\n")
    # When the next run reaps
    messages = reap(tmp_path)
    # Then the proxy is stopped, and said to be
    assert proxy.process.wait(timeout=60) == -signal.SIGKILL
    assert any(f"stopped proxy pid {proxy.pid}" in m for m in messages)


def test_the_proxy_gives_up_root_once_listening(echo_port):
    # Issue 34.9: started by root, the relay runs as nobody, in nobody's group and no other (as anyone
    # else, as that user: there is nothing to give up)
    proxy = DelayProxy("127.0.0.1", echo_port, DELAY_MS)
    proxy.start()
    try:
        status = Path(f"/proc/{proxy.pid}/status").read_text()
    finally:
        proxy.stop()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    nobody = pwd.getpwnam("nobody")
    uid, gid = (nobody.pw_uid, nobody.pw_gid) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    assert fields["Uid"].split() == [str(uid)] * 4
    assert fields["Gid"].split() == [str(gid)] * 4
    if os.geteuid() == 0:
        assert fields["Groups"].split() == []
