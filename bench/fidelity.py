"""Does the harness cost the measurement anything? The same pgbench workload, bare and through pgarena's
worker, alternating on one embedded server, with the cost decomposed.

    .venv/bin/python bench/fidelity.py [--rounds 12] [--duration 10] [--clients 4] [--options]

The server is pinned to one core and every client (bare pgbench, the worker and its pgbench) to another
(taskset), so that the two sides do not trade places between rounds. Every run starts from the same
server state, restored untimed before it (pgbench_history emptied, VACUUM, CHECKPOINT; autovacuum off):
without it, tps drifted down round after round as history and dead tuples grew, and an autovacuum or
checkpoint landed in one variant's run at random. Each round runs every variant once,
in an order rotated from round to round; each variant's tps is divided by the same round's bare tps:

    bare          pgbench as the worker would run it, without --log
    bare-again    bare once more (an A/A control): its ratio is the method's own noise on this machine,
                  what any other variant's interval must be read against
    log           bare + --log (per-transaction log on disk, as the worker writes it)
    worker        pgarena's worker: --log, streaming, the monitor, uploads, the log's processing
    --options adds: log-tmpfs (the log on /dev/shm) and log-sampled (--sampling-rate 0.1: the percentiles
    then rest on a tenth of the transactions)

Prints each round (tps, and the client side's CPU-microseconds per transaction), then per variant the median ratio with its 95% confidence interval (distribution-free:
order statistics of the rounds' ratios, binomial coverage >= 95%), the same for the client CPU per
transaction (far less sensitive than tps to other load on a shared machine), and the load.
Goal: worker median >= 0.98 with the interval's lower bound >= 0.96.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import resource
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import boto3
from moto import mock_aws

from pgarena.aws.store import ResultStore, create_results_table
from pgarena.campaign.step.run import run_step
from pgarena.local.embedded import EmbeddedProcess
from pgarena.model.matrix import Endpoint
from pgarena.model.plan import Step
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.server.postgres import connect
from pgarena.tools.pgbench.command import init_args, libpq_env, pgbench_binary, run_args
from pgarena.tools.pgbench.parser import parse_pgbench
from pgarena.tools.pgbench.spec import PgbenchRun, PgbenchStep
from pgarena.worker.run import step_worker

SERVER_CORE, CLIENT_CORE = 0, 1


def median_ci95(values: list[float]) -> tuple[float, float, float]:
    """Median and a distribution-free 95% interval: the k-th smallest and k-th largest values, k the
    largest with P(Binomial(n, 1/2) < k) <= 2.5%."""
    n, ordered = len(values), sorted(values)
    k, below = 0, 0.0
    while True:
        below += math.comb(n, k) / 2**n
        if below > 0.025:
            break
        k += 1
    if k == 0:  # too few rounds for a 95% interval: the whole range (n < 6)
        return statistics.median(values), ordered[0], ordered[-1]
    return statistics.median(values), ordered[k - 1], ordered[n - k]


def pin_server(pgdata: Path) -> None:
    """The postmaster and every process it has forked (and will fork: affinity is inherited) on one core."""
    postmaster = (pgdata / "postmaster.pid").read_text().split()[0]
    children = subprocess.run(["pgrep", "-P", postmaster], capture_output=True, text=True).stdout.split()
    for pid in [postmaster, *children]:
        subprocess.run(["taskset", "-a", "-p", "-c", str(SERVER_CORE), pid], check=True, capture_output=True)


@dataclass
class Measured:
    tps: float
    cpu_us_per_tx: float  # the client side's CPU (pgbench's, and the worker's own) per transaction


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pgbench_run(endpoint: Endpoint, run: PgbenchRun, clients: int, workdir: Path, extra: list[str]) -> Measured:
    args = [*run_args(run, clients, workdir, rate_tps=None), *extra]
    cpu0 = children_cpu_s()
    out = subprocess.run(
        ["taskset", "-c", str(CLIENT_CORE), pgbench_binary(), *args],
        env={**os.environ, **libpq_env(endpoint, None)},
        capture_output=True,
        text=True,
        check=True,
    )
    summary = parse_pgbench(out.stdout + out.stderr).summary
    assert summary is not None and summary.tps is not None and summary.transactions
    return Measured(summary.tps, (children_cpu_s() - cpu0) / summary.transactions * 1e6)


# What every run starts from (statements run one by one: VACUUM refuses a transaction block).
RESET_SQL = ("truncate pgbench_history", "vacuum analyze", "checkpoint")


def reset(endpoint: Endpoint) -> None:
    """The server as every run finds it: the history the last run wrote gone, dead tuples vacuumed, dirty
    pages written, so no variant inherits another's debt (untimed)."""
    with connect(endpoint, application_name="pgarena-fidelity") as conn:
        cursor = conn.cursor()
        for statement in RESET_SQL:
            cursor.execute(statement)


