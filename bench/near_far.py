"""What distance costs a database's figures: one embedded server measured directly and through the delay
proxy at 1 and 2 ms each way (embedded.network_delay_ms), at 1 and 8 clients.

    .venv/bin/python bench/near_far.py [--duration 10] [--repetitions 1] [--delays 0 1 2]

Runs one local campaign with a target per delay (the same settings; targets one at a time) and prints
tps and p99 latency side by side, with each target's measured median round trip. pgbench's tpcb-like
transaction makes 7 round trips, so one client should lose about 7 x 2 x delay ms per transaction;
8 clients hide part of it by overlapping their waits. `--delays 0 0.001 1 2` adds a column for the proxy's
own hop (two more process wake-ups per round trip), which a loaded machine makes cost more.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

CLIENTS = [1, 8]


def matrix(delays: list[float], duration_s: int, repetitions: int) -> dict[str, object]:
    settings = {"synchronous_commit": "off", "shared_buffers": "128MB"}
    return {
        "campaign": "near-far",
        "repetitions": repetitions,
        "ranking": {"allow_unequal_footing": True},
        "targets": [
            {
                "name": f"delay-{delay:g}ms".replace(".", "_"),
                "provider": "embedded",
                "embedded": {"settings": settings, "network_delay_ms": delay},
            }
            for delay in delays
        ],
        "workloads": [
            {
                "name": "tpcb",
                "tool": "pgbench",
                "init": {"scale": 10},
                "run": {"clients": CLIENTS, "jobs": 2, "duration_s": duration_s, "progress_s": 1},
            }
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--delays", type=float, nargs="+", default=[0.0, 1.0, 2.0], help="ms each way")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="near-far-") as out:
        run = run_local(parse_campaign(matrix(args.delays, args.duration, args.repetitions)), Path(out))
    if run.results is None:
        raise SystemExit(f"campaign {run.status}: {run.error}")
    targets = run.results.targets
    header = f"{'clients':>7} | " + " | ".join(f"{t.name + ' tps':>16} {'p99 ms':>8}" for t in targets)
    print("median RTT (ms): " + ", ".join(f"{t.name} {t.rtt_ms if t.rtt_ms is not None else '?'}" for t in targets))
    print(header)
    print("-" * len(header))
    for clients in CLIENTS:
        cells = []
        for t in targets:
            point = next((p for p in t.points if p.clients == clients), None)
            tps = f"{point.tps.mean:,.1f}" if point and point.tps else "-"
            p99 = f"{point.p99_ms.mean:.2f}" if point and point.p99_ms else "-"
            cells.append(f"{tps:>16} {p99:>8}")
        print(f"{clients:>7} | " + " | ".join(cells))
    print(f"({args.repetitions} run(s) per point, {args.duration} s each; wall {run.wall_s:.0f} s)")


if __name__ == "__main__":
    main()
