# The compiled scanner's interface (_txlog.c): buffers are int64 counts, as txlog.py allocates them.
from typing import overload

from typing_extensions import Buffer

@overload
def scan(
    data: Buffer,
    layout: tuple[int, int, int, int, int, int, int],
    since_us: int,
    base: int,
    window_s: int,
    window: Buffer | None,
    meta: Buffer | None,
    total: Buffer,
    stats: Buffer,
    other: None = None,
    other_stats: None = None,
    scripts: Buffer | None = None,
    script_stats: Buffer | None = None,
) -> tuple[int, int]: ...
@overload
def scan(
    data: Buffer,
    layout: tuple[int, int, int, int, int, int, int],
    since_us: int,
    base: int,
    window_s: int,
    window: Buffer | None,
    meta: Buffer | None,
    total: Buffer,
    stats: Buffer,
    other: Buffer,
    other_stats: Buffer,
    scripts: Buffer | None = None,
    script_stats: Buffer | None = None,
) -> tuple[tuple[int, int], tuple[int, int]]: ...
def encode(
    counts: Buffer,
    start: int,
    stop: int,
    header: Buffer,
    cookie: int,
    level: int,
    huffman: bool,
    into: Buffer | None = None,
) -> bytes: ...
