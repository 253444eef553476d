"""format("viewdf"): any Spark job reads a stream or view, published parts only, as of when the DataFrame was
made, PART_TIMESTAMP filters choosing the parts read."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from pyspark.sql.datasource import GreaterThanOrEqual, LessThan
from pyspark.sql.types import StructType

from oracles import long_runs, loss_runs, non_empty, rows_by_part
from oracles import rows as oracle_rows
from pattern_oracle import Agg, Cmp, Const, Pattern, Ref, expected
from test_late_data import WINDOW_VIEW, batch
from window_oracle import aggregate, window_parts

from viewdf_magic.errors import ViewDFError
from viewdf_magic.network_example import NETWORK_DDL
from viewdf_magic.storage.data_source import ViewDFReader
from viewdf_magic.timeparts import subscript_of

FIRST = subscript_of(pd.Timestamp("2015-01-01 10:00"), 60)
OBJECTS = ["M", "Helper", "View2", "Recent", "Rising"]      # a stream, hand-written, window and pattern views
COLUMNS = {"M": ["ts", "src", "dest", "loss"], "Helper": ["src", "dest", "ct", "sum_loss"],
           "View2": ["src", "dest", "ct", "sum_loss"], "Recent": ["src", "total", "peak", "n"],
           "Rising": ["src", "dest", "ct", "total"]}
# test_late_data's PATTERN_VIEW, written for the pattern oracle
RISING = Pattern((("a", False), ("b", True)),
                 (Cmp(">", Ref("a", "cur", "loss"), Const(10)), Cmp(">", Ref("b", "cur", "loss"), Ref("a", "cur", "loss"))),
                 (("src", Ref(None, "cur", "src")), ("dest", Ref(None, "cur", "dest")),
                  ("ct", Agg("count*", None, "")), ("total", Agg("sum", None, "loss"))), ("src", "dest"))


def rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(str, frame.itertuples(index=False)))


def expected_parts(name: str, stream: pd.DataFrame) -> dict[pd.Timestamp, list[tuple]]:
    """Object ``name``'s rows per part, recomputed from the stream's rows by the tests' pandas oracles."""
    if name == "M":
        return rows_by_part(stream.assign(PART_TIMESTAMP=stream.ts.dt.floor("min")), COLUMNS[name])
    if name == "Helper":
        return non_empty(loss_runs(stream))
    if name == "View2":
        return non_empty(long_runs(loss_runs(stream)))
    if name == "Recent":
        return non_empty({start: oracle_rows(aggregate(window, ["src"]), COLUMNS[name])
                          for start, window in window_parts(stream, 60, 180, 60)})
    return expected(stream, RISING)


def read_parts(spark, warehouse, name: str) -> dict[pd.Timestamp, list[tuple]]:
    """What ``format("viewdf")`` reads of ``name``, per part."""
    read = spark.read.format("viewdf").load(f"{warehouse.path}/{name}")
    assert read.columns == [*COLUMNS[name], "PART_TIMESTAMP"], name
    return rows_by_part(read.toPandas(), COLUMNS[name])


def test_any_spark_job_reads_what_the_warehouse_published(spark, warehouse):
    for statement in (NETWORK_DDL, WINDOW_VIEW, RISING.sql("Rising")):
        warehouse.execute(statement)
    warehouse.execute("LOAD 'examples/measurements.csv' INTO M")
    stream = pd.read_csv("examples/measurements.csv", parse_dates=["ts"])
    for name in OBJECTS:
        assert read_parts(spark, warehouse, name) == expected_parts(name, stream), name
    # a DataFrame reads the parts published when it was made; a new one sees later parts and repairs
    held = spark.read.format("viewdf").load(f"{warehouse.path}/View2")
    before = held.count()
    extension = batch([7.5, 8.5], [30, 31]).assign(src="10.0.0.3", dest="10.0.0.4")     # extends a run
    warehouse.ingest("M", extension)
    stream = pd.concat([stream, extension], ignore_index=True)
    assert held.count() == before
    after = read_parts(spark, warehouse, "View2")
    assert sum(map(len, after.values())) > before and after == expected_parts("View2", stream)
    late = batch([3.5], [40]).assign(src="10.0.0.5", dest="10.0.0.6")     # late: repairs Helper
    warehouse.ingest("M", late)
    stream = pd.concat([stream, late], ignore_index=True)
    assert read_parts(spark, warehouse, "Helper") == expected_parts("Helper", stream)