def variants(
    endpoint: Endpoint, step: Step, store: ResultStore, clients: int, options: bool
) -> dict[str, Callable[[int], Measured]]:
    assert isinstance(step.spec, PgbenchStep)  # main() plans a pgbench campaign
    run = step.spec.run
    assert isinstance(run, PgbenchRun)

    def bare(_: int) -> Measured:
        with tempfile.TemporaryDirectory() as tmp:
            return pgbench_run(endpoint, run.model_copy(update={"percentiles": False}), clients, Path(tmp), [])

    def logged(root: str | None, extra: list[str]) -> Callable[[int], Measured]:
        def measure(_: int) -> Measured:
            with tempfile.TemporaryDirectory(dir=root) as tmp:
                return pgbench_run(endpoint, run.model_copy(update={"percentiles": True}), clients, Path(tmp), extra)

        return measure

    ports = step_worker(store, boto3.client("stepfunctions"))  # no task token: run_step answers none

    def worker(round_no: int) -> Measured:
        # The worker echoes the tool's output as it comes (its cost is part of what is measured): here
        # into a sink, so that the rounds stay readable.
        with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            summary = run_step(
                step.model_copy(update={"step_id": f"pg/tpcb/round{round_no}"}),
                ports,
                Path(tmp),
            )
        assert summary.tps is not None and summary.transactions and summary.harness is not None
        # The worker's own CPU (this process: it runs in-process here) and its pgbench's, from item 4's meter.
        spent = summary.harness.cpu_s + summary.harness.tool_cpu_s
        return Measured(summary.tps, spent / summary.transactions * 1e6)

    chosen = {"bare": bare, "bare-again": bare, "log": logged(None, []), "worker": worker}
    if options:
        chosen |= {"log-tmpfs": logged("/dev/shm", []), "log-sampled": logged(None, ["--sampling-rate=0.1"])}
    return chosen


