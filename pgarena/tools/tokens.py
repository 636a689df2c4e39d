"""Number and line helpers the parsers share: garbage in the tools' output never raises."""

from __future__ import annotations


def to_int(token: str) -> int | None:
    # int() refuses digit strings over Python's conversion limit; garbage must not raise.
    try:
        return int(token)
    except ValueError:
        return None


def to_float(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def lines_of(text: str) -> list[str]:
    # Trailing blanks carry no meaning; leading ones do (pgbench -r rows are indented).
    return [line.rstrip() for line in text.splitlines()]
