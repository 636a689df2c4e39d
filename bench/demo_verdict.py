"""Does `make demo`'s verdict name the faster target with its ratio and interval, run after run?

    .venv/bin/python bench/demo_verdict.py [--runs 10] [--matrix examples/local-demo.json]

Runs the demo's campaign (two embedded servers: durable, with fsync and synchronous_commit on, and
tuned, with both off; pgbench tpcb at 4 clients, 5 repetitions) N times through the local runtime as
`make demo` does, and counts the runs whose stored headline names the faster target (the higher mean
tps) first, with its tps ratio and 95% interval: "tuned ranks first: 2.01x the tps [1.80, 2.24] ...".
Prints each run's headline and noise warnings, then the count. Goal: at least 9 of 10.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from pgarena.analysis.headline import headline
from pgarena.local.runtime import run_local
from pgarena.model.results import CampaignResults
from pgarena.planning.campaign import load_campaign

RATIO_AND_INTERVAL = re.compile(r"\d+\.\d\dx the tps \[\d+\.\d\d, \d+\.\d\d\]")


def faster(results: CampaignResults) -> str | None:
    """The target with the higher mean tps, from the stored throughput comparison of the first pair."""
    for pair in results.comparisons:
        for c in pair.comparisons:
            if c.metric == "throughput":
                return pair.a if c.ratio > 1 else pair.b
    return None


def names_the_faster(results: CampaignResults) -> bool:
    said = headline(results.ranking, results.comparisons)
    winner = faster(results)
    return winner is not None and said.startswith(f"{winner} ranks first: ") and bool(RATIO_AND_INTERVAL.search(said))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--matrix", type=Path, default=Path("examples/local-demo.json"))
    args = parser.parse_args()
    campaign = load_campaign(args.matrix)
    hits = 0
    for i in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="demo-verdict-") as out:
            run = run_local(campaign, Path(out))
        if run.results is None:
            print(f"run {i}: {run.status} {run.error or ''}")
            continue
        ok = names_the_faster(run.results)
        hits += ok
        tps = {t.name: round(p.tps.mean, 1) for t in run.results.targets for p in t.points if p.tps is not None}
        said = headline(run.results.ranking, run.results.comparisons)
        print(f"run {i} ({run.wall_s:.0f} s, mean tps {tps}): {'yes' if ok else 'NO'}: {said}", flush=True)
        for warning in run.results.noise:
            print(f"  noisy: {warning.message}", flush=True)
    print(f"{hits} of {args.runs} runs named the faster target with its ratio and interval")


if __name__ == "__main__":
    main()
