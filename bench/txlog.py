"""pgbench --log -> per-second HdrHistograms: today's reader (pgarena.tools.pgbench.txlog, its compiled
scanner _txlog.c) against the line-by-line implementation it replaced, and against `wc -l` (a plain read
of the file), in one run.

    .venv/bin/python bench/txlog.py [--seconds 600] [--tps 6000] [--clients 1000] [--old-fraction 0.1] [--log PATH]

--log reads a log generated before (e.g. by an earlier run with --keep PATH) instead of generating one.

Generates a seeded study-scale log in a temp dir (600 s x 6,000 tps x 1,000 clients: 3.6 M lines in
pgbench's --log format, 0.05% of them "failed"), then measures each implementation in its own
subprocess: the child times its implementation call alone (wall, and CPU from getrusage RUSAGE_SELF,
leaving out interpreter start-up and the comparison) and reports its peak RSS (VmHWM: ru_maxrss would
carry the parent's size over the fork); `wc -l` is measured whole (RUSAGE_CHILDREN, /usr/bin/time for
its RSS). Every child runs alone, after one warm-up `wc -l` has put the file in the page cache. "new" is what a
sharded step runs (the run's histogram and the per-second series); "run histogram only" what an unsharded
step runs. The scanner uses two threads where the machine has two cores: wall and CPU are both printed. The old implementation is
copied below (OLD_*) as the baseline; it takes minutes on the full log, so it runs on the log's first
--old-fraction of lines and its time is scaled linearly (the output says so). Percentiles are compared
on that same slice: the largest p50/p95/p99/max difference over the whole run and over every second.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from hdrh.histogram import HdrHistogram

from pgarena.analysis.latency import HIGHEST_US, LOWEST_US, decode, encode, new_histogram, values_at_percentiles
from pgarena.model.series import SecondBucket, ShardSeries
from pgarena.tools.pgbench.txlog import read_txlog
from pgarena.worker.facts import cpu_model

PERCENTILES: list[float] = [50, 95, 99, 100]
# A measurement, as a child writes it (JSON) and the parent reads it.
Report = dict[str, Any]
LINES_PER_CHUNK = 500_000


# --- OLD: pgarena.analysis.latency before this change, copied verbatim as the baseline ---------------
def OLD_pgbench_log_histogram(paths: list[Path]) -> tuple[HdrHistogram, int]:
    histogram, not_done = new_histogram(), 0
    for path in paths:
        with path.open() as lines:
            for line in lines:
                fields = line.split()
                if len(fields) < 3:
                    continue
                if fields[2].isdigit():
                    histogram.record_value(min(max(int(fields[2]), LOWEST_US), HIGHEST_US))
                else:
                    not_done += 1
    return histogram, not_done


def OLD_pgbench_log_series(paths: list[Path]) -> ShardSeries | None:
    buckets: dict[int, tuple[HdrHistogram, list[int]]] = {}
    start, end = float("inf"), float("-inf")
    for path in paths:
        with path.open() as lines:
            for line in lines:
                fields = line.split()
                if len(fields) < 6 or not fields[4].isdigit() or not fields[5].isdigit():
                    continue
                second = int(fields[4])
                completed = second + int(fields[5]) / 1_000_000
                histogram, counts = buckets.setdefault(second, (new_histogram(), [0, 0]))
                if fields[2].isdigit():
                    latency_us = int(fields[2])
                    histogram.record_value(min(max(latency_us, LOWEST_US), HIGHEST_US))
                    counts[0] += 1
                    start = min(start, completed - latency_us / 1_000_000)
                else:
                    counts[1] += 1
                end = max(end, completed)
    if not buckets:
        return None
    return ShardSeries(
        start_epoch=start if start != float("inf") else min(buckets),
        end_epoch=end,
        seconds=[SecondBucket(t=t, count=c[0], failed=c[1], hist=encode(h)) for t, (h, c) in sorted(buckets.items())],
    )


# --- end of OLD ---------------------------------------------------------------------------------------


def generate(path: Path, seconds: int, tps: int, clients: int, seed: int = 17) -> int:
    """pgbench --log lines in end-time order: client_id transaction_no time script_no time_epoch time_us."""
    rng = np.random.default_rng(seed)
    start, n = 1_700_000_000, seconds * tps
    done_so_far = np.zeros(clients, dtype=np.int64)
    with path.open("w") as out:
        for lo in range(0, n, LINES_PER_CHUNK):
            m = min(LINES_PER_CHUNK, n - lo)
            ended = (lo + np.arange(m) + rng.uniform(0, 1, m)) / tps
            second = start + ended.astype(np.int64)
            micro = ((ended % 1) * 1e6).astype(np.int64)
            client = rng.integers(0, clients, m)
            # Each client's transactions are numbered in order: rank of the line within its client.
            order = np.argsort(client, kind="stable")
            firsts = np.searchsorted(client[order], np.arange(clients))
            number = np.empty(m, dtype=np.int64)
            number[order] = np.arange(m) - np.repeat(firsts, np.diff(np.append(firsts, m)))
            number += done_so_far[client]
            done_so_far += np.bincount(client, minlength=clients)
            latency = np.maximum(rng.lognormal(np.log(150_000), 0.5, m).astype(np.int64), 1).astype(str)
            latency[rng.random(m) < 0.0005] = "failed"
            out.writelines(
                f"{c} {t} {lat} 0 {s} {u}\n"
                for c, t, lat, s, u in zip(client.tolist(), number.tolist(), latency.tolist(), second.tolist(), micro.tolist())
            )
    return n


def cpu_s(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def wc_measured(path: Path) -> Report:
    """`wc -l` as a whole process: wall, CPU (RUSAGE_CHILDREN) and peak RSS (/usr/bin/time %M, KiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", "wc", "-l", str(path)], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = cpu_s(resource.getrusage(resource.RUSAGE_CHILDREN)) - cpu_s(before)
    return {"wall_s": wall, "cpu_s": cpu, "rss_mib": int(done.stderr.split()[-1]) / 1024}


def child_measured(argv: list[str], report: Path) -> Report:
    subprocess.run(argv, check=True)
    measured: Report = json.loads(report.read_text())
    return measured


def peak_mib() -> float:
    status = Path("/proc/self/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def child(which: str, path: Path, out: Path) -> None:
    """Runs in the subprocess: one implementation on one file (or every file of a folder, pgbench -j's
    thread files); writes its times and percentiles as JSON."""
    paths = sorted(path.iterdir()) if path.is_dir() else [path]
    usage, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if which == "run-only":  # what an unsharded step asks: the run's histogram, no per-second series
        read_txlog(paths, per_second=False)
        wall, cpu = time.perf_counter() - t0, cpu_s(resource.getrusage(resource.RUSAGE_SELF)) - cpu_s(usage)
        out.write_text(json.dumps({"wall_s": wall, "cpu_s": cpu, "rss_mib": peak_mib()}))
        return
    if which == "old":  # what the worker ran for a sharded step: both, each reading the log
        histogram, not_done = OLD_pgbench_log_histogram([path])
        series = OLD_pgbench_log_series([path])
    else:
        log = read_txlog(paths, per_second=True)
        histogram, not_done, series = log.histogram, log.not_done, log.series
    wall, cpu = time.perf_counter() - t0, cpu_s(resource.getrusage(resource.RUSAGE_SELF)) - cpu_s(usage)
    assert series is not None
    result = {
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_mib": peak_mib(),
        "total": values_at_percentiles(histogram, PERCENTILES),
        "count": histogram.get_total_count(),
        "not_done": not_done,
        "start": series.start_epoch,
        "end": series.end_epoch,
        "seconds": {
            b.t: [b.count, b.failed, *(values_at_percentiles(decode(b.hist), PERCENTILES) if b.count else [])]
            for b in series.seconds
        },
    }
    out.write_text(json.dumps(result))


def median_of(measured: list[Report]) -> Report:
    """The last measurement with each of wall, CPU and peak RSS replaced by its median over the rounds."""
    return measured[-1] | {key: statistics.median(m[key] for m in measured) for key in ("wall_s", "cpu_s", "rss_mib")}


def len_seconds(report: Report) -> int:
    return len(report.get("seconds", {}))


def largest_difference(old: Report, new: Report) -> tuple[float, bool]:
    """Largest relative percentile difference, and whether counts, failures and the window agree exactly."""
    same = (
        old["count"] == new["count"]
        and old["not_done"] == new["not_done"]
        and abs(old["start"] - new["start"]) < 1e-6
        and abs(old["end"] - new["end"]) < 1e-6
        and old["seconds"].keys() == new["seconds"].keys()
    )
    pairs = list(zip(old["total"], new["total"]))
    for t, row in old["seconds"].items():
        same = same and row[:2] == new["seconds"][t][:2]
        pairs += list(zip(row[2:], new["seconds"][t][2:]))
    return max(abs(a - b) / a for a, b in pairs), same


def main() -> None:  # noqa: PLR0915  # the benchmark's one script: log, rounds, report
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=600, help="generated log: seconds (%(default)s)")
    parser.add_argument("--tps", type=int, default=6000, help="generated log: transactions per second (%(default)s)")
    parser.add_argument("--clients", type=int, default=1000, help="generated log: clients (%(default)s)")
    parser.add_argument("--old-fraction", type=float, default=0.1, help="share of the log the old code reads")
    parser.add_argument("--log", type=Path, help="a log generated before: measured as is, not generated")
    parser.add_argument("--keep", type=Path, help="write the generated log here too, for --log next time")
    parser.add_argument(
        "--threads", type=int, default=8, help="the same log split into this many thread files, as pgbench -j writes it"
    )
    parser.add_argument("--repeat", type=int, default=5, help="measurements of each fast one, interleaved; the median is printed")
    parser.add_argument("--child", nargs=3, metavar=("WHICH", "LOG", "OUT"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        which, log, out = options.child
        child(which, Path(log), Path(out))
        return
    with tempfile.TemporaryDirectory(prefix="pgarena-txlog-") as tmp:
        full, part = options.log or Path(tmp) / "pgbench_log.1", Path(tmp) / "slice.1"
        if options.log:
            done = subprocess.run(["wc", "-l", str(full)], check=True, capture_output=True, text=True)
            lines = int(done.stdout.split()[0])
            print(f"log: {full} (generated before), {lines:,} lines, {full.stat().st_size / 2**20:.0f} MiB")
        else:
            lines = generate(full, options.seconds, options.tps, options.clients)
            if options.keep:
                shutil.copyfile(full, options.keep)
            size = full.stat().st_size
            print(
                f"log: {options.seconds} s x {options.tps:,} tps x {options.clients:,} clients = {lines:,} lines, "
                f"{size / 2**20:.0f} MiB"
            )
        part_lines = int(lines * options.old_fraction)
        with full.open() as source, part.open("w") as sliced:
            sliced.writelines(line for _, line in zip(range(part_lines), source))
        # pgbench -j N: one file per thread, a client's lines all in its thread's file.
        split = Path(tmp) / "threads"
        split.mkdir()
        outs = [(split / f"pgbench_log.1{f'.{i}' if i else ''}").open("w") for i in range(options.threads)]
        with full.open() as source:
            for line in source:
                outs[int(line.split(" ", 1)[0]) % options.threads].write(line)
        for handle in outs:
            handle.close()
        me = [sys.executable, __file__, "--child"]

        # Warm the page cache and the interpreter's imports once, then measure.
        subprocess.run(["wc", "-l", str(full)], check=True, capture_output=True)
        subprocess.run(["cat", *map(str, split.iterdir())], check=True, stdout=subprocess.DEVNULL)
        reports = {name: Path(tmp) / f"{name}.json" for name in ("new", "run-only", "threads", "new_part", "old_part")}
        # The fast ones take a tenth of a second: a round measures each once, in turn, and the median
        # round's figures are printed, so a moment of load on this shared machine moves none of them.
        rounds: dict[str, list[Report]] = {"wc": [], "new": [], "threads": [], "run-only": []}
        for _ in range(options.repeat):
            rounds["wc"].append(wc_measured(full))
            rounds["new"].append(child_measured([*me, "new", str(full), str(reports["new"])], reports["new"]))
            rounds["threads"].append(child_measured([*me, "new", str(split), str(reports["threads"])], reports["threads"]))
            rounds["run-only"].append(child_measured([*me, "run-only", str(full), str(reports["run-only"])], reports["run-only"]))
        wc, new, threads, run_only = (median_of(rounds[name]) for name in ("wc", "new", "threads", "run-only"))
        new_part = child_measured([*me, "new", str(part), str(reports["new_part"])], reports["new_part"])
        old_part = child_measured([*me, "old", str(part), str(reports["old_part"])], reports["old_part"])
        scale = lines / part_lines
        old_wall, old_cpu = old_part["wall_s"] * scale, old_part["cpu_s"] * scale
        worst, same = largest_difference(old_part, new_part)

    def row(name: str, m: Report, note: str = "", n: int = lines) -> str:
        rate = n / m["cpu_s"] / 1e6 if m["cpu_s"] else float("inf")
        return f"{name:<34} wall {m['wall_s']:8.2f} s  cpu {m['cpu_s']:8.2f} s  peak RSS {m['rss_mib']:7.1f} MiB  {rate:6.2f} M tx/cpu-s {note}"

    machine = f"{cpu_model(Path('/proc/cpuinfo').read_text()) or 'unknown CPU'} x {os.cpu_count()}"
    print(f"machine: {machine}; wc -l and new: median of {options.repeat} interleaved rounds")
    print(row("wc -l (full log)", wc))
    print(row("new: read_txlog (full log)", new))
    print(row("new, run histogram only (no series)", run_only, "(an unsharded step)"))
    print(row(f"new on {options.threads} thread files (-j {options.threads})", threads))
    print(row(f"new on the {options.old_fraction:.0%} slice", new_part, n=part_lines))
    print(row(f"old on the {options.old_fraction:.0%} slice", old_part, n=part_lines))
    print(
        f"old, full log (scaled x{scale:.0f} from the slice, linear): wall {old_wall:8.2f} s  cpu {old_cpu:8.2f} s  "
        f"peak RSS >= {old_part['rss_mib']:.1f} MiB (it grows with the log: every second's histogram is kept)"
    )
    print(f"new vs old: {old_wall / new['wall_s']:.0f}x faster (wall), {old_cpu / new['cpu_s']:.0f}x (cpu)   target >= 50x")
    print(
        f"new peak RSS: {new['rss_mib']:.1f} MiB, on {options.threads} thread files {threads['rss_mib']:.1f} MiB"
        "   target <= 200 MiB"
    )
    print(
        f"new vs wc -l: {new['wall_s'] / wc['wall_s']:.1f}x (wall), {new['cpu_s'] / max(wc['cpu_s'], 1e-3):.1f}x (cpu)   target <= 3x"
    )
    print(
        f"on {options.threads} thread files vs wc -l: {threads['wall_s'] / wc['wall_s']:.1f}x (wall), "
        f"{threads['cpu_s'] / max(wc['cpu_s'], 1e-3):.1f}x (cpu); same histograms and series as the one file: "
        f"{largest_difference(new, threads) == (0.0, True)}"
    )
    print(
        f"run histogram only vs wc -l: {run_only['wall_s'] / wc['wall_s']:.1f}x (wall), "
        f"{run_only['cpu_s'] / max(wc['cpu_s'], 1e-3):.1f}x (cpu); the per-second series adds "
        f"{new['cpu_s'] - run_only['cpu_s']:.3f} cpu-s ({len_seconds(new)} seconds encoded)"
    )
    print(f"load while measuring (uptime): {Path('/proc/loadavg').read_text().strip()}")
    print(
        f"old vs new on the slice: largest p50/p95/p99/max difference {worst:.4%} over the run and each of its seconds "
        f"(HdrHistogram precision 0.1%); counts, failures and window identical: {same}"
    )


if __name__ == "__main__":
    main()
