"""A matrix file read and decoded, with what JSON allows but a matrix must not have (keys given twice,
absurd nesting, non-finite numbers) found before the schema looks at it."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path
from typing import Any

from pgarena.model.matrix_errors import NON_FINITE_FIX, MatrixError, Problem

MAX_NESTING = 32  # a valid matrix is 7 levels deep
# Bounds checked before a file is read: a matrix past StartExecution's 256 KiB cannot run (pgarena validate
# names that limit); 4 MiB leaves it room to. A results.json of thousands of shards stays far below 1 GiB.
MAX_MATRIX_BYTES = 4 * 1024 * 1024
MAX_RESULTS_BYTES = 1024 * 1024 * 1024
TOO_DEEP = f"nested deeper than {MAX_NESTING} levels, far beyond any matrix: check the brackets"


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers the keys it was given more than once."""

    duplicates: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) < len(pairs):
        keys = [key for key, _ in pairs]
        obj.duplicates = tuple(sorted({key for key in keys if keys.count(key) > 1}))
    return obj


def shape_problems(data: Any, path: str = "$", depth: int = 0) -> list[Problem]:
    """What JSON allows but a matrix must not have: keys given twice (json takes the last silently), nesting
    far deeper than any matrix (the validator's recursion), and non-finite numbers (caught here for every
    value, including those pydantic would not look at)."""
    if depth > MAX_NESTING:
        return [Problem(path=path, message=TOO_DEEP)]
    problems = []
    if isinstance(data, dict):
        for key in getattr(data, "duplicates", ()):
            problems.append(Problem(path=f"{path}.{key}", message="given more than once in one object: keep one"))
        for key, value in data.items():
            problems += shape_problems(value, f"{path}.{key}", depth + 1)
    elif isinstance(data, list):
        for index, item in enumerate(data):
            problems += shape_problems(item, f"{path}[{index}]", depth + 1)
    elif isinstance(data, float) and not math.isfinite(data):
        problems.append(Problem(path=path, message=NON_FINITE_FIX))
    return problems


def read_text(path: Path, max_bytes: int = MAX_MATRIX_BYTES) -> str:
    """A file's text; anything but a regular file or a folder (a FIFO, a socket, a device) is refused
    before it is opened, as an OSError: opening a FIFO nothing writes to would wait for ever. A file past
    `max_bytes` is refused by its size before it is read (EFBIG), never read whole."""
    if path.exists() and not path.is_file() and not path.is_dir():
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, a socket or a device): give a file", str(path))
    too_large = OSError(
        errno.EFBIG,
        f"larger than {max_bytes:,} bytes (refused unread): not a matrix or results.json pgarena could use",
        str(path),
    )
    with path.open("rb") as handle:
        if os.fstat(handle.fileno()).st_size > max_bytes:
            raise too_large
        data = handle.read(max_bytes + 1)  # one byte more: a file that grew since is refused too
    if len(data) > max_bytes:
        raise too_large
    return data.decode()


def read_json(path: Path) -> Any:
    """A matrix (or execution input) file decoded; FileNotFoundError, or a MatrixError with the fix."""
    try:
        text = read_text(path)
    except IsADirectoryError:
        raise MatrixError([Problem(path="$", message=f"{path} is a directory: give the matrix's JSON file")]) from None
    except FileNotFoundError:
        raise
    except OSError as error:
        raise MatrixError([Problem(path="$", message=f"cannot read {path}: {error.strerror}")]) from None
    except UnicodeDecodeError as error:
        raise MatrixError([Problem(path="$", message=f"not UTF-8 text: {error}")]) from None
    try:
        data = json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as error:
        raise MatrixError([Problem(path="$", message=f"not valid JSON: {error}")]) from None
    except RecursionError:
        raise MatrixError([Problem(path="$", message=TOO_DEEP)]) from None
    return data
