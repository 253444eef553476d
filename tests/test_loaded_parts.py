"""LOAD takes a Parquet file whose columns are the stream's as it is (storage/loaded_parts.py): copied into the
warehouse byte for byte, its rows' parts computed from their timestamps when read, no Spark job to store it.
Every read must give what Spark's write of the same rows gives: checked against pandas and against a
warehouse that stored the same rows through Spark."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from viewdf_magic.catalog.model import Slice
from viewdf_magic.errors import ViewDFError
from viewdf_magic.storage.data_source import published_rows
from viewdf_magic.storage.loaded_parts import LOADED_FILE, row_group_part, rows_per_part, spark_type

STREAM = "CREATE STREAM M (ts TIMESTAMP, k BIGINT, x INT, tag STRING) TIMESTAMP ts PARTITION LENGTH 60"
SUMS = ("CREATE VIEW Sums AS INITIALIZE Sums[i] AS SELECT k, sum(x) AS total, count(*) AS n FROM M[i] GROUP BY k "
        "UPDATE Sums[j] AS SELECT k, sum(x) AS total, count(*) AS n FROM M[j] GROUP BY k")
COPY = ("CREATE VIEW Big AS INITIALIZE Big[i] AS SELECT ts, k, x FROM M[i] WHERE x > 3 "
        "UPDATE Big[j] AS SELECT ts, k, x FROM M[j] WHERE x > 3")
START = dt.datetime(2015, 1, 1, 10, 0, tzinfo=dt.timezone.utc)


def rows(seconds: list[int]) -> pd.DataFrame:
    """One row per offset (seconds after START): k cycles 0-2, x is the row's number."""
    return pd.DataFrame({"ts": [START + dt.timedelta(seconds=s) for s in seconds],
                         "k": [n % 3 for n in range(len(seconds))], "x": list(range(len(seconds))),
                         "tag": [f"t{n}" for n in range(len(seconds))]})


def write(frame: pd.DataFrame, path, ts_type: pa.DataType = pa.timestamp("us", tz="UTC"),
          x_type: pa.DataType = pa.int32()) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({"ts": pa.array(frame["ts"].dt.tz_convert("UTC").dt.tz_localize(None), pa.timestamp("us"))
                      .cast(ts_type), "k": pa.array(frame["k"], pa.int64()), "x": pa.array(frame["x"], x_type),
                      "tag": pa.array(frame["tag"], pa.string())})
    pq.write_table(table, path)


def slices(warehouse, name: str = "M") -> list[Slice]:
    state = warehouse.engine.catalog.state(name)
    return [Slice.parse(text) for meta in state.parts.values() for text in meta.folders]


def expected_sums(frame: pd.DataFrame) -> pd.DataFrame:
    """Sums per part and k by pandas: the oracle."""
    part = frame["ts"].dt.tz_convert("UTC").dt.tz_localize(None).dt.floor("60s")
    out = frame.assign(PART_TIMESTAMP=part).groupby(["PART_TIMESTAMP", "k"], as_index=False) \
        .agg(total=("x", "sum"), n=("x", "size"))
    return out.sort_values(["PART_TIMESTAMP", "k"]).reset_index(drop=True)


def stored_sums(warehouse) -> pd.DataFrame:
    got = warehouse.execute("SELECT PART_TIMESTAMP, k, total, n FROM Sums ORDER BY PART_TIMESTAMP, k")
    return got.astype({"k": "int64", "total": "int64", "n": "int64"})


