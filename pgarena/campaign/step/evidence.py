"""The worker's last upload of each raw file, with its size and sha256 for the step's summary."""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from pgarena.analysis.evidence import raw_file
from pgarena.campaign.ports import Store
from pgarena.model.results import RawFile

# gzip's default, level 9, cost 3.0 us per logged transaction after the run (11 s for a study-scale log
# of 3.6 M); level 1 is about 15x faster for files about 12% larger (bench/after_run.py).
GZIP_LEVEL = 1
CHUNK_BYTES = 1 << 20
# zlib releases the GIL: a sharded or multi-threaded pgbench's several log files compress side by side.
COMPRESS_THREADS = 4


class _Hashing:
    """A file opened for writing that also hashes and counts what goes through it: the compressed file's
    sha256 and size come out of the one pass that writes it, instead of reading it back."""

    def __init__(self, out: BinaryIO):
        self.out, self.digest, self.size = out, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.out.write(data)

    def flush(self) -> None:
        self.out.flush()

    def kept(self) -> RawFile:
        return RawFile(size_bytes=self.size, sha256=self.digest.hexdigest())


def gzip_file(source: Path, target: Path, level: int = GZIP_LEVEL) -> RawFile:
    """Compress source into target in one pass; what target holds (its size and sha256)."""
    with source.open("rb") as data, target.open("wb") as out:
        hashing = _Hashing(out)
        # mtime 0: the same log compresses to the same bytes (a file's time is the upload's, not the run's).
        with gzip.GzipFile(filename="", mode="wb", compresslevel=level, fileobj=hashing, mtime=0) as packed:
            while chunk := data.read(CHUNK_BYTES):
                packed.write(chunk)
    return hashing.kept()


class Evidence:
    """Uploads a step's final raw files through `store`, noting what each one was: a later copy (the local
    runtime's download, a folder moved around) is checked against this before the step counts as run."""

    def __init__(self, store: Store):
        self.store = store
        self.files: dict[str, RawFile] = {}

    def put_file(self, key: str, path: Path, content_type: str = "text/plain") -> str:
        self.files[key] = raw_file(path)  # the tool has exited: the file no longer changes
        return self.store.put_file(key, path, content_type)

    def put_gzipped(self, key: str, path: Path) -> str:
        """path compressed (as key, which ends in .gz) and uploaded; what was uploaded is noted as it is written."""
        target = path.parent / "upload" / Path(key).name
        target.parent.mkdir(exist_ok=True)
        self.files[key] = gzip_file(path, target)
        return self.store.put_file(key, target, "application/gzip")

    def put_logs(self, prefix: str, paths: list[Path]) -> list[str]:
        """Each of a tool's logs compressed and uploaded under prefix, side by side; their keys in order."""
        if len(paths) <= 1:
            return [self.put_gzipped(f"{prefix}/{path.name}.gz", path) for path in paths]
        with ThreadPoolExecutor(min(COMPRESS_THREADS, len(paths)), thread_name_prefix="gzip") as pool:
            return list(pool.map(lambda path: self.put_gzipped(f"{prefix}/{path.name}.gz", path), paths))

    def of(self, keys: Iterable[str]) -> dict[str, RawFile]:
        return {key: self.files[key] for key in keys if key in self.files}
