"""A directory built once and reused: the Lambda layer, the worker image's wheels, the synthesized app,
the Lambda runtime's boto3 (each keyed by what it is built from)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def build_once(target: Path, marker: str, build: Callable[[Path], Any]) -> Path:
    """`target`, unless it already holds `marker`, built by `build(staging)` in a directory beside it and
    renamed into place with `marker` holding what `build` returned: an interrupted build is never taken
    for a complete one, and of two processes building the same target the second keeps the first's."""
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        manifest = build(staging)
        (staging / marker).write_text(json.dumps(manifest, indent=2))
        try:
            os.rename(staging, target)
        except OSError:
            if (target / marker).is_file():  # a concurrent build that finished first
                return target
            # A directory without the marker is no build of this function's (one made before the marker
            # existed, or by hand): replaced, since a complete build always holds its marker.
            shutil.rmtree(target)
            os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