def test_the_types_taken_as_they_are_are_the_types_spark_reads(spark, tmp_path):
    """spark_type says what Spark infers for each Parquet column it maps; the oracle is Spark's own reading."""
    columns = {
        "b": pa.array([True], pa.bool_()), "i8": pa.array([1], pa.int8()), "i16": pa.array([1], pa.int16()),
        "i32": pa.array([1], pa.int32()), "i64": pa.array([1], pa.int64()), "f32": pa.array([1.5], pa.float32()),
        "f64": pa.array([1.5], pa.float64()), "s": pa.array(["a"], pa.string()),
        "ls": pa.array(["a"], pa.large_string()), "bin": pa.array([b"a"], pa.binary()),
        "lbin": pa.array([b"a"], pa.large_binary()), "d": pa.array([dt.date(2015, 1, 1)], pa.date32()),
        "dec": pa.array([decimal.Decimal("1.25")], pa.decimal128(10, 2)),
        "ms": pa.array([START], pa.timestamp("ms", tz="UTC")), "us": pa.array([START], pa.timestamp("us", tz="UTC")),
        "local": pa.array([START.replace(tzinfo=None)], pa.timestamp("us")),
        "int96": pa.array([START.replace(tzinfo=None)], pa.timestamp("us")),
    }
    path = str(tmp_path / "types.parquet")
    pq.write_table(pa.table(columns), path)
    int96 = str(tmp_path / "int96.parquet")
    pq.write_table(pa.table({"int96": columns["int96"]}), int96, use_deprecated_int96_timestamps=True)
    read = {f.name: f.dataType for f in spark.read.parquet(path).schema.fields}
    read["int96"] = spark.read.parquet(int96).schema.fields[0].dataType
    arrow = {f.name: f.type for f in pq.ParquetFile(path).schema_arrow}
    arrow["int96"] = pq.ParquetFile(int96).schema_arrow.field("int96").type
    for name, column_type in arrow.items():
        mapped = spark_type(column_type, int96=name == "int96")
        if name == "local":
            assert mapped is None           # zone-less: Spark reads TIMESTAMP_NTZ, which LOAD casts
        else:
            assert mapped == read[name], name
    assert read["local"] != TimestampType() and spark_type(arrow["int96"]) is None    # nanoseconds, unless INT96


def test_a_loaded_file_is_copied_as_it_is_and_read_as_spark_would_store_it(spark, make_warehouse, tmp_path):
    frame = rows([0, 20, 40, 61, 75, 130, 179])          # parts 10:00, 10:01, 10:02
    source = tmp_path / "in" / "a.parquet"
    write(frame, source)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    warehouse = make_warehouse("taken")
    warehouse.run(STREAM)
    warehouse.run(SUMS)
    message = warehouse.run(f"LOAD '{source}' INTO M")[0].message
    assert message.startswith("Inserted 7 rows into 3 parts of M; 3 view parts computed")
    taken = slices(warehouse)
    assert len(taken) == 3 and all(s.loaded for s in taken) and len({s.folder for s in taken}) == 1
    stored = os.path.join(str(tmp_path / "taken"), taken[0].folder, LOADED_FILE)
    assert hashlib.sha256(open(stored, "rb").read()).hexdigest() == digest
    assert [m.rows for m in warehouse.engine.catalog.state("M").parts.values()] == [3, 2, 2]

    # the same rows, written by Spark (a DataFrame is never taken as it is)
    written = make_warehouse("written")
    written.run(STREAM)
    written.run(SUMS)
    written.ingest("M", frame)
    assert not any(s.loaded for s in slices(written))
    query = "SELECT ts, k, x, tag, PART_TIMESTAMP FROM M ORDER BY ts"
    pd.testing.assert_frame_equal(warehouse.execute(query), written.execute(query))
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(frame))
    pd.testing.assert_frame_equal(stored_sums(written), expected_sums(frame))
    # any Spark job reads them through the viewdf data source, and so does pyarrow here
    from_source = spark.read.format("viewdf").load(str(tmp_path / "taken" / "M")).toPandas()
    pd.testing.assert_frame_equal(from_source.sort_values("ts").reset_index(drop=True),
                                  written.execute("SELECT * FROM M ORDER BY ts"))
    arrow_rows = published_rows(str(tmp_path / "taken" / "M")).sort_values("ts").reset_index(drop=True)
    pd.testing.assert_frame_equal(arrow_rows, written.execute("SELECT * FROM M ORDER BY ts"), check_dtype=False)

    # the copy is the warehouse's: the file changed or gone changes nothing, and a restart reads it
    source.unlink()
    reopened = make_warehouse("taken")
    pd.testing.assert_frame_equal(reopened.execute(query), written.execute(query))


