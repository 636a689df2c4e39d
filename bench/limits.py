"""What a study-sized campaign asks of AWS's limits: its Step Functions history events (counted from its
shape, pgarena.planning.history) and the peak memory of aggregating its shards (measured).

    .venv/bin/python bench/limits.py [--workers 1 10 40] [--seconds 300] [--tps 2000]
    .venv/bin/python bench/limits.py aggregate --workers 10 [--seconds 300] [--eager]

The study is 8 targets x 8 client counts x 3 repetitions. For each worker count it prints the history
events against the 25,000 Step Functions allows, then runs the aggregation (finalize: the plan, every
step's summary, each shard's per-second histograms read from disk, results.json and the reports) in a
child process and prints that process's peak resident memory (VmHWM, as the strict local runtime
measures a Lambda's) against the Aggregate function's 1,024 MB. Each synthetic shard logs `--seconds`
seconds at `--tps` transactions per second: one encoded HdrHistogram per second, as a worker writes
them (~0.46 MB of JSON per 300 s shard at 2,000 tps). `--eager` loads every shard's series before
aggregating, as finalize did before issue 26.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pgarena.analysis.aggregate import aggregate
from pgarena.campaign.finalize import CampaignEnd, finalize, store_writer
from pgarena.campaign.ports import EndPorts
from pgarena.model.matrix import Campaign
from pgarena.model.outcomes import StepOutcome, TargetOutcome
from pgarena.model.results import ProgressSample, StepSummary
from pgarena.model.series import SecondBucket, ShardSeries
from pgarena.planning.history import HISTORY_LIMIT_EVENTS, count_history
from pgarena.planning.planner import plan_campaign
from pgarena.planning.shards import shard
from pgarena.report import publish_results

AGGREGATE_MEMORY_MIB = 1024  # cdk/pgarena_cdk/constants.py AGGREGATE (and FINALIZE_STOPPED)
VARIANTS = 4  # distinct synthetic shards on disk; every shard reads (and parses) its own copy's bytes


def study(workers: int, targets: int = 8, clients: int = 8, repetitions: int = 3) -> Campaign:
    """targets x client counts x repetitions of pgbench, each run split over `workers` workers."""
    target = {
        "provider": "self-hosted",
        "endpoint": {"host": "db.example.com", "port": 5432, "dbname": "postgres", "user": "bench", "password_env": "PW"},
    }
    workload = {
        "name": "tpcb",
        "tool": "pgbench",
        "init": {"scale": 100},
        "run": {"clients": [64 * (i + 1) for i in range(clients)], "jobs": 1, "duration_s": 300, "workers": workers},
    }
    return Campaign.model_validate(
        {
            "campaign": "study",
            "repetitions": repetitions,
            "targets": [{**copy.deepcopy(target), "name": f"t{i}"} for i in range(targets)],
            "workloads": [workload],
        }
    )


def synthetic_series(seed: int, seconds: int, tps: int, start: float = 1_800_000_000.0) -> ShardSeries:
    from pgarena.analysis.latency import encode, new_histogram  # the child's imports only

    rng = random.Random(seed)
    buckets = []
    for t in range(seconds):
        histogram = new_histogram()
        for _ in range(tps):
            histogram.record_value(int(rng.lognormvariate(7.5, 0.6)) + 1)
        buckets.append(SecondBucket(t=int(start) + t, count=tps, hist=encode(histogram)))
    return ShardSeries(start_epoch=start - 0.5, end_epoch=start + seconds + 0.5, seconds=buckets)


class DiskStore:
    """campaign.ports.Store for the measurement: summaries in memory (as the results table's query returns
    them), series read from files, reports counted and dropped."""

    def __init__(self, folder: Path, summaries: list[StepSummary]):
        self.folder = folder
        self.steps = summaries
        self.written = 0

    def get_json(self, key: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((self.folder / key).read_bytes())
        return document

    def put_bytes(self, key: str, data: bytes, content_type: str) -> str:
        self.written += len(data)
        return key

    def summaries(self, campaign_id: str) -> list[StepSummary]:
        return self.steps

    def keys(self, prefix: str) -> list[str]:
        return []

    def put_file(self, key: str, path: Path, content_type: str = "text/plain") -> str:
        return self.put_bytes(key, path.read_bytes(), content_type)

    def put_json(self, key: str, data: dict[str, Any]) -> str:
        return self.put_bytes(key, json.dumps(data).encode(), "application/json")

    def url(self, key: str) -> str:
        return f"file://{self.folder / key}"

    def put_summary(self, summary: StepSummary) -> None:
        self.steps.append(summary)

    def campaign_traces(self, campaign_id: str) -> list[str]:
        return []


def _campaign_left(plan: Any, folder: Path, seconds: int, tps: int) -> tuple[list[TargetOutcome], list[StepSummary], int]:
    """What the campaign's workers and states left: every step succeeded, each shard with its series."""
    variants = [f"series-{v}.json" for v in range(VARIANTS)]
    for v, name in enumerate(variants):
        if not (folder / name).exists():
            (folder / name).write_text(synthetic_series(v, seconds, tps).model_dump_json())
    progress = [ProgressSample(elapsed_s=float(s), tps=float(tps)) for s in range(5, seconds + 1, 5)]
    outcomes, summaries, shards = [], [], 0
    for phase in plan.phases:
        for target in phase.targets:
            steps = []
            for step in target.steps:
                for part in shard(step).shards:
                    sharded = part.shards > 1
                    shards += sharded
                    steps.append(StepOutcome(step_id=part.step_id, status="succeeded"))
                    summaries.append(
                        StepSummary(
                            campaign_id=plan.campaign_id,
                            step_id=part.step_id,
                            target=part.target,
                            workload=part.workload,
                            kind=part.kind,
                            tool="pgbench",
                            repetition=part.repetition,
                            clients=part.clients,
                            status="succeeded",
                            started_at="2027-01-15T12:00:00+00:00",
                            finished_at="2027-01-15T12:05:00+00:00",
                            wall_s=float(seconds),
                            tps=float(tps),
                            transactions=tps * seconds,
                            progress=progress if part.kind == "run" else [],
                            series=variants[shards % VARIANTS] if sharded else None,
                        )
                    )
            outcomes.append(TargetOutcome(name=target.name, phase=phase.phase, steps=steps))
    return outcomes, summaries, shards


