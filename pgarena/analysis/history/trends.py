"""Each ranked metric's series per target x workload x client count across a campaign's runs, split
where the runs stop being comparable, with its change points in the user's units. Pure.

A run is comparable with the one before when everything results.json records about how the point was
measured is the same: the workload's settings (matrix.json, where the run kept it, and the tool, rate
and warm-up results.json records), the server's version and non-default settings, the tool's and
libraries' versions, the worker's site and size. Anything else (a server throttled, a noisy neighbour)
pgarena cannot see: that is what a change point finds.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pgarena.analysis.history import detect
from pgarena.analysis.history.index import Found, runs_of
from pgarena.analysis.history.schema import Change, Detector, History, Metric, RunEntry, Series, Split, TrendPoint
from pgarena.analysis.metrics import stored_metrics
from pgarena.analysis.significance import ALPHA, MIN_RUNS
from pgarena.model.figures import Interval
from pgarena.model.metrics import PointMetrics
from pgarena.model.results import CampaignResults, TargetResult

# A relative change smaller than this is no change (as `pgarena compare`'s default threshold).
DEFAULT_THRESHOLD = 0.05
# --fail-on-change: a change for the worse at one of a series' last this many runs fails the gate.
DEFAULT_RECENT_RUNS = 5
# Settings that differ between runs of the same server without changing what it does: where it lives.
_LOCATION_SETTINGS = frozenset(
    {
        "port", "data_directory", "config_file", "hba_file", "ident_file", "external_pid_file",
        "unix_socket_directories", "listen_addresses", "log_directory", "log_filename", "cluster_name",
        "ssl_cert_file", "ssl_key_file", "ssl_ca_file",
    }
)  # fmt: skip

WORKLOAD_SETTINGS = "workload settings"  # the fact holding the matrix's workload, as canonical JSON
Key = tuple[str, str, int | None]
METRICS: dict[Metric, tuple[str, Callable[[PointMetrics], Interval | None], bool]] = {
    # metric: (its unit, its interval on a point, whether higher is better)
    "tps": ("tps", lambda p: p.tps_interval, True),
    "p95_ms": ("ms", lambda p: p.p95_interval, False),
}
_NAMES: dict[Metric, str] = {"tps": "tps", "p95_ms": "p95 latency"}


def metric_name(metric: Metric) -> str:
    """The metric as a reader says it: 'p95 latency' for p95_ms."""
    return _NAMES[metric]


def _target_facts(target: TargetResult) -> dict[str, str]:
    facts: dict[str, str] = {}
    if target.server is not None:
        facts["server version"] = target.server.version.split(" on ")[0]
        for setting in target.server.settings:
            if setting.name not in _LOCATION_SETTINGS:
                facts[f"setting {setting.name}"] = setting.shown
    if target.site is not None:
        facts["worker site"] = target.site
    if target.worker_size is not None:
        facts["worker vcpu"] = f"{target.worker_size.vcpu:g}" if target.worker_size.vcpu is not None else "?"
        facts["worker memory MiB"] = str(target.worker_size.memory_mib)
    return facts


def point_facts(target: TargetResult, workload: str, clients: int | None, matrix: dict[str, str]) -> dict[str, str]:
    """What must be equal for two runs of this point to be compared: see the module's docstring."""
    facts = _target_facts(target)
    if workload in matrix:
        facts[WORKLOAD_SETTINGS] = matrix[workload]
    for run in target.workloads:
        if run.name != workload or (run.requested_clients or run.clients) != clients:
            continue
        facts["tool"] = run.tool
        facts["rate tps"] = f"{run.rate_tps:g}" if run.rate_tps is not None else "none"
        facts["warm-up s"] = str(run.warmup_s or 0)
        for name, version in (run.worker.tools if run.worker else {}).items():
            facts[f"version {name}"] = version
        break
    return facts


