"""moto's server on 127.0.0.1 for the runtime's processes (workers, functions run from their assets, the
CLI pointed at the runtime), sharing this process's mock state, answering only this run's signed requests."""

from __future__ import annotations

import threading
from typing import Self

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from pgarena.local.signing import RunKeys, refusing_unsigned


class MotoServer:
    """moto.server.ThreadedMotoServer's server behind pgarena.local.signing.refusing_unsigned."""

    def __init__(self, keys: RunKeys) -> None:
        app = refusing_unsigned(DomainDispatcherApplication(create_backend_app), keys)
        self.server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="moto-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
