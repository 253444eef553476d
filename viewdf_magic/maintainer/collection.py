"""Python's full garbage collections, deferred while views are maintained.

A backfill of thousands of parts keeps every part's catalog entry and step report, so Python's
collector keeps finding many new long-lived objects and runs a full collection (a walk over every
object, 0.2-0.3 s in a warehouse of tens of thousands of parts) every few hundred parts: a quarter
of a 3-hour window view's backfill over a year of hourly parts (docs/benchmarks.md). The young
generations are still collected as usual; the full collection waits until the block ends.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

FULL_COLLECTION_EVERY = 1000     # young collections per full one inside the block (Python's default: 10)
_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


@contextmanager
def fewer_full_collections() -> Iterator[None]:
    """Run the block with full collections deferred (nested and concurrent blocks share one setting)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            if len(_saved) == 3 and _saved[2] < FULL_COLLECTION_EVERY:
                gc.set_threshold(_saved[0], _saved[1], FULL_COLLECTION_EVERY)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and len(_saved) == 3:
                gc.set_threshold(*_saved)
