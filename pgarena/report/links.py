"""Which paths a report may link to: files inside the campaign's folder, named relatively. A results.json
read back may have been crafted (`raw: ["javascript:..."]`, `../../etc/passwd`, `https://...`): such a
path is shown as text, never made a link."""

from __future__ import annotations

import re

# A segment of a raw file's path as the worker names it (pgarena.model.layout.raw_key): names of targets
# and workloads, client counts, file names. No ':' (a scheme), no '\\', no '%' (an escaped one), no space.
SEGMENT = re.compile(r"^[A-Za-z0-9_.,+=@-]+$")
MAX_PATH_CHARS = 1_024


def local_link(path: str) -> str | None:
    """`path` if it names a file inside the campaign folder, relatively; None if it must not be linked."""
    if not path or len(path) > MAX_PATH_CHARS:
        return None
    segments = path.split("/")
    if any(s in ("", ".", "..") or not SEGMENT.match(s) for s in segments):
        return None  # absolute ('/...': an empty first segment), up and out, or a character a URL reads
    return path