def test_files_spark_wrote_are_taken_as_they_are(spark, make_warehouse, tmp_path):
    """Spark writes timestamps as INT96 by default; a folder a Spark job wrote (hidden _SUCCESS and .crc files)."""
    frame = rows([0, 20, 61, 130])
    out = str(tmp_path / "spark-out")
    spark.createDataFrame(frame.astype({"x": "int32"})).selectExpr("ts", "k", "CAST(x AS INT) AS x", "tag") \
        .coalesce(2).write.parquet(out)
    assert {pq.ParquetFile(os.path.join(out, f)).schema.column(0).physical_type
            for f in os.listdir(out) if f.endswith(".parquet")} == {"INT96"}
    warehouse = make_warehouse()
    warehouse.run(STREAM)
    warehouse.run(SUMS)
    warehouse.run(f"LOAD '{out}' INTO M")
    assert slices(warehouse) and all(s.loaded for s in slices(warehouse))
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(frame))
    arrow_rows = published_rows(str(tmp_path / "wh" / "M")).sort_values("ts").reset_index(drop=True)
    pd.testing.assert_frame_equal(arrow_rows, warehouse.execute("SELECT * FROM M ORDER BY ts"), check_dtype=False)


def test_the_load_runs_no_spark_job_and_its_views_take_range_steps(spark, warehouse, tmp_path):
    frame = rows(list(range(0, 600, 10)))             # ten parts
    source = tmp_path / "in" / "ten.parquet"
    write(frame, source)
    warehouse.run(STREAM)
    warehouse.run("SET MAINTENANCE MANUAL")
    group = "loaded-parts-load"
    spark.sparkContext.setJobGroup(group, group)
    try:
        warehouse.run(f"LOAD '{source}' INTO M")
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []
    warehouse.run(SUMS)
    warehouse.run(COPY)
    warehouse.run("STEP ALL")
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(frame))
    big = warehouse.execute("SELECT k, x FROM Big ORDER BY x")
    assert big["x"].tolist() == [x for x in frame["x"] if x > 3]
    for view in ("Sums", "Big"):         # the ten parts in one range step (INITIALIZE is the UPDATE query)
        assert len({s.folder for s in slices(warehouse, view)}) == 1, view
        hows = [meta.how.value for meta in warehouse.engine.catalog.state(view).parts.values()]
        assert hows == ["initialize"] + ["update"] * 9, view


def test_files_one_per_part_late_files_and_a_delete(make_warehouse, tmp_path):
    warehouse = make_warehouse()
    warehouse.run(STREAM)
    warehouse.run(SUMS)
    folder = tmp_path / "landing"
    frames = {minute: rows([minute * 60 + s for s in (5, 25, 45)]) for minute in range(4)}
    for minute in (0, 1, 3):
        write(frames[minute], folder / f"m{minute}.parquet")
    warehouse.run(f"LOAD '{folder}' INTO M")
    assert [m.rows for m in warehouse.engine.catalog.state("Sums").parts.values()] == [3, 3, 0, 3]   # 10:02 sealed
    write(frames[2], folder / "m2.parquet")               # late: part 10:02 was sealed empty
    message = warehouse.run(f"LOAD '{folder}' INTO M")[0].message
    assert "3 late rows into 1 earlier part" in message
    write(rows([30, 50]), tmp_path / "more" / "m0b.parquet")   # more rows for a part that has some
    warehouse.run(f"LOAD '{tmp_path / 'more'}' INTO M")
    every = pd.concat([frames[0], frames[1], frames[2], frames[3], rows([30, 50])], ignore_index=True)
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(every))
    assert len(warehouse.engine.catalog.state("M").parts[min(warehouse.engine.catalog.state("M").parts)].folders) == 2
    assert all(s.loaded for s in slices(warehouse))
    written = rows([10, 15]).assign(x=[100, 101])          # Spark writes these: part 10:00 holds both kinds
    warehouse.ingest("M", written)
    every = pd.concat([every, written], ignore_index=True)
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(every))
    assert {s.loaded for s in slices(warehouse)} == {True, False}
    warehouse.run("DELETE FROM M WHERE x = 0")
    kept = every[every["x"] != 0]
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(kept))