def _differing(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """The facts that differ. The workload's settings only where both runs kept their matrix (an AWS run's
    folder has none): unknown is not a change."""
    return sorted(
        k
        for k in before.keys() | now.keys()
        if before.get(k) != now.get(k) and (k != WORKLOAD_SETTINGS or (k in before and k in now))
    )


def _changed(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """Each fact that differs, as 'name: before -> now'; the workload's settings one setting at a time."""
    lines: list[str] = []
    for k in _differing(before, now):
        if k == WORKLOAD_SETTINGS:
            a, b = json.loads(before[k]), json.loads(now[k])
            lines += [f"workload {s}: {a.get(s)} -> {b.get(s)}" for s in sorted(a.keys() | b.keys()) if a.get(s) != b.get(s)]
        else:
            lines.append(f"{k}: {before.get(k, '(none)')} -> {now.get(k, '(none)')}")
    return lines


def _pct(ratio: float) -> str:
    return f"{abs(ratio - 1):.0%}"


def sentence(series: Series, change: Change) -> str:
    """e.g. 'aurora tpcb 64 clients: tps 18% lower [12%, 24%] since run 14 (2026-12-03)'."""
    word = "higher" if change.ratio > 1 else "lower"
    ends = sorted((_pct(change.ci95_low), _pct(change.ci95_high)), key=lambda t: float(t.rstrip("%")))
    return (
        f"{series.label}: {_NAMES[series.metric]} {_pct(change.ratio)} {word} [{ends[0]}, {ends[1]}] "
        f"since run {change.run} ({change.started_at[:10]})"
    )


def _segments(points: list[TrendPoint], facts: list[dict[str, str]]) -> tuple[list[Split], list[list[int]]]:
    """Splits where the facts change, and the point indices of each comparable segment."""
    splits: list[Split] = []
    segments: list[list[int]] = [[0]] if points else []
    for i in range(1, len(points)):
        if _differing(facts[i - 1], facts[i]):
            splits.append(Split(run=points[i].run, started_at=points[i].started_at, changed=_changed(facts[i - 1], facts[i])))
            segments.append([])
        segments[-1].append(i)
    return splits, segments


def _changes(series: Series, segments: list[list[int]], threshold: float) -> list[Change]:
    higher_better = METRICS[series.metric][2]
    found: list[Change] = []
    for segment in segments:
        values = [series.points[i].value for i in segment]
        for step in detect.changes(values, threshold):
            first = series.points[segment[step.index]]
            worse = (step.ratio < 1) == higher_better
            change = Change(
                run=first.run,
                started_at=first.started_at,
                ratio=step.ratio,
                ci95_low=step.low,
                ci95_high=step.high,
                p=step.p,
                direction="worse" if worse else "better",
                before_runs=step.before,
                after_runs=step.after,
                message="",
            )
            found.append(change.model_copy(update={"message": sentence(series, change)}))
    return found


def _collect(
    runs: list[tuple[RunEntry, CampaignResults]], found: Found
) -> dict[tuple[Key, Metric], list[tuple[TrendPoint, dict[str, str]]]]:
    collected: dict[tuple[Key, Metric], list[tuple[TrendPoint, dict[str, str]]]] = {}
    for entry, results in runs:
        targets = {t.name: t for t in results.targets}
        matrix = found.workloads.get(entry.folder, {})
        for metrics in stored_metrics(results):
            if metrics.target not in targets:
                continue
            for point in metrics.points:
                if not point.complete:  # failed, clamped, stalled or paced by its client: not a measure of the server
                    continue
                facts = point_facts(targets[metrics.target], point.workload, point.clients, matrix)
                for metric, (_, of, _) in METRICS.items():
                    value = of(point)
                    if value is None or value.mean <= 0:
                        continue
                    trend = TrendPoint(
                        run=entry.run,
                        campaign_id=entry.campaign_id,
                        started_at=entry.started_at,
                        value=value.mean,
                        ci95_low=value.ci95_low,
                        ci95_high=value.ci95_high,
                        n=value.n,
                    )
                    collected.setdefault(((metrics.target, point.workload, point.clients), metric), []).append((trend, facts))
    return collected


def build_series(
    runs: list[tuple[RunEntry, CampaignResults]], found: Found, threshold: float, detect_changes: bool
) -> list[Series]:
    """Every series of the campaign's runs, by target, workload, client count and metric."""
    out: list[Series] = []
    for ((target, workload, clients), metric), items in sorted(
        _collect(runs, found).items(), key=lambda kv: (kv[0][0][0], kv[0][0][1], kv[0][0][2] or 0, kv[0][1])
    ):
        points = [p for p, _ in items]
        splits, segments = _segments(points, [f for _, f in items])
        series = Series(
            target=target,
            workload=workload,
            clients=clients,
            metric=metric,
            unit=METRICS[metric][0],
            points=points,
            splits=splits,
        )
        if detect_changes:
            series = series.model_copy(update={"changes": _changes(series, segments, threshold)})
        out.append(series)
    return out


def gate(series: list[Series], recent: int) -> list[str]:
    """Changes for the worse at a series' last `recent` runs, in its latest comparable segment."""
    failing: list[str] = []
    for s in series:
        if not s.points:
            continue
        latest_runs = [p.run for p in s.points][-recent:]
        segment_start = s.splits[-1].run if s.splits else s.points[0].run
        failing += [c.message for c in s.changes if c.direction == "worse" and c.run >= segment_start and c.run in latest_runs]
    return failing


def history(  # noqa: PLR0913  # what is read, and how it is weighed
    found: Found,
    campaign: str,
    root: str,
    threshold: float = DEFAULT_THRESHOLD,
    recent: int = DEFAULT_RECENT_RUNS,
    first_run: int = 1,
) -> History:
    """The campaign's runs, series and changes; without ruptures, the series without change points.
    `first_run`: the number of the first run found (runs before it were not read)."""
    runs = runs_of(found, campaign, first_run)
    detecting = detect.available()
    series = build_series(runs, found, threshold, detecting)
    detector = (
        Detector(library=detect.LIBRARY, method=detect.method(), min_runs=MIN_RUNS, threshold=threshold, alpha=ALPHA)
        if detecting
        else None
    )
    return History(
        campaign=campaign, root=root, runs=[e for e, _ in runs], series=series, detector=detector, gate=gate(series, recent)
    )


def _longest_stretch(series: Series) -> int:
    """The most runs of the series with no split between them: what change points are searched in."""
    starts = {x.run for x in series.splits}
    longest = current = 0
    for p in series.points:
        current = 1 if p.run in starts else current + 1
        longest = max(longest, current)
    return longest


def too_few_runs(told: History) -> str | None:
    """With the detector, when no series has the runs a change needs (min_runs at each level), how many there
    are and how many a change needs, e.g. '2 runs: a change can be found from 6 runs on (3 at each level), after
    4 more': said instead of 'no change', which would claim what could not be looked for. None otherwise."""
    if told.detector is None:
        return None
    needed = 2 * told.detector.min_runs
    longest = max((_longest_stretch(s) for s in told.series), default=len(told.runs))
    if longest >= needed:
        return None
    more = needed - longest
    if longest == len(told.runs):
        have = f"{longest} run{'s' if longest != 1 else ''}"
    else:  # splits cut every series shorter than the campaign's runs
        have = f"{len(told.runs)} runs, at most {longest} comparable (a split starts a series anew)"
    return f"{have}: a change can be found from {needed} runs on ({told.detector.min_runs} at each level), after {more} more"
