"""Kept evidence that cannot be truncated unnoticed: each raw file's size and sha256 are recorded in its
step's summary as the worker uploads it (StepSummary.raw_files), and a results folder's copy is checked
against them before the step counts as run (`pgarena resume`, aggregating a folder)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pgarena.model import layout
from pgarena.model.results import RawFile, StepSummary

CHUNK_BYTES = 1 << 20


def raw_file(path: Path) -> RawFile:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as source:
        while chunk := source.read(CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return RawFile(size_bytes=size, sha256=digest.hexdigest())


def incomplete(folder: Path, summary: StepSummary) -> str | None:
    """Why the folder's copy of the step's raw output is not what its worker uploaded (the first file
    that differs), or None when every recorded file is there as uploaded. A summary written before sizes
    and checksums were recorded has nothing to check."""
    for key, uploaded in summary.raw_files.items():
        name = layout.relative(summary.campaign_id, key)
        path = layout.inside(folder, folder / name)
        if not path.is_file():
            return f"{name} is missing"
        size = path.stat().st_size
        if size < uploaded.size_bytes:
            return f"{name} is truncated ({size:,} of {uploaded.size_bytes:,} bytes)"
        kept = raw_file(path)
        if kept != uploaded:
            return f"{name} is not the file its worker uploaded ({kept.size_bytes:,} bytes, sha256 {kept.sha256[:12]}…)"
    return None