@pytest.mark.parametrize("case", ["zone-less timestamps", "another type", "an extra column", "a NULL timestamp"])
def test_other_files_are_read_and_written_by_spark_as_before(make_warehouse, tmp_path, case):
    frame = rows([0, 20, 70])
    path = tmp_path / "in" / "f.parquet"
    if case == "zone-less timestamps":
        write(frame, path, ts_type=pa.timestamp("us"))
    elif case == "another type":
        write(frame, path, x_type=pa.int64())             # the stream's x is INT: Spark casts it
    elif case == "an extra column":
        write(frame, path)
        pq.write_table(pq.read_table(path).append_column("y", pa.array([1, 2, 3])), path)
    else:
        write(frame, path)
        table = pq.read_table(path)
        pq.write_table(table.set_column(0, "ts", pa.array([START, None, START], table.schema.field("ts").type)), path)
    warehouse = make_warehouse()
    warehouse.run(STREAM)
    if case == "an extra column":
        with pytest.raises(ViewDFError, match="unexpected column y"):
            warehouse.run(f"LOAD '{path}' INTO M")
    elif case == "a NULL timestamp":
        with pytest.raises(ViewDFError, match="1 row has a NULL timestamp in column ts; nothing was written"):
            warehouse.run(f"LOAD '{path}' INTO M")
    else:
        warehouse.run(f"LOAD '{path}' INTO M")
        assert slices(warehouse) and not any(s.loaded for s in slices(warehouse))
        got = warehouse.execute("SELECT ts, x FROM M ORDER BY ts")
        assert got["x"].tolist() == [0, 1, 2]
        assert got["ts"].tolist() == [pd.Timestamp(t).tz_localize(None) for t in frame["ts"]]
    if case in ("an extra column", "a NULL timestamp"):     # nothing was written
        assert not list((tmp_path / "wh").rglob("*.parquet"))


def test_a_unique_stream_and_rows_too_late_to_keep_go_through_spark(make_warehouse, tmp_path):
    unique = make_warehouse("unique")
    unique.run("CREATE STREAM M (ts TIMESTAMP, k BIGINT, x INT, tag STRING) TIMESTAMP ts PARTITION LENGTH 60 "
               "UNIQUE (k) PER PART")
    write(rows([0, 20, 40, 50]), tmp_path / "u" / "f.parquet")       # k: 0, 1, 2, 0 in one part
    with pytest.raises(ViewDFError, match=r"2 rows of part .* have \(k\) = \(0\)"):
        unique.run(f"LOAD '{tmp_path / 'u' / 'f.parquet'}' INTO M")
    strict = make_warehouse("strict")
    strict.run(STREAM + " ALLOWED LATENESS 1 PARTS")
    write(rows([600]), tmp_path / "s" / "late.parquet")
    write(rows([0]), tmp_path / "s" / "old.parquet")
    strict.run(f"LOAD '{tmp_path / 's' / 'late.parquet'}' INTO M")
    with pytest.raises(ViewDFError, match="more than ALLOWED LATENESS 1 PARTS behind"):
        strict.run(f"LOAD '{tmp_path / 's' / 'old.parquet'}' INTO M")
    assert strict.execute("SELECT x FROM M")["x"].tolist() == [0]


def test_a_copied_folder_is_gone_when_the_load_fails(make_warehouse, tmp_path, monkeypatch):
    warehouse = make_warehouse()
    warehouse.run(STREAM)
    write(rows([0, 70]), tmp_path / "in" / "f.parquet")
    copied = []
    copy = warehouse.engine.store.fs.copy_file

    def copy_then_fail(source: str, relative: str, link: bool = False) -> bool:
        copy(source, relative)
        copied.append(relative)
        raise OSError("disk full")
    monkeypatch.setattr(warehouse.engine.store.fs, "copy_file", copy_then_fail)
    with pytest.raises(OSError, match="disk full"):
        warehouse.run(f"LOAD '{tmp_path / 'in' / 'f.parquet'}' INTO M")
    assert copied and not os.path.exists(os.path.join(str(tmp_path / "wh"), copied[0]))
    assert warehouse.engine.catalog.state("M").parts == {}
    monkeypatch.undo()
    assert warehouse.run(f"LOAD '{tmp_path / 'in' / 'f.parquet'}' INTO M")[0].message.startswith(
        "Inserted 2 rows into 2 parts of M")


