"""Cancelling a statement's Spark jobs when the user interrupts it (Ctrl-C, Jupyter's Interrupt kernel)."""

from __future__ import annotations

import logging
import uuid
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

from py4j.protocol import Py4JError, Py4JNetworkError
from pyspark.sql import SparkSession

from ..session import is_connect_session

CANCEL_ATTEMPTS = 3
T = TypeVar("T")


@contextmanager
def cancel_on_interrupt(spark: SparkSession) -> Iterator[str]:
    """Tag the Spark jobs this thread starts inside the block with a new tag (yielded); on
    KeyboardInterrupt, cancel every job carrying it and raise KeyboardInterrupt (also when cleanup
    code on the way out failed because of it, e.g. on py4j's dropped connection).

    A classic session's tags (``SparkSession.addTag``) live in the JVM thread of the Python thread's
    py4j connection, and py4j drops that connection when an interrupt arrives while it waits for an
    answer, so ``interruptTag`` would find no tag; a SparkContext job tag is cancelled from any
    thread instead. Spark Connect keeps its tags on the client."""
    tag = f"viewdf-{uuid.uuid4().hex}"
    add: Callable[[str], object]
    remove: Callable[[str], object]
    cancel: Callable[[str], object]
    if is_connect_session(spark):
        add, remove, cancel = spark.addTag, spark.removeTag, spark.interruptTag
        reconnecting: tuple[type[Exception], ...] = ()
    else:
        context = spark.sparkContext
        add, remove, cancel = context.addJobTag, context.removeJobTag, context.cancelJobsWithTag
        reconnecting = (Py4JNetworkError,)
    add(tag)
    handled: tuple[type[BaseException], ...] = (KeyboardInterrupt, *reconnecting)
    loggers = [logging.getLogger(name) for name in ("", "py4j.java_gateway", "py4j.clientserver")]

    def unhandled(record: logging.LogRecord) -> bool:
        """py4j logs with a traceback the interrupt, its connection's shutdown and the reconnection,
        all handled here (or raised as the statement's error)."""
        kind = record.exc_info[0] if record.exc_info else None     # None also for exc_info=True outside except
        return not (record.exc_info and (record.name.startswith("py4j") or
                                         (kind is not None and issubclass(kind, handled))))

    for logger in loggers:
        logger.addFilter(unhandled)
    try:
        yield tag
    except BaseException as error:
        if not _interrupted(error):
            raise
        # py4j's first answers after dropping a connection may be a network error or an empty error ('x')
        retried = (Py4JError,) if reconnecting else ()
        for attempt in range(CANCEL_ATTEMPTS):
            try:
                cancel(tag)
                break
            except retried:
                if attempt == CANCEL_ATTEMPTS - 1:
                    raise
        if not reconnecting:      # a classic tag went with the JVM thread of the connection py4j dropped
            remove(tag)
        if isinstance(error, KeyboardInterrupt):
            raise
        raise KeyboardInterrupt from error
    else:
        remove(tag)
    finally:
        for logger in loggers:
            logger.removeFilter(unhandled)


def _interrupted(error: BaseException) -> bool:
    """A KeyboardInterrupt, or an error raised while one was being handled."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__context__
    return False


def carrying_job_tags(spark: SparkSession, action: Callable[[], T]) -> Callable[[], T]:
    """``action``, to run on another thread with this thread's Spark job tags (and, on a classic
    session, its other local properties, such as the scheduler pool), so that interrupting this
    thread's statement cancels the jobs it starts too."""
    if is_connect_session(spark):
        tags = spark.getTags()

        def tagged() -> T:
            for tag in tags:
                spark.addTag(tag)
            try:
                return action()
            finally:
                for tag in tags:
                    spark.removeTag(tag)
        return tagged
    context = spark.sparkContext
    properties = context._jsc.sc().getLocalProperties().clone()

    def inheriting() -> T:
        context._jsc.sc().setLocalProperties(properties)
        return action()
    return inheriting
