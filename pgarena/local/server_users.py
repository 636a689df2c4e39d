"""An OS user of its own for each embedded server when the coordinator is root (PostgreSQL refuses to run as
root): code a server runs can touch its own data directory only, not another campaign's server.

Without root everything runs as the invoking user, who is then the one principal on every server it
starts; each data directory is still 0700 (initdb's own mode), so other local users are kept out."""

from __future__ import annotations

import logging
import pwd
import secrets
import subprocess
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

USER_PREFIX = "pgarena-"
# The GECOS field of every server user: how a leftover one (a killed coordinator) is told from others.
COMMENT = "pgarena embedded server"
# useradd/userdel lock /etc/passwd: campaigns starting servers at once wait their turn.
LOCKED_EXIT_CODES = frozenset({1, 10})  # can't update the password file / the group file
ATTEMPTS = 20
RETRY_S = 0.25
COMMAND_TIMEOUT_S = 30


@dataclass(frozen=True)
class ServerUser:
    name: str
    uid: int
    gid: int


def _account_command(*argv: str) -> subprocess.CompletedProcess[str]:
    for _ in range(ATTEMPTS - 1):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
        if done.returncode not in LOCKED_EXIT_CODES or "lock" not in done.stderr:
            return done
        time.sleep(RETRY_S)
    return subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)


def new_user_name() -> str:
    return USER_PREFIX + secrets.token_hex(4)


def create_server_user(name: str | None = None) -> ServerUser:
    """A new system user with its own group, no home and no login shell, named `pgarena-<8 hex>` (`name`:
    one chosen beforehand, so that it is marked before it exists: pgarena.local.server_marks)."""
    name = name or new_user_name()
    done = _account_command(
        "useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
        "--shell", "/usr/sbin/nologin", "--comment", COMMENT, name,
    )  # fmt: skip
    if done.returncode != 0:
        raise OSError(f"useradd {name} failed: {done.stderr.strip() or f'exit code {done.returncode}'}")
    entry = pwd.getpwnam(name)
    return ServerUser(name, entry.pw_uid, entry.pw_gid)


def remove_server_user(user: ServerUser) -> None:
    """Remove the user and its group; a failure is logged (its server's files are gone already)."""
    done = _account_command("userdel", user.name)
    if done.returncode != 0:
        log.warning("could not remove the embedded server's user %s: %s", user.name, done.stderr.strip())
