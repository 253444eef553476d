"""Parts known to be empty without a Spark job (issue 17): the query-shape analysis, checked
against Spark running the same queries, and parts equal with and without the shortcut."""

from __future__ import annotations

import itertools
import random
from datetime import datetime, timedelta

import pytest

from viewdf_magic.language.emptiness import empty_when

INPUTS = frozenset({"a", "b", "c"})


def rule_text(sql: str) -> str:
    rule = empty_when(sql, INPUTS)
    return "never" if rule.never else rule.describe({})


@pytest.mark.parametrize("sql, expected", [
    ("SELECT x FROM a WHERE x > 1", "a is empty"),
    ("SELECT DISTINCT x, row_number() OVER (ORDER BY x) FROM a LIMIT 3", "a is empty"),
    ("SELECT a.x FROM a JOIN b ON a.x = b.x", "a is empty or b is empty"),
    ("SELECT a.x FROM a, b", "a is empty or b is empty"),
    ("SELECT a.x FROM a CROSS JOIN b NATURAL JOIN c", "a is empty or b is empty or c is empty"),
    ("SELECT a.x FROM a LEFT JOIN b ON a.x = b.x", "a is empty"),
    ("SELECT a.x FROM a LEFT ANTI JOIN b ON a.x = b.x", "a is empty"),
    ("SELECT a.x FROM a LEFT SEMI JOIN b ON a.x = b.x", "a is empty or b is empty"),
    ("SELECT b.x FROM a RIGHT JOIN b ON a.x = b.x", "b is empty"),
    ("SELECT a.x FROM a FULL OUTER JOIN b ON a.x = b.x", "a is empty and b is empty"),
    ("SELECT * FROM a FULL JOIN b ON a.x = b.x JOIN c ON c.x = a.x",
     "(a is empty and b is empty) or c is empty"),
    ("SELECT x FROM a UNION ALL SELECT x FROM b", "a is empty and b is empty"),
    ("SELECT x FROM a INTERSECT SELECT x FROM b", "a is empty or b is empty"),
    ("SELECT x FROM a EXCEPT SELECT x FROM b", "a is empty"),
    ("SELECT k, count(*) FROM a GROUP BY k", "a is empty"),
    ("SELECT k, sum(x) OVER (PARTITION BY k) FROM a", "a is empty"),
    ("WITH t AS (SELECT x FROM a JOIN b USING (x)) SELECT * FROM t LEFT JOIN c USING (x)",
     "a is empty or b is empty"),
    ("SELECT * FROM (SELECT x FROM a) AS s JOIN (SELECT count(*) AS n FROM b) AS t ON true", "a is empty"),
    ("SELECT y FROM a LATERAL VIEW explode(array(x, x)) t AS y", "a is empty"),
    ("WITH a AS (SELECT 1 AS x) SELECT x FROM a", "never"),          # a CTE hides the input
    ("SELECT count(*) FROM a", "never"),
    ("SELECT max(x) FROM a JOIN b USING (x)", "never"),
    ("SELECT my_function(x) FROM a", "never"),                         # could be an aggregate
    ("SELECT x FROM a HAVING x > 1", "never"),
    ("SELECT k, count(*) FROM a GROUP BY ROLLUP (k)", "never"),
    ("SELECT k, count(*) FROM a GROUP BY GROUPING SETS ((k), ())", "never"),
    ("SELECT 1", "never"),
    ("SELECT * FROM range(3)", "never"),
    ("SELECT * FROM VALUES (1)", "never"),
    ("SELECT * FROM other_table", "never"),
    ("SELECT * FROM a PIVOT (sum(x) FOR k IN ('p', 'q'))", "never"),
    ("SELECT x FROM a UNION ALL SELECT 1", "never"),
])
def test_rule_of_each_query_shape(sql, expected):
    assert rule_text(sql) == expected


