"""Compare two campaigns (e.g. last week's scheduled run and this week's): what changed per target,
workload and client count, with regressions flagged. Pure, but for `load_results`."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from pgarena.analysis.metrics import stored_metrics
from pgarena.model.comparison import Change, Comparison, SettingChange
from pgarena.model.matrix_errors import problems_of
from pgarena.model.matrix_json import MAX_RESULTS_BYTES, read_text
from pgarena.model.metrics import PointMetrics
from pgarena.model.results import CampaignResults, TargetResult

# A change smaller than this (relative) is no change.
DEFAULT_THRESHOLD = 0.05


class ResultsError(ValueError):
    """A results.json that is not one: its message is one line naming the file and what is wrong."""


def load_results(path: Path) -> CampaignResults:
    """A campaign folder (holding results.json) or a results.json file."""
    file = path / "results.json" if path.is_dir() else path
    try:
        return CampaignResults.model_validate_json(read_text(file, MAX_RESULTS_BYTES))
    except ValidationError as error:  # pydantic's own text spans lines and carries a URL: say it the matrix's way
        problems = [f"{p.path}: {p.message}" for p in problems_of(error)]
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ResultsError(f"{file}: not a pgarena results.json: {'; '.join(problems[:3])}{more}") from None
    except UnicodeDecodeError as error:
        raise ResultsError(f"{file}: not a pgarena results.json: not UTF-8 text: {error}") from None


def _points(results: CampaignResults) -> dict[tuple[str, str, int | None], PointMetrics]:
    return {(p.target, p.workload, p.clients): p for t in stored_metrics(results) for p in t.points}


def _relative(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return (b - a) / a


def _latency(a: PointMetrics, b: PointMetrics) -> tuple[str | None, float | None, float | None]:
    for field in ("p95", "avg"):
        la, lb = getattr(a.latency_ms, field), getattr(b.latency_ms, field)
        if la is not None and lb is not None:
            return field, la, lb
    return None, None, None


def _noise(a: PointMetrics, b: PointMetrics) -> float:
    """Run-to-run relative noise of the pair: the two campaigns' tps stddevs added, over A's tps (0 without
    repetitions). In pgbench's closed loop latency is clients / tps, so it stands for latency too."""
    assert a.tps
    return ((a.tps_stddev or 0.0) + (b.tps_stddev or 0.0)) / a.tps


def _slo_noise(a: PointMetrics, b: PointMetrics) -> float:
    """As _noise, for tps at SLO: its own spread over repetitions (the probes' bisection adds to tps's)."""
    if not a.slo_tps:
        return 0.0
    stddev = [i.stddev or 0.0 for i in (a.slo_tps_interval, b.slo_tps_interval) if i is not None]
    return sum(stddev) / a.slo_tps


def _slo(a: PointMetrics, b: PointMetrics) -> tuple[str | None, float | None, float | None, list[str]]:
    """tps at SLO in both campaigns, when both searched the same objective; a note when the objectives differ."""
    if a.slo is None or b.slo is None:
        return None, None, None, []
    if a.slo != b.slo:
        return None, None, None, [f"SLO changed ({a.slo} -> {b.slo}): tps at SLO not compared"]
    return a.slo, a.slo_tps, b.slo_tps, []


