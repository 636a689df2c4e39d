"""Which lease store the handlers' Dependencies lease in: the results table's (pgarena.aws.leases), unless
the process running the handlers has put its own in place. The local runtime runs the real handlers in its
own process, its campaigns each with their own moto, and puts in place leases in files that every local
runtime on the machine shares (pgarena.local.leases), as executions in one AWS account share the table's.
A Lambda has none in place; nor has a handler run from its bundle (`--aws-strict`), which leases in the table."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgarena.campaign.leases import Leases

# The table's store -> the one to lease in (given the table's: a target preflighted on its site leased
# there, where its release must look too).
InPlace = Callable[["Leases"], "Leases"]

_in_place: list[InPlace] = []
_lock = threading.Lock()


@contextmanager
def in_place_of_the_table(store: InPlace) -> Iterator[None]:
    """Handlers run meanwhile lease in `store(table)`; the last put in place wins, until it is taken out."""
    with _lock:
        _in_place.append(store)
    try:
        yield
    finally:
        with _lock:
            _in_place.remove(store)


def handler_leases(table: Leases) -> Leases:
    with _lock:
        store = _in_place[-1] if _in_place else None
    return store(table) if store is not None else table
