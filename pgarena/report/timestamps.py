"""Timestamps as a reader reads them: to the second, in UTC, said so (results.json keeps ISO 8601 with
microseconds and an offset, which is for machines)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_second(stamp: str) -> str:
    """'2026-11-27T21:15:08.344708+00:00' -> '2026-11-27 21:15:08 UTC'; a stamp without an offset is taken
    as UTC (pgarena writes UTC); one that does not parse is shown as it is."""
    try:
        at = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
