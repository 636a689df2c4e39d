"""The coordinator's own cost and how it grows: campaign wall time minus the time the benchmarks ran on
the critical path, and state transitions (what Step Functions bills), for 1, 2, 4, 8 targets and for
1..32 steps per target; and the worker's own footprint (CPU-seconds and peak RSS per worker process,
the tool left out).

    .venv/bin/python bench/overhead.py [--duration 1] [--targets 1 2 4 8] [--steps 1 2 4 8 16 32] [--shards]
        [--steps-are clients|repetitions] [--before REF] [--rounds N]

The servers are started once, before any campaign, and given to the campaigns as self-hosted
endpoints: their start-up is no part of any campaign's wall time. Every run step lasts --duration
seconds (pgbench -T); steps per target are client counts 1..k of one phase (--steps-are clients, the
default: a sweep, which one warm worker serves) or k repetitions (each its own phase, so its own
worker). The script runs against whichever pgarena its interpreter imports: run it with another
checkout's interpreter to measure that code with this same sweep. Slopes are least-squares fits over the sweep:
overhead per added target (one step each) and per added step (one target). Goal: flat, i.e. a
constant cost per target and per step. --shards adds the sharded-run table (start skew, transitions
per shard).

--before REF measures another commit in the same run, point by point: its tree is exported (git archive)
to a folder in the temporary directory with a virtualenv of its own (made once, reused by later runs),
and this script, run there by a child process with that interpreter, measures each point right before or
after this checkout does (the order alternates), on servers of its own. Slopes and their ratio are
printed for both: the two sides meet the same load on a shared machine. --rounds repeats the sweep (the
slopes are fitted over every point measured), for a machine whose load comes and goes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.runtime import LocalRun, LocalRuntime
from pgarena.model.matrix import Campaign, Endpoint
from pgarena.planning.campaign import parse_campaign


def campaign(  # noqa: PLR0913  # the sweep's knobs
    name: str, endpoints: list[Endpoint], steps: int, duration_s: int, workers: int = 1, steps_are: str = "repetitions"
) -> Campaign:
    clients: int | list[int] = list(range(1, steps + 1)) if steps_are == "clients" else 2
    return parse_campaign(
        {
            "campaign": name,
            "repetitions": steps if steps_are == "repetitions" else 1,
            "targets": [
                {"name": f"t{i}", "provider": "self-hosted", "endpoint": e.model_dump(mode="json", exclude={"password"})}
                for i, e in enumerate(endpoints)
            ],
            "workloads": [
                {
                    "name": "tpcb",
                    "tool": "pgbench",
                    "init": {"scale": 1},
                    "run": {"clients": clients, "jobs": 1, "duration_s": duration_s, "progress_s": 1, "workers": workers},
                }
            ],
        }
    )


@dataclass
class Measured:
    targets: int
    steps: int  # run steps per target
    workers: int  # steps run, the load steps' included (one worker process each before warm workers)
    processes: int  # worker processes that ran them (their worker_id; one per step where none is recorded)
    wall_s: float
    bench_s: float  # the tools' run time on the critical path
    transitions: int
    worker_cpu_s: list[float]
    worker_rss_mib: list[float]

    @property
    def overhead_s(self) -> float:
        return self.wall_s - self.bench_s


def summaries(run: LocalRun) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in run.results_dir.glob("raw/**/summary.json")]


def critical_path_s(steps: list[dict[str, Any]]) -> float:
    """Targets run one after another (target_concurrency 1); a step's shards run together."""
    groups: dict[str, float] = {}
    for data in steps:
        step_id = data["step_id"]
        group = step_id.rsplit("/s", 1)[0] if "/s" in step_id.rsplit("/", 1)[-1] else step_id
        groups[group] = max(groups.get(group, 0.0), data["wall_s"])
    return sum(groups.values())


def measure(  # noqa: PLR0913  # the runtime and the sweep's knobs
    runtime: LocalRuntime, name: str, endpoints: list[Endpoint], steps: int, duration_s: int, steps_are: str = "repetitions"
) -> Measured:
    run = runtime.wait(runtime.start(campaign(name, endpoints, steps, duration_s, steps_are=steps_are)))
    if run.status != "SUCCEEDED" or run.results is None or any(t.status != "succeeded" for t in run.results.targets):
        raise SystemExit(f"{name}: the campaign did not succeed ({run.status}, {run.error}): see {run.results_dir}")
    done = summaries(run)
    costs = [s["harness"] for s in done if s.get("harness")]
    return Measured(
        targets=len(endpoints),
        steps=steps,
        workers=len(done),
        processes=len(done) if None in (ids := {(s.get("worker") or {}).get("worker_id") for s in done}) else len(ids),
        wall_s=run.wall_s,
        bench_s=critical_path_s(done),
        transitions=run.state_transitions,
        worker_cpu_s=[c["cpu_s"] for c in costs],
        worker_rss_mib=[c["peak_rss_mib"] for c in costs if c.get("peak_rss_mib")],
    )


