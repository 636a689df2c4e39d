"""Compare two campaigns (e.g. last week's scheduled run and this week's): what changed per target,
workload and client count, with regressions flagged. Pure, but for `load_results`.

Each figure (tps, p95 latency, tps at SLO) at each point is decided on the ranking's engine
(pgarena.analysis.significance): the ratio of B's mean to A's over their repetitions, Welch's interval
on its log with each campaign's own between-run noise and count, at 5% shared over the point's
figures (Bonferroni); a regression or improvement when it excludes no change, unchanged when it lies
within the threshold (the equivalence margin), inconclusive (within_noise) otherwise, and always so
with fewer than 3 runs a side."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from pgarena.analysis.comparisons import Levels
from pgarena.analysis.metrics import stored_metrics
from pgarena.analysis.significance import ALPHA, MIN_RUNS, decide, log_ratio_test
from pgarena.model.comparison import Change, Comparison, FigureTest, SettingChange
from pgarena.model.figures import Interval
from pgarena.model.matrix_errors import problems_of
from pgarena.model.matrix_json import MAX_RESULTS_BYTES, read_text
from pgarena.model.metrics import PointMetrics
from pgarena.model.results import CampaignResults, TargetResult

# A change shown smaller than this (relative) is no change: the equivalence margin.
DEFAULT_THRESHOLD = 0.05
# The reason an inconclusive point ends with (its verdict, said again for --json's readers).
INCONCLUSIVE = "inconclusive: not separated, nor within the threshold"


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


def _test(figure: str, relative: float, a: Interval | None, b: Interval | None, levels: Levels) -> FigureTest | None:
    """B over A on one figure, as the ranking compares two targets (Welch on the log ratio, each side's own
    between-run noise and count): its outcome and the interval that decided it; None when either is missing."""
    if a is None or b is None or not a.mean or not b.mean or a.mean <= 0 or b.mean <= 0:
        return None
    ratio = b.mean / a.mean
    if a.stddev is None or b.stddev is None or min(a.n, b.n) < MIN_RUNS:
        return FigureTest(figure=figure, change=relative, outcome="inconclusive")
    test = log_ratio_test(ratio, b.stddev / b.mean, b.n, a.stddev / a.mean, a.n, levels.alpha)
    decision = decide(test, levels.alpha, levels.equivalence_alpha, levels.margin)
    if decision.low is None or decision.high is None:
        return FigureTest(figure=figure, change=relative, outcome=decision.outcome, confidence=decision.confidence)
    return FigureTest(
        figure=figure,
        change=relative,
        outcome=decision.outcome,
        ci_low=decision.low - 1,
        ci_high=decision.high - 1,
        confidence=decision.confidence,
    )


def interval_text(test: FigureTest) -> str:
    """'[-14.3%, -9.7%] at 98.3%': the interval that decided a figure, or why there is none."""
    if test.ci_low is not None and test.ci_high is not None and test.confidence is not None:
        return f"[{test.ci_low:+.1%}, {test.ci_high:+.1%}] at {test.confidence:.1%}"
    return "no interval" if test.confidence is not None else f"fewer than {MIN_RUNS} runs: no interval"


def figure_reason(test: FigureTest) -> str:
    """'tps -12.0% [-14.3%, -9.7%] at 98.3%': a decided or undecided figure as the point's reasons give it."""
    return f"{test.figure} {test.change:+.1%} {interval_text(test)}"


def _slo(a: PointMetrics, b: PointMetrics) -> tuple[str | None, float | None, float | None, list[str]]:
    """tps at SLO in both campaigns, when both searched the same objective; a note when the objectives differ."""
    if a.slo is None or b.slo is None:
        return None, None, None, []
    if a.slo != b.slo:
        return None, None, None, [f"SLO changed ({a.slo} -> {b.slo}): tps at SLO not compared"]
    return a.slo, a.slo_tps, b.slo_tps, []


def compare_points(a: PointMetrics, b: PointMetrics, threshold: float = DEFAULT_THRESHOLD) -> Change:
    """One point in both campaigns, each figure decided as the ranking decides two targets: different (a
    regression or an improvement, its interval excluding no change), unchanged (equivalent within the
    threshold: the interval inside it) or inconclusive (within_noise), at 5% shared over the point's figures."""
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
        nopm_a=a.nopm,
        nopm_b=b.nopm,
        nopm_change=_relative(a.nopm, b.nopm),
    )
    if a.complete and b.tps is None:
        return change.model_copy(update={"verdict": "failed", "reasons": ["no result in B"]})
    if b.complete and a.tps is None:
        return change.model_copy(update={"verdict": "recovered", "reasons": ["no result in A"]})
    if not (a.complete and b.complete):
        which = "A and B" if not (a.complete or b.complete) else ("A" if not a.complete else "B")
        return change.model_copy(update={"verdict": "not_comparable", "reasons": [f"failed or clamped in {which}"]})
    tests = _decided_figures(a, b, change, field, threshold)
    change = change.model_copy(update={"tests": tests})
    reasons = [figure_reason(t) for t in tests if t.outcome == "different"]
    undecided = [figure_reason(t) for t in tests if t.outcome == "inconclusive"]
    worse = any(t.outcome == "different" and (t.change > 0) == (t.figure.startswith("latency")) for t in tests)
    better = any(t.outcome == "different" and (t.change > 0) != (t.figure.startswith("latency")) for t in tests)
    if b.stability.collapsed and not a.stability.collapsed:
        reasons.append("tps collapsed during the run in B")
        worse = True
    if reasons and (worse or better):
        return change.model_copy(update={"verdict": "regression" if worse else "improvement", "reasons": [*reasons, *slo_notes]})
    if undecided:
        return change.model_copy(
            update={
                "verdict": "within_noise",
                "reasons": [*undecided, INCONCLUSIVE, *slo_notes],
            }
        )
    return change.model_copy(update={"reasons": slo_notes})


def _decided_figures(a: PointMetrics, b: PointMetrics, change: Change, field: str | None, threshold: float) -> list[FigureTest]:
    """Each figure of the point that both campaigns have, decided at 5% shared over them (Bonferroni)."""
    slo = change.slo
    figures = [
        ("tps", change.tps_change, a.tps_interval, b.tps_interval),
        (f"latency {field}", change.latency_change, _latency_interval(a, field), _latency_interval(b, field)),
        ("tps at SLO", change.slo_tps_change, a.slo_tps_interval if slo else None, b.slo_tps_interval if slo else None),
        ("NOPM", change.nopm_change, a.nopm_interval, b.nopm_interval),
    ]
    compared = [f for f in figures if f[1] is not None and f[2] is not None and f[3] is not None]
    levels = Levels(ALPHA / max(1, len(compared)), 2 * ALPHA, threshold)
    tests = []
    for label, relative, before, after in compared:
        if relative is not None and (test := _test(label, relative, before, after, levels)) is not None:
            tests.append(test)
    return tests


def _latency_interval(p: PointMetrics, field: str | None) -> Interval | None:
    """The latency figure's interval over repetitions (p95 has one; avg is compared without)."""
    return p.p95_interval if field == "p95" else None


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
