"""What a local worker process starts with: the environment a Fargate task gets, built from scratch, and
(when the runtime runs as root) a user of its own.

A worker never inherits the coordinator's environment (the user's shell: its secrets, its PYTHONPATH),
and RunTask's overrides may not set what makes an interpreter, the dynamic loader or a shell run other
code, nor what the runtime gives every task itself (its AWS endpoint and credentials, the tools' paths).
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from pathlib import Path

from pgarena.tools.registry import TOOLS

# Read by the interpreter, the dynamic loader, libc or a shell to load or run code of their choosing.
_LOADER_NAMES = frozenset(
    {"PATH", "HOME", "ENV", "BASH_ENV", "SHELLOPTS", "PS4", "IFS", "CDPATH", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH",
     "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "OPENSSL_CONF", "TZDIR"}
)  # fmt: skip
_LOADER_PREFIXES = ("PYTHON", "LD_", "DYLD_", "MALLOC_", "BASH_FUNC_", "PERL", "RUBY", "NODE_", "JAVA_", "_JAVA_")
_TOOL_BINARIES = tuple(tool.binary_env for tool in TOOLS.values())
# The runtime's own, the same for every task: where the tools are, and the AWS endpoint and credentials.
_RUNTIME_NAMES = frozenset({*_TOOL_BINARIES, "PGSSLROOTCERT"})
_RUNTIME_PREFIXES = ("AWS_",)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# What this machine's tools need, taken from the coordinator by name (as an image's ENV sets them for a
# Fargate task): none holds a secret.
MACHINE_ENV = ("LANG", "LC_ALL", "PGSSLROOTCERT", *_TOOL_BINARIES)
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# A worker running as a user of its own has no home: nothing of it is read from one.
NO_HOME = "/nonexistent"
# Where a worker's own uid is drawn from: far above the users and the subordinate ranges a system gives out.
OWN_UIDS = range(1 << 30, (1 << 31) - 1)


def override_refusal(overrides: Iterable[Mapping[str, object]]) -> str | None:
    """Why RunTask's container overrides' environment cannot start a worker (None when it can)."""
    for item in overrides:
        name, value = item.get("name"), item.get("value")
        if not isinstance(name, str) or not _NAME.match(name):
            return f"environment variable name {name!r} is not a valid name"
        if not isinstance(value, str) or "\0" in value:
            return f"environment variable {name} has no text value"
        upper = name.upper()
        if upper in _LOADER_NAMES or upper.startswith(_LOADER_PREFIXES):
            return f"environment overrides may not set {name}: the interpreter, the loader or a shell reads it to run code"
        if upper in _RUNTIME_NAMES or upper.startswith(_RUNTIME_PREFIXES):
            return f"environment overrides may not set {name}: the runtime sets it for every task"
    return None


def process_environment(task_env: Mapping[str, str], own_user: bool, machine: Mapping[str, str] = os.environ) -> dict[str, str]:
    """A worker process's whole environment: the machine's PATH (absolute folders only: a relative one
    would find programs in whatever folder the worker runs in), HOME, the MACHINE_ENV settings, then the
    task's own (its definition's and RunTask's overrides)."""
    folders = [folder for folder in machine.get("PATH", "").split(os.pathsep) if os.path.isabs(folder)]
    env = {
        "PATH": os.pathsep.join(folders) or DEFAULT_PATH,
        "HOME": NO_HOME if own_user else machine.get("HOME", NO_HOME),
        "LANG": "C.UTF-8",
    }
    env.update({name: machine[name] for name in MACHINE_ENV if name in machine})
    return {**env, **task_env}


# The worker's module run by an interpreter given this process's packages by hand: with -I -S nothing of
# the environment, of the folder it runs in or of that interpreter's own site folders is on its path.
_BOOTSTRAP = (
    "import runpy, site, sys; site.addsitedir(sys.argv.pop(1)); "
    "runpy.run_module('workers.entrypoint', run_name='__main__', alter_sys=True)"
)
_PROBE = "import importlib.util, site, sys; site.addsitedir(sys.argv[1]); sys.exit(importlib.util.find_spec('workers.entrypoint') is None)"
PROBE_TIMEOUT_S = 60


class WorkerUserError(RuntimeError):
    pass


def worker_command(user: tuple[int, int] | None, env: Mapping[str, str]) -> list[str]:
    """The command that starts a worker: this interpreter, isolated (-I: no PYTHON* variable, no folder of
    the caller's on its path). As `user`, which may not reach this interpreter (one in root's home, as
    pyenv installs it), the first of this interpreter and the system's of the same version that `user`
    can run with this process's packages; WorkerUserError, naming the fix, when neither can."""
    if user is None:
        return [sys.executable, "-I", "-m", "workers.entrypoint"]
    packages = sysconfig.get_path("purelib")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, *filter(None, (shutil.which(version, path=DEFAULT_PATH),))]
    for interpreter in candidates:
        try:
            probe = subprocess.run(
                [interpreter, "-I", "-S", "-c", _PROBE, packages],
                env=dict(env), cwd="/", user=user[0], group=user[1], extra_groups=[],
                capture_output=True, timeout=PROBE_TIMEOUT_S, check=False,
            )  # fmt: skip
        except PermissionError:  # a folder on the way to it is closed to `user`
            continue
        if probe.returncode == 0:
            return [interpreter, "-I", "-S", "-c", _BOOTSTRAP, packages]
    raise WorkerUserError(
        f"workers run as uid {user[0]} (not root, as this runtime is), which cannot run {' or '.join(candidates)} "
        f"with the packages in {packages}: install pgarena where other users can read it (outside /root), "
        "run as a user other than root, or run workers as containers (--aws-strict)"
    )


def own_user(uid_map: Path = Path("/proc/self/uid_map"), gid_map: Path = Path("/proc/self/gid_map")) -> tuple[int, int] | None:
    """For a runtime running as root, a uid (and the gid of the same number) for its workers that no
    account and no other runtime has: a worker holds this run's keys and task tokens, which another user's
    process (`nobody`'s, say) could read from it were it running as that user. None when not root.

    Drawn from OWN_UIDS where this user namespace maps them, else `nobody` (a namespace that maps few ids)."""
    if os.geteuid() != 0:
        return None
    uids, gids = _mapped(uid_map), _mapped(gid_map)
    for _ in range(100):
        uid = OWN_UIDS.start + secrets.randbelow(len(OWN_UIDS))
        if any(uid in each for each in uids) and any(uid in each for each in gids) and not _has_account(uid):
            return uid, uid
    nobody = pwd.getpwnam("nobody")
    return nobody.pw_uid, nobody.pw_gid


def _mapped(id_map: Path) -> list[range]:
    """The ids a user namespace maps (`inside outside count` lines); all of them when the file is absent."""
    try:
        lines = id_map.read_text().splitlines()
    except OSError:
        return [range(0, (1 << 32) - 1)]
    ranges = []
    for line in lines:
        inside, _, count = (int(field) for field in line.split())
        ranges.append(range(inside, inside + count))
    return ranges


def _has_account(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
