"""A server reached through three addresses: 127.0.0.1, 127.0.0.2 and ::1 (issue 34: one server, one lease)."""

from __future__ import annotations

import pg8000.dbapi

from pgarena.local.embedded import EmbeddedProcess

ADDRESSES = ("127.0.0.1", "127.0.0.2", "::1")


def listening_on_every_address(name: str, max_connections: int) -> EmbeddedProcess:
    """An embedded server (trusting local connections) on 127.0.0.1, 127.0.0.2 and ::1."""
    pg = EmbeddedProcess(name, {"max_connections": max_connections, "fsync": "off", "listen_addresses": ",".join(ADDRESSES)})
    endpoint = pg.start()
    # initdb trusts 127.0.0.1/32 and ::1/128 only
    with (pg.pgdata / "pg_hba.conf").open("a") as hba:
        hba.write("host all all 127.0.0.2/32 trust\n")
    admin = pg8000.dbapi.connect(host="127.0.0.1", port=endpoint.port, user="postgres", database="postgres")
    admin.autocommit = True
    admin.cursor().execute("select pg_reload_conf()")
    admin.close()
    return pg