@pytest.mark.parametrize("physical", ["INT64", "INT96"])
def test_timestamps_before_1970_are_taken_as_they_are_and_read_as_spark_reads_the_file(spark, make_warehouse,
                                                                                      tmp_path, physical):
    """Negative timestamps, with nanoseconds in INT96 (which Spark rounds down to microseconds), and a file
    with a row before 1900 (read by Spark: its calendar rebase modes decide) go through Spark. The oracle is
    Spark reading the file itself."""
    nanos = [-60_000_000_001, -59_999_999_999, -1_500, -1, 0, 61_000_000_999]
    micros = [n // 1_000 for n in nanos]
    stamps = pa.array(nanos if physical == "INT96" else micros,
                      pa.timestamp("ns" if physical == "INT96" else "us", tz="UTC"))
    table = pa.table({"ts": stamps, "k": pa.array(range(6), pa.int64()), "x": pa.array(range(6), pa.int32()),
                      "tag": pa.array(["a"] * 6)})
    path = str(tmp_path / "in" / f"{physical}.parquet")
    os.makedirs(os.path.dirname(path))
    pq.write_table(table, path, use_deprecated_int96_timestamps=physical == "INT96")
    assert pq.ParquetFile(path).schema.column(0).physical_type == physical
    warehouse = make_warehouse()
    warehouse.run(STREAM)
    warehouse.run(f"LOAD '{path}' INTO M")
    assert slices(warehouse) and all(s.loaded for s in slices(warehouse))
    query = "SELECT unix_micros(ts) AS us, unix_micros(PART_TIMESTAMP) AS part, k FROM {} ORDER BY k"
    spark.read.parquet(path).selectExpr("*", "timestamp_micros(floor(unix_micros(ts) / 6e7) * 60000000) "
                                              "AS PART_TIMESTAMP").createOrReplaceTempView("spark_read")
    expected = spark.sql(query.format("spark_read")).toPandas()
    assert expected["us"].tolist() == micros
    pd.testing.assert_frame_equal(warehouse.execute(query.format("M")), expected, check_dtype=False)
    arrow_rows = published_rows(str(tmp_path / "wh" / "M")).sort_values("k").reset_index(drop=True)
    assert [pd.Timestamp(t).value // 1_000 for t in arrow_rows["ts"]] == micros
    old = str(tmp_path / "in" / "old.parquet")
    pq.write_table(table.set_column(0, "ts", pa.array([dt.datetime(1850, 1, 1, tzinfo=dt.timezone.utc)] * 6,
                                                      pa.timestamp("us", tz="UTC"))), old)
    older = make_warehouse("older")
    older.run(STREAM)
    older.run(f"LOAD '{old}' INTO M")
    assert slices(older) and not any(s.loaded for s in slices(older))
    assert older.execute("SELECT count(*) AS n FROM M WHERE year(ts) = 1850")["n"].tolist() == [6]


@pytest.mark.parametrize("physical", ["INT64 ms", "INT64 us", "INT96"])
def test_rows_per_part_counted_from_statistics_or_read_agree_with_pandas(tmp_path, physical):
    """Row groups of 3 rows: two that statistics put in one part each (counted unread), one across three parts
    (read); INT96 has no statistics, so every group is read. A NULL timestamp anywhere: not taken as it is."""
    seconds = [0, 5, 59, 60, 61, 119, 130, 185, 250]
    frame = rows(seconds)
    unit = "ms" if physical == "INT64 ms" else "us"
    table = pa.table({"ts": pa.array([START + dt.timedelta(seconds=s) for s in seconds], pa.timestamp(unit, tz="UTC")),
                      "k": pa.array(frame["k"], pa.int64()), "x": pa.array(frame["x"], pa.int32()),
                      "tag": pa.array(frame["tag"], pa.string())})
    path = tmp_path / "groups.parquet"
    pq.write_table(table, path, row_group_size=3, use_deprecated_int96_timestamps=physical == "INT96")
    schema = StructType([StructField("ts", TimestampType()), StructField("k", LongType()), StructField("x", IntegerType()),
                         StructField("tag", StringType())])
    first = int(START.timestamp()) // 60
    expected = {first: 3, first + 1: 3, first + 2: 1, first + 3: 1, first + 4: 1}
    metadata = pq.ParquetFile(path).metadata
    unread = [row_group_part(metadata.row_group(g), 0, unit, 60) for g in range(metadata.num_row_groups)]
    assert unread == ([None] * 3 if physical == "INT96" else [first, first + 1, None])
    assert rows_per_part(f"file:{path}", schema, "ts", 60) == expected
    assert rows_per_part(f"file:{path}", schema, "ts", 3600) == {first // 60: 9}

    nulls = table.set_column(0, "ts", pa.array([START] * 4 + [None] + [START] * 4, table.schema.field("ts").type))
    pq.write_table(nulls, path, row_group_size=3, use_deprecated_int96_timestamps=physical == "INT96")
    assert rows_per_part(f"file:{path}", schema, "ts", 60) is None
