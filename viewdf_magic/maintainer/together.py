"""Spark jobs of independent view steps, run together (issue 17).

When one stream part arrives, every view that reads only parts that already exist is ready at once
(the scaling benchmark's pattern helper, two window pre-aggregates and naive window view). Their
queries are analysed and their parts committed on the maintainer's thread, one after the other; only
their Spark jobs (each writes a fresh folder that nothing names yet) run at the same time, on the
caller's thread and a small shared pool. Spark's fixed cost per job (planning, scheduling, the
output committer) then overlaps: docs/benchmarks.md measures it.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, TypeVar

from pyspark.sql import SparkSession

from .cancellation import carrying_job_tags

WORKERS = 3           # threads besides the caller's: one wave's jobs run at most four at a time
T = TypeVar("T")
_pool: ThreadPoolExecutor | None = None


def start(spark: SparkSession, action: Callable[[], T]) -> Future[T]:
    """Run ``action`` on the shared pool, its Spark jobs tagged as the calling thread's are."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="viewdf-step")
    return _pool.submit(carrying_job_tags(spark, action))
