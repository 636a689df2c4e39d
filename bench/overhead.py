"""The coordinator's own cost: campaign wall time minus the time the benchmarks ran on the critical path,
the start skew of sharded runs, and state transitions (what Step Functions bills) per shard.

    .venv/bin/python bench/overhead.py [--duration 5]

Goals: under 15 s overhead for a two-target campaign; start skew under 0.5 s; transitions per shard
flat as shards grow.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from pgarena.local.runtime import LocalRun, LocalRuntime
from pgarena.model.matrix import parse_campaign


def campaign(name: str, targets: int, workers: int, duration_s: int):
    return parse_campaign(
        {
            "campaign": name,
            "targets": [
                {"name": f"t{i}", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}} for i in range(targets)
            ],
            "workloads": [
                {
                    "name": "tpcb",
                    "tool": "pgbench",
                    "init": {"scale": 1},
                    "run": {"clients": 8, "jobs": 1, "duration_s": duration_s, "progress_s": 1, "workers": workers},
                }
            ],
        }
    )


def critical_path_s(run: LocalRun) -> float:
    """Targets run one after another (target_concurrency 1); a step's shards run together."""
    summaries = {}
    for path in run.results_dir.glob("raw/**/summary.json"):
        data = json.loads(path.read_text())
        summaries[data["step_id"]] = data["wall_s"]
    groups: dict[str, float] = {}
    for step_id, wall_s in summaries.items():
        group = step_id.rsplit("/s", 1)[0] if "/s" in step_id.rsplit("/", 1)[-1] else step_id
        groups[group] = max(groups.get(group, 0.0), wall_s)
    return sum(groups.values())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalRuntime(Path(tmp)) as runtime:
        run = runtime.wait(runtime.start(campaign("overhead", 2, 1, options.duration)))
        bench_s = critical_path_s(run)
        print(
            f"two-target campaign: wall {run.wall_s:.1f} s, benchmarks on the critical path {bench_s:.1f} s, "
            f"coordinator overhead {run.wall_s - bench_s:.1f} s (goal < 15 s)"
        )
        print("workers  shards  transitions  per shard  start skew (s)")
        first = None
        for workers in (1, 2, 4, 8):
            run = runtime.wait(runtime.start(campaign(f"shards{workers}", 1, workers, options.duration)))
            (w,) = run.results.targets[0].workloads
            shards = max(len(w.shards), 1)
            total_shards = shards + 1  # plus the init step's one worker
            skew = f"{w.start_skew_s:.3f}" if w.start_skew_s is not None else "-"
            print(
                f"{workers:7d}  {shards:6d}  {run.state_transitions:11d}  {run.state_transitions / total_shards:9.1f}  {skew:>14}"
            )
            first = first or (shards, run.state_transitions)
        print(f"marginal transitions per added shard: {(run.state_transitions - first[1]) / (shards - first[0]):.1f}")


if __name__ == "__main__":
    main()