def measure_aggregation(campaign: Campaign, seconds: int, tps: int, eager: bool, folder: Path) -> dict[str, Any]:
    """In this process: plan, what the campaign left, then the aggregation. Its peak memory is the process's."""
    plan = plan_campaign(campaign, "study-bench")
    outcomes, summaries, shards = _campaign_left(plan, folder, seconds, tps)
    store = DiskStore(folder, summaries)
    t0 = time.perf_counter()
    if eager:  # every shard's series at once, as finalize read them before issue 26
        series = {s.step_id: ShardSeries.model_validate(store.get_json(s.series)) for s in summaries if s.series}
        results = aggregate(plan, outcomes, summaries, "s", "f", None, series)
        publish_results(results, store_writer(store, plan.campaign_id))
    else:
        results = finalize(CampaignEnd(plan, outcomes, "s", finished_at="f"), EndPorts(store)).results
    assert all(t.status == "succeeded" for t in results.targets), [t.error for t in results.targets]
    return {
        "shards": shards,
        "steps": len(summaries),
        "aggregate_s": round(time.perf_counter() - t0, 1),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "results_mib": round(len(results.model_dump_json()) / 2**20, 1),
    }


def aggregation_in_child(  # noqa: PLR0913  # the study's shape and the shards' size, each an option
    workers: int, seconds: int, tps: int, eager: bool = False, targets: int = 8, clients: int = 8, repetitions: int = 3
) -> dict[str, Any]:
    """measure_aggregation in a fresh interpreter: its peak memory is the aggregation's alone."""
    shape = ["--targets", str(targets), "--clients", str(clients), "--repetitions", str(repetitions)]
    command = [sys.executable, __file__, "aggregate", "--workers", str(workers), "--seconds", str(seconds), "--tps", str(tps)]
    out = subprocess.run(command + shape + (["--eager"] if eager else []), capture_output=True, text=True, check=True).stdout
    measured: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", choices=["all", "aggregate"], default="all")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 10, 40], help="workers per run (%(default)s)")
    parser.add_argument("--seconds", type=int, default=300, help="each shard's measured seconds (%(default)s)")
    parser.add_argument("--tps", type=int, default=2000, help="each shard's transactions per second (%(default)s)")
    parser.add_argument("--eager", action="store_true", help="load every shard's series first (the old finalize)")
    parser.add_argument("--targets", type=int, default=8, help="targets (%(default)s)")
    parser.add_argument("--clients", type=int, default=8, help="client counts (%(default)s)")
    parser.add_argument("--repetitions", type=int, default=3, help="repetitions (%(default)s)")
    options = parser.parse_args()
    if options.mode == "aggregate":
        with tempfile.TemporaryDirectory() as folder:
            campaign = study(options.workers[0], options.targets, options.clients, options.repetitions)
            print(json.dumps(measure_aggregation(campaign, options.seconds, options.tps, options.eager, Path(folder))))
        return
    print(f"8 targets x 8 client counts x 3 repetitions; shards of {options.seconds} s at {options.tps:,} tps")
    for workers in options.workers:
        events = count_history(study(workers)).events
        verdict = "within" if events <= HISTORY_LIMIT_EVENTS else "PAST"
        print(f"{workers:3d} workers: {events:7,} history events ({verdict} {HISTORY_LIMIT_EVENTS:,})", flush=True)
        for eager in (False, True) if options.eager else (False,):
            m = aggregation_in_child(workers, options.seconds, options.tps, eager)
            how = "eager (old)" if eager else "streamed"
            print(
                f"             aggregation {how}: {m['shards']:,} shards, peak {m['peak_rss_mib']:,} MiB of "
                f"{AGGREGATE_MEMORY_MIB:,} ({m['aggregate_s']} s, results.json {m['results_mib']} MiB)",
                flush=True,
            )


if __name__ == "__main__":
    main()
