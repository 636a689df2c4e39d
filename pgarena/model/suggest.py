"""'did you mean …': the closest known name to a misspelt one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# How alike two names must be (difflib's ratio) to be offered: close enough for a typo, not for a guess.
CLOSE_RATIO = 0.75


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name most like `word`, if any is close."""
    matches = difflib.get_close_matches(word, list(known), n=1, cutoff=CLOSE_RATIO)
    return matches[0] if matches else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """' (did you mean duration_s?)', or '' when nothing is close."""
    match = closest(word, known)
    return f" (did you mean {match}?)" if match else ""
