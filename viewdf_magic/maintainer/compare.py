"""Compare two frames as multisets of rows: exactly, except FLOAT/DOUBLE columns, within a tolerance.

VERIFY VIEW and the replay's naive check use it to compare a stored view part with its recomputation.
A running floating-point sum (a window view's ViewDF_Sum) differs from a fresh sum in the last bits,
so top-level FLOAT and DOUBLE values match when

    both are NULL, both are NaN, they are equal, or |a - b| <= tolerance * max(1, |a|, |b|)

(relative to the larger value, absolute below 1). Every other column, nested values included (a
DOUBLE inside an array or struct too), must be equal, NULL-safely. Everything runs in Spark.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType

# Far above the drift of a running DOUBLE sum between refreshes (docs/language.md, VERIFY VIEW).
DEFAULT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Comparison:
    """How ``actual`` differs from ``expected`` (see ``compare_rows``).

    ``missing`` counts rows of ``expected`` with no matching row in ``actual``, ``extra`` rows of
    ``actual`` with no match in ``expected``: with tolerance 0 exactly ``exceptAll``'s counts. A pair
    of rows equal on the exact columns whose floats differ beyond the tolerance counts once in each.
    ``max_difference`` is the largest relative difference |a - b| / max(1, |a|, |b|) between FLOAT/DOUBLE
    values that matched only within the tolerance (0.0 when no row needed it); None when rows were
    compared exactly (no FLOAT or DOUBLE column, or tolerance 0).
    """

    missing: int
    extra: int
    max_difference: float | None = None

    @property
    def equal(self) -> bool:
        return self.missing == 0 and self.extra == 0


def compare_rows(actual: DataFrame, expected: DataFrame, tolerance: float = DEFAULT_TOLERANCE) -> Comparison:
    """Compare two frames with the same columns (matched by position) as multisets of rows.

    Rows equal on every column are set aside first (``exceptAll`` both ways). With a tolerance and
    FLOAT/DOUBLE columns, the remaining rows of both sides are sorted by their floats within each group
    of equal other columns and cut into clusters wherever consecutive rows differ beyond the tolerance;
    within a cluster the n-th row of one side is paired with the n-th of the other, and a pair matches
    when every float matches.
    """
    _check(actual, expected, tolerance)
    one = "__vdf_all"
    return compare_parts(actual.withColumn(one, F.lit(0)), expected.withColumn(one, F.lit(0)), one, tolerance)[0]


def compare_parts(actual: DataFrame, expected: DataFrame, part: str, tolerance: float = DEFAULT_TOLERANCE
                  ) -> defaultdict[Any, Comparison]:
    """``compare_rows`` for each value of column ``part`` (of both frames, compared exactly) at once, in a
    constant number of Spark jobs; a part missing from the result compares equal."""
    _check(actual, expected, tolerance)
    names = [f"c{k}" for k in range(len(actual.columns))]
    key = names[actual.columns.index(part)]
    actual, expected = actual.toDF(*names), expected.toDF(*names)
    extra, missing = actual.exceptAll(expected), expected.exceptAll(actual)
    floats = [n for n, f in zip(names, actual.schema.fields) if isinstance(f.dataType, (FloatType, DoubleType))]
    if not floats or tolerance == 0:
        found: defaultdict[Any, Comparison] = defaultdict(lambda: Comparison(0, 0))
        sides = extra.select(key, F.lit("a").alias("side")).unionByName(missing.select(key, F.lit("e").alias("side")))
        for row in sides.groupBy(key).agg(F.count(F.when(F.col("side") == "e", 1)).alias("missing"),
                                          F.count(F.when(F.col("side") == "a", 1)).alias("extra")).collect():
            found[row[key]] = Comparison(row["missing"], row["extra"])
        return found
    exact = [n for n in names if n not in floats]
    rest = extra.withColumn("side", F.lit("a")).unionByName(missing.withColumn("side", F.lit("e")))
    in_order = Window.partitionBy(*exact).orderBy(*(F.col(n).asc_nulls_first() for n in floats), "side")
    gap = _largest([_difference(F.col(n), F.lag(n).over(in_order)) for n in floats])
    rest = rest.withColumn("cluster", F.sum((gap > tolerance).cast("int")).over(
        in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    rest = rest.withColumn("rank", F.row_number().over(
        Window.partitionBy(*exact, "cluster", "side").orderBy(*(F.col(n).asc_nulls_first() for n in floats))))

    def side(name: str) -> DataFrame:
        return rest.filter(F.col("side") == name).select(*(F.col(n).alias(f"{name}_{n}") for n in rest.columns))

    a, e = side("a"), side("e")
    pairs = a.join(e, [a["a_" + n].eqNullSafe(e["e_" + n]) for n in exact + ["cluster", "rank"]], "full_outer")
    differences = [_difference(F.col("a_" + n), F.col("e_" + n)) for n in floats]
    paired = F.col("a_side").isNotNull() & F.col("e_side").isNotNull()
    matched = paired & reduce(Column.__and__, [d <= tolerance for d in differences])
    counts = pairs.groupBy(F.coalesce(F.col("a_" + key), F.col("e_" + key)).alias(key)).agg(
        F.count(F.when(~matched, F.col("e_side"))).alias("missing"),
        F.count(F.when(~matched, F.col("a_side"))).alias("extra"),
        F.max(F.when(matched, _largest(differences))).alias("largest"))
    compared: defaultdict[Any, Comparison] = defaultdict(lambda: Comparison(0, 0, 0.0))
    for row in counts.collect():
        compared[row[key]] = Comparison(row["missing"], row["extra"], 0.0 if row["largest"] is None else row["largest"])
    return compared


def _check(actual: DataFrame, expected: DataFrame, tolerance: float) -> None:
    if not 0 <= tolerance < math.inf:
        raise ValueError(f"the tolerance must be a finite number, 0 or more, not {tolerance!r}")
    if len(actual.columns) != len(expected.columns):
        raise ValueError(f"cannot compare {len(actual.columns)} columns with {len(expected.columns)}")


def _largest(columns: list[Column]) -> Column:
    return columns[0] if len(columns) == 1 else F.greatest(*columns)


def _difference(a: Column, b: Column) -> Column:
    """|a - b| / max(1, |a|, |b|); 0 when NULL-safely equal (NaN equals NaN in Spark), infinite when
    they differ and either is NULL, NaN or infinite."""
    a, b = a.cast("double"), b.cast("double")
    finite = (F.abs(a) < math.inf) & (F.abs(b) < math.inf)      # Spark orders NaN above infinity
    return (F.when(a.eqNullSafe(b), 0.0)
            .when(finite, F.abs(a - b) / F.greatest(F.lit(1.0), F.abs(a), F.abs(b)))
            .otherwise(math.inf))
