"""Spark jobs of independent view steps, run together (issue 17).

When one stream part arrives, every view that reads only parts that already exist is ready at once
(the scaling benchmark's pattern helper, two window pre-aggregates and naive window view). Their
queries are analysed and their parts committed on the maintainer's thread, one after the other; only
their Spark jobs (each writes a fresh folder that nothing names yet) run at the same time on a small
shared pool, each started as soon as its step is analysed, so the next step's analysis overlaps it.
Spark's fixed cost per job (planning, scheduling, the output committer) then overlaps: docs/benchmarks.md
measures it.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Sequence, TypeVar

from pyspark.sql import SparkSession

from ..errors import ViewDFError
from .cancellation import carrying_job_tags
from .fusion import Fusion
from .reports import StepReport
from .steps import PendingStep, PreparedStep, Written
from .writer import PartWriter

WORKERS = 4           # one wave's jobs run at most four at a time
T = TypeVar("T")
_pool: ThreadPoolExecutor | None = None


def start(spark: SparkSession, action: Callable[[], T]) -> Future[T]:
    """Run ``action`` on the shared pool, its Spark jobs tagged as the calling thread's are."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="viewdf-step")
    return _pool.submit(carrying_job_tags(spark, action))


def wave(first: PendingStep, others: Iterable[PendingStep | None], ranged: Callable[[PendingStep], bool]
         ) -> list[PendingStep]:
    """``first`` and the steps of ``others`` (other views' next steps), when each computes one part (none
    is ``ranged``: takes a range step): every part they read exists already, so their Spark jobs may run
    together."""
    if ranged(first):
        return [first]
    return [first, *(step for step in others if step is not None and not ranged(step))]


def compute_together(spark: SparkSession, writer: PartWriter, wave: list[PendingStep],
                     fusions: Callable[[PendingStep], Sequence[Fusion]], keep_going: bool
                     ) -> list[tuple[PendingStep, list[StepReport] | ViewDFError]]:
    """Compute one part of each view of ``wave`` (with the views ``fusions`` fuses into it): analysed and
    committed on this thread in order, their Spark jobs run together, each from the end of its analysis; each
    step's reports, or its error. As one after the other, a failed step's readers are not published, and
    without ``keep_going`` the first error is raised once every job has ended."""
    prepared: list[tuple[PendingStep, PreparedStep | ViewDFError]] = []
    started: dict[int, Future[Written]] = {}
    outcomes: list[tuple[PendingStep, list[StepReport] | ViewDFError]] = []
    try:
        for step in wave:
            try:
                analysed = writer.prepare(step, False, fusions(step))
            except ViewDFError as error:
                prepared.append((step, error))
                continue
            prepared.append((step, analysed))
            if analysed.job is not None:
                started[id(analysed)] = start(spark, analysed.run)
        skipped: set[str] = set()
        for step, ready in prepared:
            try:
                if isinstance(ready, ViewDFError):
                    raise ready
                job = started.get(id(ready))
                result = job.result() if job is not None else ready.run()
                started.pop(id(ready), None)          # committed or deleted below, not by the handler
                if step.view.key in skipped:
                    if result.folder:
                        writer.store.fs.delete(result.folder)
                    continue
                outcomes.append((step, writer.finish(ready, result)))
            except ViewDFError as error:
                outcomes.append((step, error))
                skipped.update(d.key for d in writer.catalog.downstream(step.view.name))
                if not keep_going:
                    skipped.update(s.view.key for s in wave)
    except BaseException:        # an interrupt, say: the folders of jobs still running are deleted when they end
        for future in started.values():
            future.add_done_callback(lambda done: _discard(writer, done))
        raise
    return outcomes


def _discard(writer: PartWriter, done: Future[Written]) -> None:
    """Delete the folder a job that nothing will commit wrote, if it wrote one."""
    if not done.cancelled() and done.exception() is None and done.result().folder:
        writer.store.fs.delete(done.result().folder)