def main() -> None:  # noqa: PLR0915  # the benchmark's one script: server, rounds, report
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=12, help="rounds, each running every variant once (%(default)s)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per pgbench run (%(default)s)")
    parser.add_argument("--clients", type=int, default=4, help="pgbench clients (%(default)s)")
    parser.add_argument("--options", action="store_true", help="also --log on tmpfs and --sampling-rate 0.1")
    options = parser.parse_args()
    os.environ.update(AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    logging.getLogger("pgarena-worker").setLevel(logging.ERROR)  # its "step finished" lines: the rounds say it
    # The worker runs in this process and starts its pgbench from it: the client side's core is ours.
    os.sched_setaffinity(0, {CLIENT_CORE})
    # autovacuum off: reset() vacuums before every run instead, at the same moment for every variant.
    server = EmbeddedProcess(
        "fidelity", {"shared_buffers": "128MB", "fsync": "off", "synchronous_commit": "off", "autovacuum": "off"}
    )
    endpoint = server.start()
    try:
        pin_server(server.pgdata)
        campaign = parse_campaign(
            {
                "campaign": "fidelity",
                "connections": {"monitor_interval_s": 5},
                "targets": [{"name": "pg", "provider": "embedded", "endpoint": endpoint.model_dump(exclude={"password"})}],
                "workloads": [
                    {
                        "name": "tpcb",
                        "tool": "pgbench",
                        "init": {"scale": 5},
                        "run": {
                            "clients": options.clients,
                            "jobs": 2,
                            "duration_s": options.duration,
                            "progress_s": 5,
                            "no_vacuum": True,
                        },
                    }
                ],
            }
        )
        init, step = plan_campaign(campaign, "fidelity").targets[0].steps
        assert isinstance(init.spec, PgbenchStep) and init.spec.init is not None  # the campaign above
        subprocess.run(
            [pgbench_binary(), *init_args(init.spec.init)],
            env={**os.environ, **libpq_env(endpoint, None)},
            capture_output=True,
            check=True,
        )
        print(
            f"server on core {SERVER_CORE}, clients on core {CLIENT_CORE}; {options.rounds} rounds of {options.duration} s, "
            f"{options.clients} clients; load at the start (loadavg): {Path('/proc/loadavg').read_text().strip()}",
            flush=True,
        )
        with mock_aws():
            boto3.client("s3").create_bucket(Bucket="fidelity-results")
            create_results_table(boto3.client("dynamodb"), "t")
            store = ResultStore("fidelity-results", "t")
            measures = variants(endpoint, step, store, options.clients, options.options)
            names = list(measures)
            ratios: dict[str, list[float]] = {name: [] for name in names if name != "bare"}
            cpu_ratios: dict[str, list[float]] = {name: [] for name in ratios}
            cpu_us: dict[str, list[float]] = {name: [] for name in names}
            for round_no in range(options.rounds):
                # Rotated order: each variant runs first, second, ... equally often.
                order = names[round_no % len(names) :] + names[: round_no % len(names)]
                got = {}
                for name in order:
                    reset(endpoint)
                    got[name] = measures[name](round_no)
                for name in names:
                    cpu_us[name].append(got[name].cpu_us_per_tx)
                for name in ratios:
                    ratios[name].append(got[name].tps / got["bare"].tps)
                    cpu_ratios[name].append(got[name].cpu_us_per_tx / got["bare"].cpu_us_per_tx)
                shown = "  ".join(f"{name} {got[name].tps:8.1f} ({got[name].cpu_us_per_tx:.0f} us)" for name in names)
                print(
                    f"round {round_no + 1:2d} ({' '.join(order)}): {shown}  ratios "
                    + " ".join(f"{name} {r[-1]:.3f}" for name, r in ratios.items()),
                    flush=True,
                )
        print("variant / bare (tps)    median   95% CI            min     max    rounds")
        for name, values in ratios.items():
            median, low, high = median_ci95(values)
            print(f"{name:<22} {median:7.3f}   [{low:.3f}, {high:.3f}]   {min(values):.3f}   {max(values):.3f}   {len(values)}")
        print("client CPU per transaction (us; pgbench's, plus the worker's own for worker), variant / bare")
        for name in names:
            median, low, high = median_ci95(cpu_us[name])
            relative = ""
            if name in cpu_ratios:
                r_median, r_low, r_high = median_ci95(cpu_ratios[name])
                relative = f"   x bare: {r_median:.3f} [{r_low:.3f}, {r_high:.3f}]"
            print(f"{name:<22} {median:7.1f} us [{low:.1f}, {high:.1f}]{relative}")
        if "bare-again" in ratios:
            _, low, high = median_ci95(ratios["bare-again"])
            print(
                f"A/A control: bare-again / bare within [{low:.3f}, {high:.3f}]: a variant's median inside that "
                "band is not told apart from bare by this many rounds on this machine"
            )
        if "log" in ratios and "worker" in ratios:
            log, worker = statistics.median(ratios["log"]), statistics.median(ratios["worker"])
            print(
                f"decomposition (medians): --log costs {1 - log:+.1%} of bare tps; the rest of the worker "
                f"{log - worker:+.1%}; the full worker {1 - worker:+.1%}"
            )
        print(f"load at the end (loadavg): {Path('/proc/loadavg').read_text().strip()}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