def test_a_part_timestamp_filter_chooses_the_parts_read(spark, warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.execute("LOAD 'examples/measurements.csv' INTO M")
    schema = spark.read.format("viewdf").load(f"{warehouse.path}/Helper").schema
    reader = ViewDFReader(warehouse.path, "Helper", StructType(schema.fields))
    left = list(reader.pushFilters([GreaterThanOrEqual(("PART_TIMESTAMP",), dt.datetime(2015, 1, 1, 10, 3)),
                                    LessThan(("PART_TIMESTAMP",), dt.datetime(2015, 1, 1, 10, 5)),
                                    GreaterThanOrEqual(("ct",), 2)]))
    assert left == [GreaterThanOrEqual(("ct",), 2)]          # Spark applies the rest
    read = sorted({source for scan in reader.partitions() for source in scan.targets})
    assert read == [FIRST + 3, FIRST + 4]
    filtered = spark.read.format("viewdf").load(f"{warehouse.path}/Helper").where(
        "PART_TIMESTAMP >= '2015-01-01 10:03:00' AND PART_TIMESTAMP < '2015-01-01 10:05:00'").toPandas()
    assert rows(filtered) == rows(warehouse.execute(
        "SELECT * FROM Helper WHERE PART_TIMESTAMP >= '2015-01-01 10:03:00' AND PART_TIMESTAMP < '2015-01-01 10:05:00'"))


def test_a_view_as_a_streaming_source_emits_each_published_part_and_restarts_from_its_checkpoint(
        spark, warehouse, tmp_path):
    """Each micro-batch holds the parts published since the last one, whole: all parts at first, then a new part,
    then the parts a late row recomputed (again, with their new rows), then nothing."""
    warehouse.execute(NETWORK_DDL)
    warehouse.execute("LOAD 'examples/measurements.csv' INTO M")
    emitted: list[tuple[list[int], list[str]]] = []

    def run() -> None:
        def take(frame, batch_id) -> None:
            stamps = sorted({int(t.timestamp()) // 60 for t in frame.toPandas()["PART_TIMESTAMP"]})
            emitted.append((stamps, rows(frame.toPandas())))
        query = (spark.readStream.format("viewdf").load(f"{warehouse.path}/Helper").writeStream.foreachBatch(take)
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination()

    def helper(first: int, last: int) -> list[str]:
        return rows(warehouse.execute(f"SELECT * FROM Helper WHERE PART_TIMESTAMP BETWEEN "
                                      f"'2015-01-01 10:0{first}:00' AND '2015-01-01 10:0{last}:00'"))
    run()
    assert emitted == [([FIRST + m for m in range(7)], helper(0, 6))]
    warehouse.ingest("M", batch([7.5], [31]).assign(src="10.0.0.3", dest="10.0.0.4"))     # a new part, 10:07
    run()
    assert emitted[1:] == [([FIRST + 7], helper(7, 7))]
    warehouse.ingest("M", batch([3.5], [40]).assign(src="10.0.0.3", dest="10.0.0.4"))     # late: 10:03 .. 10:07 again
    run()
    run()                                                                               # nothing new: no batch
    assert emitted[2:] == [([FIRST + m for m in range(3, 8)], helper(3, 7))]


def test_registered_views_serve_spark_sql_and_spark_table_with_the_newest_published_parts(spark, warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.execute(WINDOW_VIEW)
    warehouse.ingest("M", batch([0, 1, 2, 3], [12, 15, 24, 20]))
    try:
        assert warehouse.register_views("wh_") == ["wh_Helper", "wh_M", "wh_Recent", "wh_View2"]
        for name in ("M", "Helper", "View2", "Recent"):
            assert rows(spark.sql(f"SELECT * FROM wh_{name}").toPandas()) == \
                rows(warehouse.execute(f"SELECT * FROM {name}")), name
        first = spark.sql("SELECT count(*) AS n FROM wh_M").collect()[0].n
        assert first == 4
        # a late row and new parts: the same SQL, and spark.table, read the repaired and the new parts
        warehouse.ingest("M", batch([1.5, 4, 5], [30, 16, 7]))
        assert spark.sql("SELECT count(*) AS n FROM wh_M").collect()[0].n == 7
        assert rows(spark.table("wh_View2").toPandas()) == rows(warehouse.execute("SELECT * FROM View2"))
        assert rows(spark.table("wh_Recent").toPandas()) == rows(warehouse.execute("SELECT * FROM Recent"))
        chosen = spark.sql("SELECT DISTINCT PART_TIMESTAMP FROM wh_M WHERE PART_TIMESTAMP >= '2015-01-01 10:04:00'")
        assert sorted(str(r[0]) for r in chosen.collect()) == ["2015-01-01 10:04:00", "2015-01-01 10:05:00"]
        warehouse.execute("DROP VIEW Recent")
        assert not spark.catalog.tableExists("wh_Recent") and spark.catalog.tableExists("wh_View2")
        # a failing statement reports its own error, even when remaking the session's views fails after it
        refresh = warehouse.engine.session_views.refresh

        def broken() -> None:
            raise RuntimeError("remaking the views failed")
        warehouse.engine.session_views.refresh = broken
        with pytest.raises(ViewDFError, match="^cannot store the batch for M: The value 'not a time' of the type "
                                              "\"STRING\" cannot be cast to \"TIMESTAMP\""):
            warehouse.execute("INSERT INTO M VALUES ('not a time', 'a', 'b', 1)")
        with pytest.raises(RuntimeError, match="^remaking the views failed$"):     # after a statement that succeeds
            warehouse.execute("SEAL M THROUGH '2015-01-01 10:07:00'")
        warehouse.engine.session_views.refresh = refresh
    finally:
        warehouse.engine.session_views.drop()
    assert not spark.catalog.tableExists("wh_M")
