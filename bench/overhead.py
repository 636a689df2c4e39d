"""The coordinator's own cost and how it grows: campaign wall time minus the time the benchmarks ran on
the critical path, and state transitions (what Step Functions bills), for 1, 2, 4, 8 targets and for
1..32 steps per target; and the worker's own footprint (CPU-seconds and peak RSS per worker process,
the tool left out).

    .venv/bin/python bench/overhead.py [--duration 1] [--targets 1 2 4 8] [--steps 1 2 4 8 16 32] [--shards]
        [--steps-are clients|repetitions]

The servers are started once, before any campaign, and given to the campaigns as self-hosted
endpoints: their start-up is no part of any campaign's wall time. Every run step lasts --duration
seconds (pgbench -T); steps per target are client counts 1..k of one phase (--steps-are clients, the
default: a sweep, which one warm worker serves) or k repetitions (each its own phase, so its own
worker). The script runs against whichever pgarena its interpreter imports: run it with another
checkout's interpreter to measure that code with this same sweep. Slopes are least-squares fits over the sweep:
overhead per added target (one step each) and per added step (one target). Goal: flat, i.e. a
constant cost per target and per step. --shards adds the sharded-run table (start skew, transitions
per shard).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=1, help="seconds per run step")
    parser.add_argument("--targets", type=int, nargs="+", default=[1, 2, 4, 8], help="target counts to sweep")
    parser.add_argument("--steps", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32], help="run steps per target")
    parser.add_argument("--shards", action="store_true", help="also the sharded-run table")
    parser.add_argument("--steps-are", choices=["clients", "repetitions"], default="clients", help="what a target's steps are")
    options = parser.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        servers = [EmbeddedProcess(f"overhead{i}", {"fsync": "off"}) for i in range(max(options.targets))]
        endpoints = []
        for server in servers:
            endpoints.append(server.start())
            stack.callback(server.stop)
        runtime = stack.enter_context(LocalRuntime(Path(tmp) / "results"))
        print(f"load at the start (loadavg): {Path('/proc/loadavg').read_text().strip()}", flush=True)
        cpu, rss = worker_start_up()
        print(f"worker start-up (interpreter + imports, before its step): {cpu:.2f} CPU-s, peak RSS {rss:.1f} MiB", flush=True)
        by_targets = [measure(runtime, f"targets{n}", endpoints[:n], 1, options.duration) for n in options.targets]
        table(by_targets)
        by_steps = [measure(runtime, f"steps{k}", endpoints[:1], k, options.duration, options.steps_are) for k in options.steps]
        table(by_steps)
        fits("per target (1 step each)", "target", by_targets, "targets")
        fits(f"per step (1 target, steps are {options.steps_are})", "step", by_steps, "steps")
        every = [m for rows in (by_targets, by_steps) for m in rows]
        cpu_all = [c for m in every for c in m.worker_cpu_s]
        rss_all = [r for m in every for r in m.worker_rss_mib]
        print(
            f"worker footprint over {len(cpu_all)} worker processes (in their step, the tool left out): CPU "
            f"median {float(np.median(cpu_all)):.2f} s, max {max(cpu_all):.2f} s; peak RSS median "
            f"{float(np.median(rss_all)):.1f} MiB, max {max(rss_all):.1f} MiB"
        )
        if options.shards:
            shards(runtime, endpoints[0], options.duration)
        print(f"load at the end (loadavg): {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
