"""The worker's cost after the tool exits, per logged transaction: pgbench's per-transaction log
compressed, checksummed and uploaded (the evidence), then scanned (the histogram), before (gzip's
default level 9, then the compressed file read back for its sha256) and now (pgarena.campaign.step.evidence:
level 1, hashed as it is written, the files side by side), in one run.

    .venv/bin/python bench/after_run.py [--transactions 150000 700000] [--files 1] [--rounds 3]

Generates seeded logs in pgbench's --log format (bench/txlog.py's generator, at 7,000 tps over 100
clients), split into --files thread files as pgbench -j writes them; uploads go to S3 under moto, in
this process (the worker's ResultStore, as the local runtime's workers use it). Rounds interleave the
two implementations; the median is printed. Goal: under 0.5 us per logged transaction.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import boto3
from moto import mock_aws
from txlog import generate  # bench/txlog.py, beside this script

from pgarena.aws.store import ResultStore
from pgarena.campaign.step.evidence import Evidence, gzip_file
from pgarena.tools.pgbench.txlog import read_txlog
from pgarena.worker.facts import cpu_model

TPS, CLIENTS = 7_000, 100


# --- OLD: pgarena.worker.run before this change, copied verbatim as the baseline ----------------------
def OLD_gzip(path: Path) -> Path:
    target = path.parent / "upload" / (path.name + ".gz")
    target.parent.mkdir(exist_ok=True)
    with path.open("rb") as source, gzip.open(target, "wb") as out:
        shutil.copyfileobj(source, out)
    return target


def old(evidence: Evidence, prefix: str, logs: list[Path]) -> list[str]:
    return [evidence.put_file(f"{prefix}/{log.name}.gz", OLD_gzip(log), "application/gzip") for log in logs]


# --- end of OLD ---------------------------------------------------------------------------------------


def new(evidence: Evidence, prefix: str, logs: list[Path]) -> list[str]:
    return evidence.put_logs(prefix, logs)


def split(path: Path, files: int, folder: Path) -> list[Path]:
    """The log dealt line by line into `files` thread files (pgbench_log.<pid>, .1, .2...)."""
    names = [folder / ("pgbench_log.4242" + (f".{i}" if i else "")) for i in range(files)]
    outs = [name.open("w") for name in names]
    with path.open() as lines:
        for i, line in enumerate(lines):
            outs[i % files].write(line)
    for out in outs:
        out.close()
    return names


def after_run(way: Callable[[Evidence, str, list[Path]], list[str]], store: ResultStore, logs: list[Path], key: str) -> float:
    """Seconds from the tool's exit to the log's histogram: the logs kept (compressed, checksummed,
    uploaded), then scanned, as run_step does."""
    evidence = Evidence(store)
    t0 = time.perf_counter()
    keys = way(evidence, key, logs)
    read_txlog(logs, per_second=False)
    elapsed = time.perf_counter() - t0
    assert set(evidence.of(keys)) == set(keys)  # every kept file's size and sha256 recorded
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transactions", type=int, nargs="+", default=[150_000, 700_000])
    parser.add_argument("--files", type=int, default=1, help="thread files per log (pgbench -j)")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    print(
        f"CPU: {cpu_model(Path('/proc/cpuinfo').read_text())}; load at the start (loadavg): {Path('/proc/loadavg').read_text().strip()}",
        flush=True,
    )
    with mock_aws(), tempfile.TemporaryDirectory() as tmp:
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="results")
        store = ResultStore("results", "results", s3=s3, dynamodb=boto3.client("dynamodb", region_name="us-east-1"))
        print(
            "transactions  files  log (MiB)  before (s)  after (s)  before (us/tx)  after (us/tx)  speed-up  gz size after/before"
        )
        for n in options.transactions:
            folder = Path(tmp) / str(n)
            folder.mkdir()
            whole = folder / "whole.log"
            generate(whole, -(-n // TPS), TPS, CLIENTS)
            with whole.open() as lines, (folder / "cut.log").open("w") as cut:  # exactly n lines
                cut.writelines(line for _, line in zip(range(n), lines))
            logs = split(folder / "cut.log", options.files, folder)
            mib = sum(log.stat().st_size for log in logs) / 2**20
            before, after = [], []
            for r in range(options.rounds):
                before.append(after_run(old, store, logs, f"old/{n}/{r}"))
                after.append(after_run(new, store, logs, f"new/{n}/{r}"))
            b, a = statistics.median(before), statistics.median(after)
            old_size = sum(OLD_gzip(log).stat().st_size for log in logs)
            new_size = sum(gzip_file(log, log.with_suffix(".l1.gz")).size_bytes for log in logs)
            print(
                f"{n:12,d}  {options.files:5d}  {mib:9.1f}  {b:10.3f}  {a:9.3f}  {b / n * 1e6:14.2f}  {a / n * 1e6:13.2f}  "
                f"{b / a:7.1f}x  {new_size / old_size:21.2f}",
                flush=True,
            )
    print(f"load at the end (loadavg): {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
