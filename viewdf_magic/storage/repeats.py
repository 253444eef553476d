"""Whether two rows of a stream part share some columns, found inside the Spark job of a step that reads
the part (UPDATE .. WHEN X[j] IS UNIQUE): the part's rows gain a count per value of the columns (a window,
partitioned by them as the step's join by the same keys is, so Spark shuffles and sorts the rows once for
both), and the job observes the largest count. No job of its own, and nothing at ingest."""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import DataFrame, Observation, Window
from pyspark.sql import functions as F

from ..language.tokens import quote_name
from .spark_errors import SPARK_ERRORS

COUNT_COLUMN = "__vdf_same_key"


def counting_repeats(rows: DataFrame, columns: Sequence[str]) -> tuple[DataFrame, Observation]:
    """``rows`` as they are, and the observation that, once a job has read them, holds how many it read and
    how many of them share the most common value of ``columns``."""
    observed = Observation()
    same = Window.partitionBy(*[F.col(quote_name(c)) for c in columns])
    counted = rows.withColumn(COUNT_COLUMN, F.count(F.lit(1)).over(same)) \
        .observe(observed, F.count(F.lit(1)).alias("seen"), F.max(COUNT_COLUMN).alias("most")).drop(COUNT_COLUMN)
    return counted, observed


def repeats_found(observed: Observation, rows: int) -> bool | None:
    """After the job: whether two of the ``rows`` rows shared the columns; None when the job did not read
    them all (Spark found its result without them, say because a join's other side is empty, or a LIMIT
    stopped reading)."""
    try:
        seen, most = observed.get["seen"], observed.get["most"]
    except (SPARK_ERRORS + (AssertionError, KeyError)):     # no metrics: the rows were never read
        return None
    if seen != rows:
        return None
    return most is not None and most > 1
