"""Does the harness cost the measurement anything? The same pgbench workload, bare and through pgarena's
worker (streaming, monitor, per-transaction log), alternating on one embedded server.

    .venv/bin/python bench/fidelity.py [--rounds 5] [--duration 10] [--clients 4]

Prints each pair and the tps ratio pgarena / bare with its spread. Goal: ratio >= 0.98.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

import boto3
from moto import mock_aws

from pgarena.aws.store import ResultStore, create_results_table
from pgarena.local.embedded import EmbeddedProcess
from pgarena.model.matrix import parse_campaign
from pgarena.planning.plan import plan_campaign
from pgarena.tools.pgbench.command import init_args, libpq_env, pgbench_binary, run_args
from pgarena.tools.pgbench.parser import parse_pgbench
from pgarena.worker.run import run_step


def bare(endpoint, run, clients: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        args = [a for a in run_args(run.model_copy(update={"percentiles": False}), clients, Path(tmp))]
        out = subprocess.run(
            [pgbench_binary(), *args], env={**os.environ, **libpq_env(endpoint, None)}, capture_output=True, text=True, check=True
        )
    return parse_pgbench(out.stdout + out.stderr).summary.tps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--clients", type=int, default=4)
    options = parser.parse_args()
    os.environ.update(
        AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", POWERTOOLS_LOG_LEVEL="ERROR"
    )
    server = EmbeddedProcess("fidelity", {"shared_buffers": "128MB", "fsync": "off", "synchronous_commit": "off"})
    endpoint = server.start()
    try:
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
        init, run_step_spec = plan_campaign(campaign, "fidelity").targets[0].steps
        subprocess.run(
            [pgbench_binary(), *init_args(init.spec.init)],
            env={**os.environ, **libpq_env(endpoint, None)},
            capture_output=True,
            check=True,
        )
        with mock_aws():
            boto3.client("s3").create_bucket(Bucket="fidelity-results")
            create_results_table(boto3.client("dynamodb"), "t")
            store = ResultStore("fidelity-results", "t")
            ratios = []
            for round_no in range(options.rounds):
                bare_tps = bare(endpoint, run_step_spec.spec.run, options.clients)
                step = run_step_spec.model_copy(update={"step_id": f"pg/tpcb/round{round_no}"})
                with tempfile.TemporaryDirectory() as tmp:
                    harness_tps = run_step(step, store, Path(tmp)).tps
                ratios.append(harness_tps / bare_tps)
                print(
                    f"round {round_no + 1}: bare {bare_tps:9.1f} tps   pgarena {harness_tps:9.1f} tps   ratio {ratios[-1]:.3f}",
                    flush=True,
                )
        spread = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
        print(
            f"fidelity: pgarena / bare = {statistics.mean(ratios):.3f} (median {statistics.median(ratios):.3f}, "
            f"stdev {spread:.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} rounds)"
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