def slope(xs: list[int], ys: list[float]) -> tuple[float, float]:
    """Least-squares line through the points: (slope, intercept)."""
    fitted_slope, intercept = np.polyfit(np.array(xs, dtype=float), np.array(ys, dtype=float), 1)
    return float(fitted_slope), float(intercept)


def worker_start_up() -> tuple[float, float]:
    """What a worker process costs before it takes its step: the interpreter and its imports (CPU-seconds
    from RUSAGE_CHILDREN, peak RSS from /usr/bin/time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-c", "import pgarena.worker.run"],
        check=True,
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, int(done.stderr.split()[-1]) / 1024


def table(rows: list[Measured]) -> None:
    print(
        "targets  steps/target  steps  processes  wall (s)  tools (s)  overhead (s)  per step (s)  transitions  per step  "
        "worker CPU (s) median/max  worker RSS (MiB) max"
    )
    for m in rows:
        print(
            f"{m.targets:7d}  {m.steps:12d}  {m.workers:5d}  {m.processes:9d}  {m.wall_s:8.1f}  {m.bench_s:9.1f}  {m.overhead_s:12.1f}  "
            f"{m.overhead_s / m.workers:14.2f}  {m.transitions:11d}  {m.transitions / m.workers:10.1f}  "
            f"{float(np.median(m.worker_cpu_s)):13.2f} / {max(m.worker_cpu_s):5.2f}  {max(m.worker_rss_mib):20.1f}",
            flush=True,
        )


def fits(label: str, unit: str, rows: list[Measured], x: str) -> None:
    xs = [getattr(m, x) for m in rows]
    if len(set(xs)) < 2:
        return
    overhead, transitions = slope(xs, [m.overhead_s for m in rows]), slope(xs, [m.transitions for m in rows])
    print(
        f"{label}: overhead {overhead[0]:+.2f} s per added {unit} (intercept {overhead[1]:.1f} s), "
        f"transitions {transitions[0]:+.2f} per added {unit} (intercept {transitions[1]:.1f})"
    )


def shards(runtime: LocalRuntime, endpoint: Endpoint, duration_s: int) -> None:
    print("workers  shards  transitions  per shard  start skew (s)")
    points: list[tuple[int, int]] = []  # (shards, transitions) per worker count
    for workers in (1, 2, 4, 8):
        run = runtime.wait(runtime.start(campaign(f"shards{workers}", [endpoint], 1, duration_s, workers)))
        assert run.results is not None
        (w,) = run.results.targets[0].workloads
        count = max(len(w.shards), 1)
        skew = f"{w.start_skew_s:.3f}" if w.start_skew_s is not None else "-"
        print(f"{workers:7d}  {count:6d}  {run.state_transitions:11d}  {run.state_transitions / (count + 1):9.1f}  {skew:>14}")
        points.append((count, run.state_transitions))
    first = points[0]
    print(f"marginal transitions per added shard: {(run.state_transitions - first[1]) / (count - first[0]):.1f}")


def before_python(ref: str) -> Path:
    """The interpreter of a virtualenv holding commit `ref` of this repository (pgarena and its local
    runtime, installed editable as the developers' guide does), made on first use."""
    repo = Path(__file__).resolve().parents[1]
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=repo, check=True, capture_output=True, text=True
    )
    tree = Path(tempfile.gettempdir()) / f"pgarena-bench-{sha.stdout.strip()[:12]}"
    python = tree / ".venv" / "bin" / "python"
    if python.exists():
        return python
    print(f"exporting {ref} to {tree} and installing it (once)", flush=True)
    tree.mkdir(exist_ok=True)
    archive = subprocess.run(["git", "archive", sha.stdout.strip()], cwd=repo, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", ".[local]", "numpy"], cwd=tree, check=True)
    return python


class Before:
    """This script run by another checkout's interpreter (--serve): it measures the points it is sent."""

    def __init__(self, python: Path, duration: int, targets: int, steps_are: str):
        argv = [
            str(python),
            __file__,
            "--serve",
            "--duration",
            str(duration),
            "--targets",
            str(targets),
            "--steps-are",
            steps_are,
        ]
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._read()  # its servers and runtime started

    def _read(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the --before side ended (exit code {self.process.wait()})")
        return line

    def measure(self, what: str, count: int) -> Measured:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{what} {count}\n")
        self.process.stdin.flush()
        return Measured(**json.loads(self._read()))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def serve(runtime: LocalRuntime, endpoints: list[Endpoint], duration: int, steps_are: str, out: IO[str]) -> None:
    """--serve: one point measured per line read ("targets N", "steps K"), answered as a JSON line."""
    out.write("ready\n")
    out.flush()
    for n, line in enumerate(sys.stdin):
        what, count = line.split()
        if what == "targets":
            measured = measure(runtime, f"before{n}", endpoints[: int(count)], 1, duration)
        else:
            measured = measure(runtime, f"before{n}", endpoints[:1], int(count), duration, steps_are)
        out.write(json.dumps(dataclasses.asdict(measured)) + "\n")
        out.flush()


def compared(label: str, unit: str, before: list[Measured], after: list[Measured], x: str) -> None:
    xs = [getattr(m, x) for m in after]
    if len(set(xs)) < 2:
        return
    old, new = slope(xs, [m.overhead_s for m in before])[0], slope(xs, [m.overhead_s for m in after])[0]
    ratio = f"{old / new:.1f}x lower" if new > 0 else "no cost left"
    print(f"{label}: overhead {old:+.2f} s per added {unit} before, {new:+.2f} s after ({ratio})")


def sweep(
    runtime: LocalRuntime, endpoints: list[Endpoint], options: argparse.Namespace, before: Before | None
) -> tuple[dict[str, list[Measured]], dict[str, list[Measured]]]:
    """Every point measured here and, with --before, by the other side right before or after (the order
    alternates: neither side always runs first)."""
    rows: dict[str, list[Measured]] = {"targets": [], "steps": []}
    old_rows: dict[str, list[Measured]] = {"targets": [], "steps": []}
    points = ([("targets", n) for n in options.targets] + [("steps", k) for k in options.steps]) * options.rounds
    for i, (what, count) in enumerate(points):
        if before is not None and i % 2 == 0:
            old_rows[what].append(before.measure(what, count))
        if what == "targets":
            rows[what].append(measure(runtime, f"targets{count}", endpoints[:count], 1, options.duration))
        else:
            rows[what].append(measure(runtime, f"steps{count}", endpoints[:1], count, options.duration, options.steps_are))
        if before is not None and i % 2 == 1:
            old_rows[what].append(before.measure(what, count))
        then = f"before {old_rows[what][-1].overhead_s:.1f} s, " if before is not None else ""
        print(f"{what} {count}: overhead {then}{rows[what][-1].overhead_s:.1f} s", flush=True)
    return rows, old_rows


def report(options: argparse.Namespace, rows: dict[str, list[Measured]], old_rows: dict[str, list[Measured]]) -> None:
    steps_label = f"per step (1 target, steps are {options.steps_are})"
    sides = [(f"before ({options.before})", old_rows), ("after (this checkout)", rows)] if options.before else [("", rows)]
    for name, side in sides:
        if name:
            print(name)
        table(side["targets"])
        table(side["steps"])
        fits("per target (1 step each)", "target", side["targets"], "targets")
        fits(steps_label, "step", side["steps"], "steps")
    if options.before:
        compared("per target (1 step each)", "target", old_rows["targets"], rows["targets"], "targets")
        compared(steps_label, "step", old_rows["steps"], rows["steps"], "steps")
    every = rows["targets"] + rows["steps"]
    cpu_all = [c for m in every for c in m.worker_cpu_s]
    rss_all = [r for m in every for r in m.worker_rss_mib]
    print(
        f"worker footprint over {len(cpu_all)} worker processes (in their step, the tool left out): CPU "
        f"median {float(np.median(cpu_all)):.2f} s, max {max(cpu_all):.2f} s; peak RSS median "
        f"{float(np.median(rss_all)):.1f} MiB, max {max(rss_all):.1f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=1, help="seconds per run step")
    parser.add_argument("--targets", type=int, nargs="+", default=[1, 2, 4, 8], help="target counts to sweep")
    parser.add_argument("--steps", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32], help="run steps per target")
    parser.add_argument("--shards", action="store_true", help="also the sharded-run table")
    parser.add_argument("--steps-are", choices=["clients", "repetitions"], default="clients", help="what a target's steps are")
    parser.add_argument("--before", metavar="REF", help="also measure this commit, point by point in the same run")
    parser.add_argument("--rounds", type=int, default=1, help="sweeps, one after the other: each point measured this often")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the --before side's child
    options = parser.parse_args()
    answers = sys.stdout
    if options.serve:  # the answers keep stdout; whatever else would print there goes to stderr
        answers = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        servers = [EmbeddedProcess(f"overhead{i}-{os.getpid()}", {"fsync": "off"}) for i in range(max(options.targets))]
        endpoints = []
        for server in servers:
            endpoints.append(server.start())
            stack.callback(server.stop)
        runtime = stack.enter_context(LocalRuntime(Path(tmp) / "results"))
        if options.serve:
            serve(runtime, endpoints, options.duration, options.steps_are, answers)
            return
        before = None
        if options.before:
            before = Before(before_python(options.before), options.duration, max(options.targets), options.steps_are)
            stack.callback(before.close)
        print(f"load at the start (loadavg): {Path('/proc/loadavg').read_text().strip()}", flush=True)
        cpu, rss = worker_start_up()
        print(f"worker start-up (interpreter + imports, before its step): {cpu:.2f} CPU-s, peak RSS {rss:.1f} MiB", flush=True)
        rows, old_rows = sweep(runtime, endpoints, options, before)
        report(options, rows, old_rows)
        if options.shards:
            shards(runtime, endpoints[0], options.duration)
        print(f"load at the end (loadavg): {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
