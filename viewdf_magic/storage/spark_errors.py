"""Turn Spark's errors into ViewDFErrors that point at the user's text."""

from __future__ import annotations

import logging
import re
from typing import Callable, Iterable, TypeVar

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from ..errors import ViewDFError
from ..language.queries import Binding
from ..language.source import RewrittenText

# PySpark logs every captured SQL error with its JVM stack trace; we report them ourselves.
for _logger in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
    logging.getLogger(_logger).setLevel(logging.CRITICAL)

T = TypeVar("T")
_POSITION = re.compile(r"\(line (\d+), pos (\d+)\)|line (\d+) pos (\d+)")


# What a failing Spark call raises: PySpark's errors, and (for some file-reading failures that
# PySpark does not convert) the JVM exception itself.
SPARK_ERRORS = (PySparkException, Py4JJavaError)


def summary(exc: BaseException) -> str:
    """The first meaningful line of a Spark error, without SQLSTATE and plan dumps."""
    text = str(exc).strip()
    if isinstance(exc, Py4JJavaError):      # "An error occurred while calling o42.load." says nothing
        try:
            text = str(exc.java_exception.getMessage() or exc.java_exception.toString()).strip()
        except Exception:   # the JVM is gone: keep py4j's text
            pass
    first = text.split("\n", 1)[0]
    first = re.sub(r"\s*SQLSTATE: \w+.*$", "", first)
    first = re.sub(r"^\[[A-Z_.]+\]\s*", "", first)
    return first.rstrip(";. ") or type(exc).__name__


def spark_error(exc: BaseException, rewritten: RewrittenText | None = None,
                bindings: Iterable[Binding] = (), context: str = "", shift: int = 0) -> ViewDFError:
    """A ViewDFError for ``exc``, positioned in the source when Spark gave a position.

    ``shift`` is where the rewritten query starts inside the SQL Spark ran."""
    reason = summary(exc)
    for binding in bindings:
        reason = reason.replace(binding.placeholder, binding.text)
    message = f"{context}: {reason}" if context else reason
    if rewritten is None:
        error = ViewDFError(message)
    else:
        offset, end = _offset(exc, rewritten.text, shift)
        error = rewritten.error(message) if offset is None else rewritten.error(message, offset, end)
    error.reason = reason
    return error


def _offset(exc: BaseException, text: str, shift: int) -> tuple[int | None, int | None]:
    start, stop = _spark_offset(exc, text, shift)
    if start is None or not 0 <= start - shift < len(text):
        return None, None
    return start - shift, None if stop is None else stop - shift


def _spark_offset(exc: BaseException, text: str, shift: int) -> tuple[int | None, int | None]:
    if isinstance(exc, PySparkException):
        try:
            contexts = exc.getQueryContext()
        except Exception:  # noqa: BLE001 - older servers do not send contexts
            contexts = []
        for context in contexts or []:
            try:
                start, stop = context.startIndex(), context.stopIndex()
            except Exception:  # noqa: BLE001 - DataFrame contexts have no SQL position
                continue
            if 0 <= start - shift < len(text):
                return start, stop + 1
    match = _POSITION.search(str(exc))
    if match:
        line = int(match.group(1) or match.group(3))
        column = int(match.group(2) or match.group(4))
        lines = (" " * shift + text).split("\n")
        if line <= len(lines):
            return sum(len(piece) + 1 for piece in lines[:line - 1]) + column, None
    return None, None


def check_runtime(action: Callable[[], T], context: str, rewritten: RewrittenText | None = None,
                  bindings: Iterable[Binding] = ()) -> T:
    """Run a Spark action, turning its failures into ViewDFErrors (positioned when ``rewritten``
    is the query that produced the data)."""
    try:
        return action()
    except SPARK_ERRORS as exc:
        raise spark_error(exc, rewritten, bindings, context) from None