def compare_points(a: PointMetrics, b: PointMetrics, threshold: float = DEFAULT_THRESHOLD) -> Change:
    """One point in both campaigns: worse or better beyond the threshold and beyond run-to-run noise?"""
    field, lat_a, lat_b = _latency(a, b)
    slo, slo_a, slo_b, slo_notes = _slo(a, b)
    change = Change(
        target=a.target,
        workload=a.workload,
        clients=a.clients,
        verdict="unchanged",
        tps_a=a.tps,
        tps_b=b.tps,
        tps_change=_relative(a.tps, b.tps),
        latency_field=field,
        latency_a=lat_a,
        latency_b=lat_b,
        latency_change=_relative(lat_a, lat_b),
        slo=slo,
        slo_tps_a=slo_a,
        slo_tps_b=slo_b,
        slo_tps_change=_relative(slo_a, slo_b),
    )
    if a.complete and b.tps is None:
        return change.model_copy(update={"verdict": "failed", "reasons": ["no result in B"]})
    if b.complete and a.tps is None:
        return change.model_copy(update={"verdict": "recovered", "reasons": ["no result in A"]})
    if not (a.complete and b.complete):
        which = "A and B" if not (a.complete or b.complete) else ("A" if not a.complete else "B")
        return change.model_copy(update={"verdict": "not_comparable", "reasons": [f"failed or clamped in {which}"]})
    noise = _noise(a, b)
    reasons, noisy = [], []
    worse = False
    for label, relative, higher_is_worse, pair_noise in (
        ("tps", change.tps_change, False, noise),
        (f"latency {field}", change.latency_change, True, noise),
        ("tps at SLO", change.slo_tps_change, False, _slo_noise(a, b)),
    ):
        if relative is None or abs(relative) <= threshold:
            continue
        if abs(relative) <= pair_noise:
            noisy.append(f"{label} {relative:+.1%}")
            continue
        reasons.append(f"{label} {relative:+.1%}")
        worse = worse or (relative > 0) == higher_is_worse
    if b.stability.collapsed and not a.stability.collapsed:
        reasons.append("tps collapsed during the run in B")
        worse = True
    if reasons:
        return change.model_copy(update={"verdict": "regression" if worse else "improvement", "reasons": [*reasons, *slo_notes]})
    if noisy:
        return change.model_copy(update={"verdict": "within_noise", "reasons": [*noisy, "within run-to-run noise", *slo_notes]})
    return change.model_copy(update={"reasons": slo_notes})


# Where one server instance differs from another of the same configuration: never a difference worth listing.
INSTANCE_SETTINGS = frozenset(
    {"port", "unix_socket_directories", "data_directory", "config_file", "hba_file", "ident_file", "external_pid_file"}
)


def _settings(target: TargetResult) -> dict[str, str] | None:
    """name -> value as SHOW prints it ('128MB'); None when preflight never read them."""
    if target.server is None:
        return None
    return {s.name: s.shown for s in target.server.settings if s.name not in INSTANCE_SETTINGS}


def setting_changes(a: CampaignResults, b: CampaignResults) -> list[SettingChange]:
    """Settings that differ between the campaigns, for each target (by name) whose settings both recorded."""
    b_targets = {t.name: t for t in b.targets}
    changes = []
    for target in a.targets:
        other = b_targets.get(target.name)
        before, after = _settings(target), _settings(other) if other else None
        if before is None or after is None:
            continue
        for name in sorted(before.keys() | after.keys()):
            if before.get(name) != after.get(name):
                changes.append(SettingChange(target=target.name, name=name, a=before.get(name), b=after.get(name)))
    return changes


def compare_campaigns(a: CampaignResults, b: CampaignResults, threshold: float = DEFAULT_THRESHOLD) -> Comparison:
    """Every target x workload x client count of either campaign, matched by name."""
    points_a, points_b = _points(a), _points(b)
    changes = []
    for key in [*points_a, *(k for k in points_b if k not in points_a)]:
        target, workload, clients = key
        if key not in points_b:
            changes.append(
                Change(
                    target=target,
                    workload=workload,
                    clients=clients,
                    verdict="gone",
                    tps_a=points_a[key].tps,
                    slo_tps_a=points_a[key].slo_tps,
                    reasons=["only in A"],
                )
            )
        elif key not in points_a:
            changes.append(
                Change(
                    target=target,
                    workload=workload,
                    clients=clients,
                    verdict="new",
                    tps_b=points_b[key].tps,
                    slo_tps_b=points_b[key].slo_tps,
                    reasons=["only in B"],
                )
            )
        else:
            changes.append(compare_points(points_a[key], points_b[key], threshold))
    return Comparison(a=a.campaign_id, b=b.campaign_id, threshold=threshold, changes=changes, settings=setting_changes(a, b))