def test_every_spark_aggregate_counts_as_one(spark):
    """A global aggregate returns a row over no input: every aggregate Spark registers must keep its
    query from being called empty (sqlglot parses some of them as ordinary functions)."""
    names = [row[0] for row in spark.sql("SHOW FUNCTIONS").collect() if row[0].replace("_", "").isalnum()]
    aggregates = []
    for name in names:
        described = [row[0] for row in spark.sql(f"DESCRIBE FUNCTION EXTENDED `{name}`").collect()]
        if any(line.startswith("Class:") and ".expressions.aggregate." in line for line in described):
            aggregates.append(name)
    assert {"count", "sum", "any", "bool_or", "collect_list", "max_by"} <= set(aggregates)
    called_empty = [name for name in aggregates
                    if not empty_when(f"SELECT {name}(x, x) FROM a", INPUTS).never
                    or not empty_when(f"SELECT {name}(x) FROM a", INPUTS).never]
    assert called_empty == []


QUERIES = [
    "SELECT a.x FROM a JOIN b ON a.x = b.x",
    "SELECT a.x, b.x FROM a LEFT JOIN b ON a.x = b.x",
    "SELECT a.x FROM a LEFT SEMI JOIN b ON a.x = b.x",
    "SELECT coalesce(a.x, b.x) FROM a FULL JOIN b ON a.x = b.x",
    "SELECT x FROM a UNION ALL SELECT x FROM b",
    "SELECT x FROM a INTERSECT SELECT x FROM c",
    "SELECT x FROM b EXCEPT SELECT x FROM c",
    "SELECT x, count(*) FROM a GROUP BY x",
    "SELECT count(*) FROM a",
    "SELECT * FROM (SELECT x FROM a) s JOIN (SELECT max(x) AS m FROM b) t ON true",
    "WITH t AS (SELECT x FROM a UNION ALL SELECT x FROM c) SELECT t.x FROM t RIGHT JOIN b ON t.x = b.x",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_a_query_called_empty_is_empty_in_spark(spark, sql):
    """Soundness against Spark itself: for every combination of empty inputs, if the rule says
    empty, Spark returns no rows; and the rule is not vacuous where the shape decides."""
    rule = empty_when(sql, INPUTS)
    claimed = 0
    for empties in itertools.product([False, True], repeat=3):
        empty = dict(zip(["a", "b", "c"], empties))
        for name, is_empty in empty.items():
            spark.sql("SELECT 1 AS x WHERE false" if is_empty else
                      "SELECT * FROM VALUES (1), (2) AS v(x)").createOrReplaceTempView(name)
        if rule.holds(empty.__getitem__):
            claimed += 1
            assert spark.sql(sql).count() == 0, (sql, empty)
    assert claimed == 0 if "count(*) FROM a" in sql and "GROUP BY" not in sql else claimed > 0


def _stream_rows(seed: int) -> list[tuple]:
    """Hourly parts from 6 pm to 2 pm with many empty ones (the night), keys k0..k2, values that
    sometimes rise."""
    rng = random.Random(seed)
    start = datetime(2013, 1, 1)
    rows = []
    for hour in range(18, 38):
        if hour % 24 in range(0, 6) or rng.random() < 0.3:
            continue
        for _ in range(rng.randint(1, 3)):
            rows.append((f"k{rng.randint(0, 2)}", start + timedelta(hours=hour, minutes=rng.randint(0, 59)),
                         float(rng.randint(0, 9))))
    return rows


VIEWS = """
CREATE STREAM S (k STRING, ts TIMESTAMP, v DOUBLE) TIMESTAMP ts PARTITION LENGTH 1 HOUR;
CREATE TABLE Names (k STRING, label STRING);
CREATE VIEW Runs AS SELECT k, a.ts AS since, count(*) AS n FROM S PATTERN (a, b+)
  WHERE b.v > a.v AND b[i].v > b[i-1].v GROUP BY k;
CREATE VIEW SparseRuns AS SELECT k, a.ts AS since, count(*) AS n FROM S PATTERN (a, b+)
  WHERE b.v > a.v AND b[i].v > b[i-1].v GROUP BY k CONTIGUITY EVENTS;
CREATE VIEW Win AS SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM S [WINDOW 3 HOURS] GROUP BY k;
CREATE VIEW Counts AS INITIALIZE Counts[i] AS SELECT count(*) AS n FROM S[i]
  UPDATE Counts[j] AS SELECT count(*) AS n FROM S[j];
CREATE VIEW Joined AS INITIALIZE Joined[i] AS SELECT s.k, s.v, n.label FROM S[i] AS s LEFT JOIN Names AS n ON s.k = n.k
  UPDATE Joined[j] AS SELECT s.k, s.v, n.label FROM S[j] AS s LEFT JOIN Names AS n ON s.k = n.k
    UNION ALL SELECT k, v, label FROM Joined[j-1] WHERE v > 8
"""


def _parts(warehouse) -> dict:
    """Every view part's catalog entry, and every view's stored rows (PART_TIMESTAMP tells their part)."""
    result = {}
    for definition in warehouse.catalog.views():
        state = warehouse.catalog.state(definition.name)
        for subscript, meta in state.parts.items():
            result[(definition.name, subscript)] = (meta.rows, meta.checksum, meta.lineage, meta.how)
        rows = warehouse.store.read_parts(definition, state, sorted(state.parts)).collect()
        result[(definition.name, "rows")] = sorted(map(tuple, rows), key=repr)
    return result


def test_jobless_parts_equal_computed_parts(spark, make_warehouse, seed=1):
    """The same random stream (with empty parts) maintained with and without the shortcut gives the
    same parts: rows, checksums, lineage, clause; and the shortcut ran fewer Spark jobs."""
    frame = spark.createDataFrame(_stream_rows(seed), "k STRING, ts TIMESTAMP, v DOUBLE")
    results, jobs = [], []
    for jobless in (False, True):
        warehouse = make_warehouse(f"wh{jobless}")
        warehouse.maintainer.jobless_empty_parts = jobless
        warehouse.execute(VIEWS)
        warehouse.execute("INSERT INTO Names VALUES ('k0', 'zero'), ('k1', 'one')")
        group = f"jobless-test-{seed}-{jobless}"
        spark.sparkContext.setJobGroup(group, group)
        try:
            warehouse.ingest("S", frame)
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        jobs.append(len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)))
        results.append(_parts(warehouse))
    computed, shortcut = results
    assert computed.keys() == shortcut.keys()
    assert computed == shortcut
    empty = sum(1 for key, part in computed.items() if key[1] != "rows" and part[0] == 0)
    assert empty > 30
    assert jobs[1] < jobs[0]


def test_step_report_and_explain_say_no_job_ran(warehouse):
    warehouse.execute("""CREATE STREAM M (ts TIMESTAMP, x INT) TIMESTAMP ts PARTITION LENGTH 60;
        CREATE VIEW Big AS INITIALIZE Big[i] AS SELECT x FROM M[i] WHERE x > 5
          UPDATE Big[j] AS SELECT x FROM M[j] WHERE x > 5;
        SET MAINTENANCE MANUAL""")
    warehouse.execute("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:00:10', 7), (TIMESTAMP '2015-01-01 10:02:10', 9)")
    explained = warehouse.explain_view("Big").detail
    assert ("A part of Big is recorded empty without a Spark job (INITIALIZE when M[i] is empty; "
            "UPDATE when M[j] is empty)") in explained
    reports = warehouse.maintainer.step(n=None, plan=True)
    assert [(r.subscript - reports[0].subscript, r.rows) for r in reports] == [(0, 1), (1, 0), (2, 1)]
    assert reports[1].plan == f"No Spark job: the query returns no rows when M[{reports[1].subscript}] is empty."
    assert "Physical Plan" in reports[0].plan
