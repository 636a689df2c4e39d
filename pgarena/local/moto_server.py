"""moto's server on 127.0.0.1 for the runtime's processes (workers, functions run from their assets, the
CLI pointed at the runtime), sharing this process's mock state, answering only this run's signed requests."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Self

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from pgarena.local.signing import RunKeys, refusing_unsigned

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


def atomic_dynamodb(app: WSGIApplication) -> WSGIApplication:
    """DynamoDB applies each request to an item atomically (two workers ADDing themselves to a start
    barrier's set both stay in it); moto's backend has no lock, and two concurrent updates from the
    server's threads can lose one, leaving a barrier waiting for a shard that did arrive. DynamoDB
    requests are served one at a time."""
    lock = threading.Lock()

    def serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            with lock:
                return list(app(environ, start_response))
        return app(environ, start_response)

    return serve


class MotoServer:
    """moto.server.ThreadedMotoServer's server behind pgarena.local.signing.refusing_unsigned."""

    def __init__(self, keys: RunKeys) -> None:
        app = refusing_unsigned(atomic_dynamodb(DomainDispatcherApplication(create_backend_app)), keys)
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
