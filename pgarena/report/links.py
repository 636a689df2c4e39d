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


# The trend pages of a results root (the `--out` folder campaigns are written to): <root>/history/<name>.html,
# where every local campaign's end and `pgarena history NAME` write the campaign name's.
TREND_DIR = "history"


def trend_page(campaign: str) -> str | None:
    """The campaign name's trend page, relative to the results root; None for a name that is not one
    safe segment (a results.json read back may carry any name)."""
    if not SEGMENT.match(campaign) or campaign.startswith("."):  # one segment, neither hidden nor empty
        return None
    return local_link(f"{TREND_DIR}/{campaign}.html")


def trend_link(campaign: str) -> str | None:
    """The link from a campaign folder's report (<root>/<campaign_id>/report.html) to its name's trend page."""
    page = trend_page(campaign)
    return None if page is None else f"../{page}"
