"""What a statement returns (Result), and the API's small result types."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegralType, StructType

from ..language import statements as st
from .ingest import IngestReport
from ..language.queries import CompiledQuery
from ..maintainer.compare import Comparison
from ..maintainer.execute import explain_text
from ..maintainer.maintainer import StepReport
from ..storage.spark_errors import check_runtime

T = TypeVar("T")


@dataclass(frozen=True)
class PartCheck:
    """A view part against its recomputation: the comparison, and the seconds the recomputation took."""

    comparison: Comparison
    recompute_seconds: float


class MaintenanceWarning(UserWarning):
    """A view part could not be computed (the data that triggered it was stored), or a query read views
    that are not up to date."""


@dataclass
class Result:
    """The outcome of one statement."""

    statement: st.Statement
    message: str | None = None
    frame: DataFrame | None = None        # rows of a query, as a (lazy) Spark DataFrame
    table: pd.DataFrame | None = None     # rows of SHOW, DESCRIBE or VERIFY
    detail: str | None = None             # extra text, e.g. a definition
    steps: list[StepReport] = field(default_factory=list)
    maintenance_seconds: float | None = None   # wall time of the maintenance that computed ``steps``
    query: CompiledQuery | None = None    # the compiled query behind ``frame``, for error positions
    figure: str | None = None             # an SVG drawing, e.g. a pattern's FSM
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)   # further titled tables
    sections: list[tuple[str, str]] = field(default_factory=list)   # titled long texts, shown folded
    note: str | None = None               # one line under a query's rows: the views it reads that lag
    ingested: IngestReport | None = None  # what an ingest of a DataFrame did (Warehouse.ingest)

    @property
    def has_rows(self) -> bool:
        return self.frame is not None or self.table is not None

    def plans(self, mode: str = "extended") -> str:
        """Spark's plans for a query's rows, as text (``mode`` as ``DataFrame.explain`` takes it)."""
        assert self.frame is not None      # only a query's result has plans
        return explain_text(self.frame, mode=mode)

    def to_pandas(self) -> pd.DataFrame | None:
        """All rows, or None for a statement without rows."""
        return self.head(None)[0] if self.has_rows else None

    def head(self, limit: int | None) -> tuple[pd.DataFrame, bool]:
        """At most ``limit`` rows (all for 0 or None) and whether more exist; only ``limit + 1``
        rows are fetched from Spark."""
        if self.table is not None:
            rows = self.table
        else:
            assert self.frame is not None, "statement has no rows"
            frame = self.frame.limit(limit + 1) if limit else self.frame
            with warnings.catch_warnings():   # PySpark warns before re-raising a failed Arrow collect
                warnings.simplefilter("ignore", UserWarning)
                rows = check_runtime(frame.toPandas, "running the query",
                                     *((self.query.rewritten, self.query.bindings) if self.query else ()))
            rows = _integers_stay_integers(rows, frame.schema)
        if limit and len(rows) > limit:
            return rows.head(limit), True
        return rows, False


def timed(work: Callable[[], T]) -> tuple[T, float]:
    """What ``work`` returns, and the wall seconds it took."""
    started = time.perf_counter()
    done = work()
    return done, time.perf_counter() - started


def _integers_stay_integers(rows: pd.DataFrame, schema: StructType) -> pd.DataFrame:
    """pandas turns an integer column with NULLs into floats (5.0); show it as nullable integers."""
    for spark_field in schema.fields:
        column = spark_field.name
        if isinstance(spark_field.dataType, IntegralType) and column in rows and rows[column].dtype.kind == "f":
            rows[column] = rows[column].astype("Int64")
    return rows
