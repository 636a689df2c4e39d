"""Secrets out of everything pgarena keeps: raw output, error messages, logs and results.

Passwords travel only by reference (PGPASSWORD in a worker's environment, Secrets Manager), but a
tool or a driver may still echo one: a connection string in an error, a URI in a script's output.
Everything stored goes through `redact` first: key=value passwords, PGPASSWORD assignments,
credentials in postgres:// URIs, and the secret values the caller knows (the resolved password).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, TypeVar, cast

MASK = "***"
# Known secrets this long or longer are masked wherever they appear: unambiguous.
MIN_SECRET_LEN = 8
# Shorter ones (down to this length) are masked only as a whole token, never inside a word or a
# number: masking "2024" everywhere would garble the very figures the raw output is evidence for
# ("tps = 2024.5"). Shorter still: only the patterns below (PGPASSWORD=, password=, URIs) apply.
MIN_TOKEN_LEN = 4

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # postgres://user:secret@host, postgresql://user:secret@host (the user is kept)
    (re.compile(r"(?i)\b(postgres(?:ql)?://[^:/@\s]*):[^@\s]*@"), rf"\1:{MASK}@"),
    # PGPASSWORD=secret, export PGPASSWORD='secret', "PGPASSWORD": "secret"
    (re.compile(r"""(?i)(\bPGPASSWORD["']?[ \t]*[=:][ \t]*)(?:"[^"]*"|'[^']*'|[^\s"',;}]+)"""), rf"\1{MASK}"),
    # libpq key=value: password=secret, password = 'it''s'; also --password=secret, "password": "secret"
    (
        re.compile(r"""(?i)(\b(?:password|passwd|pwd|secret)["']?[ \t]*[=:][ \t]*)(?:'(?:[^']|'')*'|"[^"]*"|[^\s"',;}&]+)"""),
        rf"\1{MASK}",
    ),
]

T = TypeVar("T")


def _token(secret: str) -> re.Pattern[str]:
    """A short secret standing alone: no letter, digit or _ beside it, and not a number's integer part."""
    return re.compile(r"(?<![0-9A-Za-z_.])" + re.escape(secret) + r"(?![0-9A-Za-z_]|\.[0-9])")


def _text(text: str, secrets: tuple[str, ...]) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    # Known values last, and until none is left: masking can join characters into a secret again
    # ("a***" in "aa***"); each pass shortens the text, so this ends.
    for secret in secrets:
        if len(secret) >= MIN_SECRET_LEN:
            while secret in text:
                text = text.replace(secret, MASK)
            continue
        token = _token(secret)
        while token.search(text):
            text = token.sub(MASK, text)
    return text


def usable_secrets(secrets: Iterable[str | None]) -> tuple[str, ...]:
    """The known values worth masking, longest first (a secret containing another is masked whole)."""
    return tuple(sorted({s for s in secrets if s and len(s) >= MIN_TOKEN_LEN}, key=len, reverse=True))


def redact(value: T, secrets: Iterable[str | None] = ()) -> T:
    """`value` with secrets masked: a string, or the strings inside dicts and lists (keys included)."""
    known = usable_secrets(secrets)
    return cast(T, _redact(value, known))


def _redact(value: Any, known: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _text(value, known)
    if isinstance(value, dict):
        return {(_text(k, known) if isinstance(k, str) else k): _redact(v, known) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, known) for v in value]
    if isinstance(value, tuple):
        return tuple(_redact(v, known) for v in value)
    return value


class Redactor:
    """A redact() bound to the secrets one process knows, for line-by-line use on a tool's output."""

    def __init__(self, secrets: Iterable[str | None] = ()):
        self.secrets = usable_secrets(secrets)

    def __call__(self, text: str) -> str:
        return _text(text, self.secrets)
