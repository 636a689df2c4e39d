"""The worker's last upload of each raw file, with its size and sha256 for the step's summary."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pgarena.analysis.evidence import raw_file
from pgarena.campaign.ports import Store
from pgarena.model.results import RawFile


class Evidence:
    """Uploads a step's final raw files through `store`, noting what each one was: a later copy (the local
    runtime's download, a folder moved around) is checked against this before the step counts as run."""

    def __init__(self, store: Store):
        self.store = store
        self.files: dict[str, RawFile] = {}

    def put_file(self, key: str, path: Path, content_type: str = "text/plain") -> str:
        self.files[key] = raw_file(path)  # the tool has exited: the file no longer changes
        return self.store.put_file(key, path, content_type)

    def of(self, keys: Iterable[str]) -> dict[str, RawFile]:
        return {key: self.files[key] for key in keys if key in self.files}
