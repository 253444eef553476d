"""A step at the next part runs the same queries as at the part before, with the part's numbers kept out of the Java
code Spark generates (storage/parts.py, ``_constant``), so Spark reuses the code it compiled for them: in steady
state, a new part compiles no code at all. (A part number written into that code as a literal made each part
compile about ten classes here, and the JVM's JIT compile them again: docs/benchmarks.md.)"""

from __future__ import annotations

import pandas as pd
import pytest

START = pd.Timestamp("2015-01-01 10:00:00")
VIEWS = ("CREATE STREAM S (ts TIMESTAMP, k STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60; "
         "CREATE VIEW Totals AS SELECT k, sum(x) AS total, count(*) AS n FROM S [WINDOW 3 MINUTES] GROUP BY k; "
         "CREATE VIEW Peaks AS SELECT k, max(x) AS peak FROM S [WINDOW 3 MINUTES] GROUP BY k; "
         "CREATE VIEW Again AS INITIALIZE Again[j] AS SELECT k, 0 AS before FROM S[j] GROUP BY k "
         "UPDATE Again[j] AS SELECT a.k, count(*) AS before FROM S[j] AS a JOIN S[j-1] AS b ON a.k = b.k GROUP BY a.k")


def minute(m: int) -> pd.DataFrame:
    """Part ``m``'s rows: the same keys every minute, other values."""
    return pd.DataFrame([(START + pd.Timedelta(minutes=m, seconds=s), k, (m * 7 + s) % 11)
                         for s, k in [(1, "p"), (2, "q"), (3, "r"), (4, "p")]], columns=["ts", "k", "x"])


def compilations(spark) -> int:
    """How many Java classes Spark's code generation compiled in this JVM so far."""
    return spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount()


@pytest.fixture
def generating(spark):
    """Spark's code generation on, as sessions have it by default (the tests' session turns it off)."""
    settings = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
    saved = {key: spark.conf.get(key) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    yield
    for key, value in saved.items():
        spark.conf.set(key, value)


def test_a_new_part_in_steady_state_compiles_no_code(spark, warehouse, generating):
    warehouse.run(VIEWS)
    for m in range(9):             # the window's chunks reach back six parts; every query shape has run by then
        warehouse.ingest("S", minute(m))
    before = compilations(spark)
    for m in range(9, 13):
        warehouse.ingest("S", minute(m))
    assert compilations(spark) == before
    # the parts are right: Totals at the last minute holds the last three minutes' sums
    frame = pd.concat([minute(m) for m in range(10, 13)])
    want = sorted((k, int(g.x.sum()), len(g)) for k, g in frame.groupby("k"))
    got = warehouse.execute("SELECT k, total, n FROM Totals WHERE PART_TIMESTAMP = (SELECT max(PART_TIMESTAMP) FROM Totals)")
    assert sorted(got.itertuples(index=False, name=None)) == want
