"""`pgarena estimate`'s sentences about time, embedded targets and the campaign cap: what each figure means."""

from __future__ import annotations

from pgarena.planning.cost import TASK_OVERHEAD_S


def duration_text(seconds: float) -> str:
    """'about 3 min', or seconds under two minutes."""
    return f"about {seconds:.0f} s" if seconds < 120 else f"about {seconds / 60:.0f} min"


def duration_line(local_s: float, aws_s: float, tasks: int) -> str:
    return (
        f"duration: {duration_text(local_s)} with `run --local` on this machine, {duration_text(aws_s)} in AWS "
        f"({tasks} worker tasks, each with ~{TASK_OVERHEAD_S} s of Fargate start-up)"
    )


def adaptive_note(min_repetitions: int | None, max_repetitions: int) -> str | None:
    """An adaptive campaign is priced, timed and booked at its maximum: what it may cost, not what it will."""
    if min_repetitions is None:
        return None
    return (
        f"repetitions {min_repetitions} to {max_repetitions}: priced and timed at {max_repetitions} (the most it may run); "
        f"it stops after {min_repetitions} or more as soon as the verdict is decided, and costs less then"
    )


def embedded_note(names: list[str]) -> str | None:
    """Embedded targets are priced as endpoints of the same hourly cost, but only the local runtime starts them."""
    if not names:
        return None
    return (
        f"embedded target{'s' * (len(names) != 1)} {', '.join(names)}: cannot run in AWS (`run --aws` refuses "
        "them; only `run --local` starts an embedded server); priced here as if each were an endpoint. "
        "Give each an 'endpoint' to run the campaign in AWS"
    )


def cap_lines(estimate_usd: float, bound_usd: float | None, cap_usd: float) -> tuple[list[str], bool]:
    """What the campaign cap means for this estimate, and whether the cost guard would refuse the campaign.
    The guard compares the cap with the estimate before any worker starts; the worst case is bounded by the
    steps' timeouts, not by the cap."""
    if estimate_usd > cap_usd:
        return [
            f"over the campaign cap ${cap_usd:.2f}: the estimate ${estimate_usd:.2f} is above it, so the cost guard would refuse it "
            "before any worker starts (raise cost.cap_usd, or run fewer or shorter steps)"
        ], True
    lines = [
        f"within the campaign cap ${cap_usd:.2f}: the cost guard compares the cap with the estimate "
        f"(${estimate_usd:.2f}), before any worker starts, and lets the campaign start"
    ]
    if bound_usd is not None and bound_usd > cap_usd:
        lines.append(
            f"the worst case ${bound_usd:.2f} (every step running to its timeout) is above the cap: the cap is not "
            "checked again while the campaign runs; the steps' timeouts bound what it can cost"
        )
    return lines, False
