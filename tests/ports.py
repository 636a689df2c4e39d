"""A port nobody can listen on, for targets that must be refused.

free_port() only says a port was free when asked: a server started later (an embedded target of the same
campaign) could take it, and the "unreachable" target then reached a PostgreSQL server and failed on
authentication, not as refused (seen once in a full run). A socket bound without listening, and without
SO_REUSEADDR, holds the port for the whole test process: a connection to it is refused, and no server can
bind it.
"""

import socket

_HELD: list[socket.socket] = []


def refused_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD.append(sock)
    port: int = sock.getsockname()[1]
    return port
