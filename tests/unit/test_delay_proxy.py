"""The delay proxy (pgarena.local.delay_proxy): bytes pass unchanged both ways, each way later by its delay."""

import socket
import socketserver
import threading
import time

import pytest

from pgarena.local.delay_proxy import DelayProxy

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
