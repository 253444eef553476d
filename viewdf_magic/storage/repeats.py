"""Whether two rows of a stream part share some columns, found inside the Spark job of a step (UPDATE .. WHEN
X[j] IS UNIQUE): a branch added to the rows the job writes (UNION ALL) counts the part's rows per 64-bit hash
of the columns and returns no row, and the job observes the largest count. No job of its own and nothing at
ingest; only the hashes are shuffled. A hash collision can only report a repeat that is not there."""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.column import Column
from pyspark.sql.types import StructType

from ..language.tokens import quote_name
from .spark_errors import SPARK_ERRORS


def key_hash(columns: Sequence[str]) -> Column:
    """A row's 64-bit hash of ``columns``: two rows that share them share it."""
    return F.xxhash64(*[F.col(quote_name(c)) for c in columns])


def counting_branch(rows: DataFrame, columns: Sequence[str], schema: StructType) -> tuple[DataFrame, Observation]:
    """A frame of ``schema`` without rows, to add to the rows a job writes, and the observation that, once the
    job has run, holds how many of ``rows`` it counted and how many share the most common hash of ``columns``."""
    observed = Observation()
    counts = rows.groupBy(key_hash(columns).alias("h")).count() \
        .observe(observed, F.coalesce(F.sum("count"), F.lit(0)).alias("seen"), F.max("count").alias("most"))
    none = counts.where(F.col("count") < 0)        # never true, which Spark does not know: the counts are computed
    return none.select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields]), observed


def repeats_found(observed: Observation, rows: int) -> bool | None:
    """After the job: whether two of the ``rows`` rows shared the columns; None when the job did not count
    them all (or no metrics came back)."""
    try:
        metrics = observed.get
        seen, most = metrics["seen"], metrics["most"]
    except (SPARK_ERRORS + (AssertionError, KeyError)):     # no metrics
        return None
    if seen != rows:
        return None
    return most is not None and most > 1
