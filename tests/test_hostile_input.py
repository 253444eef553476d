"""Hostile and bad input (issue #6), beyond tests/test_errors.py.

* Bad data through LOAD, INSERT and ``Warehouse.ingest``: NULL and unparseable timestamps, timestamps
  far in the future (year 9999), epoch milliseconds read as seconds, wrong column types and counts.
  Each is refused with a clear ViewDFError (positioned in the statement, when there is one) and leaves
  the warehouse as it was: same catalog version, same objects and parts, same files.
* Names and string literals cannot inject anything: odd stream, view and column names (``x; DROP``,
  ``../escape``, backticks, quotes, spaces), string literals with quotes, semicolons and statement text,
  LOAD paths with ``../``. Each is either refused with a positioned ViewDFError or works exactly (the
  rows come back as written), nothing is created outside the warehouse folder, and no folder name under
  ``<warehouse>/data/`` contains a user's name.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager

import pandas as pd
import pytest
from pyspark.sql import functions as F

from oracles import local_root, loss_rows, rows
from test_fuzz import files_below, time_limit
from test_paper_example import PAPER_DDL
from viewdf_magic import ViewDFError, Warehouse

SECONDS = 60          # per statement: a refusal is quick; more than this is a hang
T0 = pd.Timestamp("2015-01-01 10:00")


def build(spark, path) -> Warehouse:
    """The paper's M, Helper and View2 with minutes 10:00 .. 10:02 (losses 12, 13, 14), and a table."""
    warehouse = Warehouse(str(path), spark=spark, progress=False)
    warehouse.execute(PAPER_DDL)
    warehouse.execute("CREATE TABLE owners (src STRING, owner STRING)")
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 13, 14]))
    return warehouse


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory):
    """Shared by the cases that must be refused: every one leaves it as it was."""
    return build(spark, tmp_path_factory.mktemp("hostile") / "wh")


@pytest.fixture
def fresh(spark, tmp_path):
    """For cases that might hang or change the warehouse when they fail."""
    return build(spark, tmp_path / "wh")


def state(warehouse: Warehouse) -> tuple:
    """What a failing statement must leave alone: the catalog version, the objects, the parts of each
    stream and view, and every file and folder below the warehouse."""
    catalog = warehouse.catalog
    parts = {d.name: tuple(warehouse.parts(d.name)["part"]) for d in list(catalog.objects.values())
             if d.kind in ("stream", "view")}
    return catalog.version, tuple(sorted(catalog.objects)), parts, files_below(local_root(warehouse))


@contextmanager
def unchanged(warehouse: Warehouse):
    before = state(warehouse)
    yield
    assert state(warehouse) == before, "the warehouse changed"


def position(text: str, needle: str) -> tuple[int, int]:
    at = text.index(needle)
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


def refused(warehouse: Warehouse, text: str, needle: str, *phrases: str, seconds: float = SECONDS) -> ViewDFError:
    """``text`` raises a ViewDFError with every phrase, positioned at ``needle``, and changes nothing."""
    with unchanged(warehouse), time_limit(seconds, text), pytest.raises(ViewDFError) as caught:
        warehouse.execute(text)
    error = caught.value
    for phrase in phrases:
        assert phrase in error.message, error.message
    assert error.text == text, str(error)
    assert (error.line, error.column) == position(text, needle), str(error)
    return error


def ingest_refused(warehouse: Warehouse, stream: str, data, *phrases: str) -> ViewDFError:
    """``Warehouse.ingest`` raises a ViewDFError with every phrase (no text, so no position), changing nothing."""
    with unchanged(warehouse), time_limit(SECONDS, f"ingest into {stream}"), pytest.raises(ViewDFError) as caught:
        warehouse.ingest(stream, data)
    for phrase in phrases:
        assert phrase in caught.value.message, caught.value.message
    assert (caught.value.line, caught.value.column) == (None, None)
    return caught.value


# == bad data ===========================================================================================
CSV_HEADER = "ts,src,dest,loss\n"
LOAD_ERRORS = {
    "NULL timestamp in a CSV file": ("nullts.csv", CSV_HEADER + "2015-01-01 10:05:00,a,b,1\n,a,b,2\n", "",
                                     ["1 row has a NULL timestamp in column ts", "nothing was written"]),
    "NULL timestamp in a JSON file": ("nullts.json", '{"ts": null, "src": "a", "dest": "b", "loss": 1}\n', "",
                                      ["1 row has a NULL timestamp in column ts", "nothing was written"]),
    "unparseable timestamp in a CSV file": ("month13.csv", CSV_HEADER + "2015-01-01 10:05:00,a,b,1\n"
                                                                        "2024-13-45 10:00:00,a,b,2\n", "",
                                            ["'2024-13-45 10:00:00'", '"TIMESTAMP"', "malformed",
                                             "nothing was written"]),
    "unparseable timestamp in a JSON file": ("yesterday.json", '{"ts": "yesterday", "src": "a", "dest": "b", '
                                                               '"loss": 1}\n', "",
                                             ["'yesterday'", '"TIMESTAMP"', "malformed"]),
    "epoch milliseconds for a timestamp in a CSV file": ("millis.csv", CSV_HEADER + "1420106700000,a,b,1\n", "",
                                                         ["'1420106700000'", '"TIMESTAMP"', "malformed"]),
    "year 9999 in a CSV file": ("y9999.csv", CSV_HEADER + "2015-01-01 10:05:00,a,b,1\n9999-12-31 23:59:59,a,b,2\n",
                                "", ["would create", "limit is 100,000", "Nothing was written"]),
    "a column too many in the header": ("extra.csv", "ts,src,dest,loss,extra\n2015-01-01 10:05:00,a,b,1,x\n", "",
                                        ["unexpected column extra (expected ts, src, dest, loss)"]),
    "a column too few without a header": ("noheader.csv", "2015-01-01 10:05:00,a,b\n", " OPTIONS (header 'false')",
                                          ["3 values per row but 4 columns (ts, src, dest, loss)"]),
    "a nested value in a JSON file": ("struct.json", '{"ts": "2015-01-01 10:05:00", "src": "a", "dest": "b", '
                                                     '"loss": {"x": 1}}\n', "",
                                      ['cannot cast "STRUCT<x: BIGINT>" to "INT"']),
    "a CSV file read as Parquet": ("rows.csv", CSV_HEADER + "2015-01-01 10:05:00,a,b,1\n", " FORMAT parquet",
                                   ["cannot read"]),
}


@pytest.mark.parametrize("name,content,options,phrases", LOAD_ERRORS.values(), ids=LOAD_ERRORS.keys())
def test_load_of_bad_data_is_refused(loaded, tmp_path, name, content, options, phrases):
    path = tmp_path / name
    path.write_text(content)
    text = f"LOAD '{path}'\n  INTO M{options}"
    refused(loaded, text, f"'{path}'", *phrases)


RAGGED = {
    "a row with a field missing": CSV_HEADER + "2015-01-01 10:05:00,a,b,1\n2015-01-01 10:05:10,a,b\n",
    "a row with a field too many": CSV_HEADER + "2015-01-01 10:05:00,a,b,1,7\n",
}


@pytest.mark.parametrize("content", RAGGED.values(), ids=RAGGED.keys())
def test_load_of_ragged_csv_rows_is_refused(fresh, tmp_path, content):
    """A CSV row with fewer or more fields than the header is malformed: not padded with NULL, not cut.
    (On a fresh warehouse: today the rows go in.)"""
    path = tmp_path / "ragged.csv"
    path.write_text(content)
    text = f"LOAD '{path}' INTO M"
    refused(fresh, text, f"'{path}'", "alformed")


def test_load_of_a_parquet_file_with_a_wrong_type(loaded, spark, tmp_path):
    path = str(tmp_path / "strings.parquet")
    spark.createDataFrame([((T0 + pd.Timedelta(minutes=5)).to_pydatetime(), "a", "b", "x")],
                          "ts timestamp, src string, dest string, loss string").write.parquet(path)
    text = f"LOAD '{path}' INTO M"
    refused(loaded, text, f"'{path}'", "The value 'x'", '"INT"', "nothing was written")


def test_load_of_the_warehouse_own_log(loaded):
    log = os.path.join(local_root(loaded), "_viewdf", "log")
    first = sorted(n for n in os.listdir(log) if n.endswith(".json"))[0]
    text = f"LOAD '{os.path.join(log, first)}' INTO M"
    refused(loaded, text, "'", "missing columns ts, src, dest, loss", "unexpected column")


INSERT_ERRORS = {
    "a string that is not a timestamp": ("INSERT INTO M VALUES ('2024-13-45', 'a', 'b', 1)", "'2024-13-45'",
                                         ["The value '2024-13-45'", '"TIMESTAMP"', "malformed",
                                          "nothing was written"]),
    "a TIMESTAMP literal that is not one": ("INSERT INTO M VALUES\n  (TIMESTAMP '2024-13-45', 'a', 'b', 1)",
                                            "TIMESTAMP '2024", ['typed literal "TIMESTAMP" is invalid',
                                                                "'2024-13-45'"]),
    "the timestamp left out": ("INSERT INTO M (src, dest, loss) VALUES ('a', 'b', 1)", "VALUES",
                               ["1 row has a NULL timestamp in column ts", "nothing was written"]),
    "a NULL timestamp from a query": ("INSERT INTO M SELECT CAST(NULL AS TIMESTAMP), src, dest, loss FROM M[LATEST]",
                                      "SELECT CAST", ["1 row has a NULL timestamp in column ts"]),
    "year 9999": ("INSERT INTO M VALUES\n  (TIMESTAMP '2015-01-01 10:05:00', 'a', 'b', 1),\n"
                  "  (TIMESTAMP '9999-12-31 23:59:59', 'a', 'b', 2)", "VALUES",
                  ["would create", "limit is 100,000", "Nothing was written"]),
    "epoch milliseconds read as seconds": ("INSERT INTO M VALUES (1420106700000, 'a', 'b', 1)", "VALUES",
                                           ["would create", "Are the timestamps in the right unit?",
                                            "Nothing was written"]),
    "millions of parts in one batch": ("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:05:00', 'a', 'b', 1),\n"
                                       "  (TIMESTAMP '2045-01-01 00:00:00', 'a', 'b', 2)", "VALUES",
                                       ["would create", "to 2045-01-01 00:00:00", "limit is 100,000",
                                        "Are the timestamps in the right unit?"]),
    "a boolean for a timestamp": ("INSERT INTO M VALUES (true, 'a', 'b', 1)", "VALUES",
                                  ['cannot cast "BOOLEAN" to "TIMESTAMP"']),
    "an array for an INT": ("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:05:00', 'a', 'b', array(1))", "VALUES",
                            ['cannot cast "ARRAY<INT>" to "INT"']),
    "a number too large for an INT": ("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:05:00', 'a', 'b', "
                                      "99999999999999999999)", "99999999999999999999",
                                      ["99999999999999999999", '"INT"', "overflow", "nothing was written"]),
    "rows of different lengths": ("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:05:00', 'a', 'b', 1),\n"
                                  "  (TIMESTAMP '2015-01-01 10:05:01', 'a')", "VALUES",
                                  ["expected 4 columns but found 2 columns in row 1"]),
    "a query with a column too many": ("INSERT INTO M SELECT ts, src, dest, loss, loss FROM M", "SELECT ts",
                                       ["5 values per row but 4 columns (ts, src, dest, loss)"]),
    "a table row with a value too many": ("INSERT INTO owners VALUES ('a', 'b', 'c')", "VALUES",
                                          ["3 values per row but 2 columns (src, owner)"]),
}


@pytest.mark.parametrize("text,needle,phrases", INSERT_ERRORS.values(), ids=INSERT_ERRORS.keys())
def test_insert_of_bad_data_is_refused(loaded, text, needle, phrases):
    refused(loaded, text, needle, *phrases)


def _spark_batch(spark, timestamp):
    frame = spark.createDataFrame([("a", "b", 1)], "src string, dest string, loss int")
    return frame.withColumn("ts", timestamp)


MINUTE_1005 = pd.DataFrame({"ts": [T0 + pd.Timedelta(minutes=5)], "src": ["a"], "dest": ["b"], "loss": [1]})
INGEST_ERRORS = {
    "NULL timestamp in a Spark DataFrame": (lambda spark: _spark_batch(spark, F.lit(None).cast("timestamp")),
                                            ["1 row has a NULL timestamp in column ts"]),
    "unparseable timestamp strings": (lambda spark: MINUTE_1005.assign(ts=["2024-13-45"]),
                                      ["The value '2024-13-45'", '"TIMESTAMP"', "malformed"]),
    "booleans for timestamps": (lambda spark: MINUTE_1005.assign(ts=[True]),
                                ['cannot cast "BOOLEAN" to "TIMESTAMP"']),
    "a list for an INT": (lambda spark: MINUTE_1005.assign(loss=[[1, 2]]), ['cannot cast "ARRAY<BIGINT>" to "INT"']),
    "two columns differing in case": (lambda spark: MINUTE_1005.assign(LOSS=[2]), ["ambiguous"]),
    "a column too many in a Spark DataFrame": (
        lambda spark: _spark_batch(spark, F.lit("2015-01-01 10:05:00").cast("timestamp")).withColumn("x", F.lit(1)),
        ["unexpected column x (expected ts, src, dest, loss)"]),
    "a column too few in a Spark DataFrame": (
        lambda spark: _spark_batch(spark, F.lit("2015-01-01 10:05:00").cast("timestamp")).drop("dest"),
        ["missing column dest (expected ts, src, dest, loss)"]),
    "year 2200": (lambda spark: MINUTE_1005.assign(ts=[pd.Timestamp("2200-01-01")]),
                  ["would create", "to 2200-01-01 00:00:00", "limit is 100,000"]),
    "year 9999 in a Spark DataFrame": (lambda spark: _spark_batch(spark, F.lit("9999-12-31").cast("timestamp")),
                                       ["would create", "limit is 100,000", "Nothing was written"]),
    "epoch milliseconds read as seconds": (lambda spark: _spark_batch(spark, F.timestamp_seconds(F.lit(1420106700000))),
                                           ["would create", "Are the timestamps in the right unit?"]),
    "not a DataFrame": (lambda spark: [("2015-01-01 10:05:00", "a", "b", 1)],
                        ["expected a pandas or Spark DataFrame, got list"]),
}


@pytest.mark.parametrize("make,phrases", INGEST_ERRORS.values(), ids=INGEST_ERRORS.keys())
def test_ingest_of_bad_data_is_refused(loaded, spark, make, phrases):
    ingest_refused(loaded, "M", make(spark), *phrases)


@pytest.mark.parametrize("through", ["2200-01-01 00:00:00", "9999-12-31 00:00:00"])
def test_sealing_millions_of_parts_is_refused(fresh, through):
    """SEAL far ahead would seal millions of empty parts and compute a view part for each: refuse it,
    like a batch that would create that many parts."""
    text = f"SEAL M THROUGH '{through}'"
    refused(fresh, text, f"'{through}'", "limit is 100,000", seconds=30)
    assert fresh.execute("SELECT count(*) AS n FROM M")["n"].tolist() == [3]


def test_a_good_batch_after_refused_ones(loaded, tmp_path):
    """The refusals left nothing half-done: the next good batch goes in and maintenance runs."""
    path = tmp_path / "good.csv"
    path.write_text(CSV_HEADER + "2015-01-01 10:03:00,10.0.0.1,10.0.0.2,15\n")
    warehouse = loaded
    with time_limit(SECONDS, "LOAD good.csv"):
        warehouse.execute(f"LOAD '{path}' INTO M")
    assert rows(warehouse.execute("SELECT * FROM M"), ["src", "dest", "loss"]) == \
        [("10.0.0.1", "10.0.0.2", 12), ("10.0.0.1", "10.0.0.2", 13), ("10.0.0.1", "10.0.0.2", 14),
         ("10.0.0.1", "10.0.0.2", 15)]
    assert rows(warehouse.execute("SELECT * FROM View2"), ["src", "dest", "ct", "sum_loss"]) == \
        [("10.0.0.1", "10.0.0.2", 4, 54)]


# == names and literals =================================================================================
def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def literal(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


HOSTILE_NAMES = {
    "semicolon and DROP": "x; DROP",
    "a space": "my view",
    "a backtick": "a`b",
    "a quote": "it's",
    "a parent folder": "../escape",
    "a climb out of the warehouse": "../../../../../../../../../../{tmp}/escaped",
    "slashes": "a/b\\c",
    "two dots": "..",
    "a percent-encoded climb": "%2e%2e%2fescape",
    "unicode": "名前 ☃",
    "a keyword": "select",
    "a placeholder's name": "__vdf0_0",
}
ID = re.compile(r"[0-9a-f]{12}")
FOLDER = re.compile(r"[0-9a-f]{32}")
PART = re.compile(r"__part=-?\d+")


def outside(base, warehouse: Warehouse) -> frozenset[str]:
    """Every file and folder below ``base``, except inside the warehouse."""
    root = os.path.relpath(local_root(warehouse), base)
    return frozenset(p for p in files_below(str(base)) if p != root and not p.startswith(root + os.sep))


def check_layout(warehouse: Warehouse, *names: str) -> None:
    """The warehouse holds only its log and data folders named by random ids, never by a user's name."""
    root = local_root(warehouse)
    assert set(os.listdir(root)) <= {"_viewdf", "data"}, os.listdir(root)
    for path in files_below(root):
        pieces = path.split(os.sep)
        for name in names:
            assert name.lower() not in path.lower(), (name, path)
        if pieces[0] == "_viewdf":
            continue
        assert len(pieces) < 2 or ID.fullmatch(pieces[1]), path
        assert len(pieces) < 3 or FOLDER.fullmatch(pieces[2]), path
        if len(pieces) > 3:
            assert PART.fullmatch(pieces[3]) or (len(pieces) == 4 and os.path.isfile(os.path.join(root, path))), path
        assert len(pieces) <= 5, path


@pytest.mark.parametrize("name", HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
def test_hostile_stream_and_table_names(spark, tmp_path, name):
    name = name.format(tmp=str(tmp_path).strip("/"))
    warehouse = Warehouse(str(tmp_path / "wh"), spark=spark, progress=False)
    before = outside(tmp_path, warehouse)
    q = quoted(name)
    with time_limit(SECONDS, name):
        warehouse.execute(f"CREATE STREAM {q} (ts TIMESTAMP, v INT) PARTITION LENGTH 60;\n"
                          f"INSERT INTO {q} VALUES (TIMESTAMP '2015-01-01 10:00:00', 1), "
                          f"(TIMESTAMP '2015-01-01 10:01:30', 2);\n"
                          f"CREATE TABLE {quoted(name + ' t')} (k STRING, n INT);\n"
                          f"INSERT INTO {quoted(name + ' t')} VALUES ({literal(name)}, 1)")
        assert rows(warehouse.execute(f"SELECT v FROM {q}"), ["v"]) == [(1,), (2,)]
        assert rows(warehouse.execute(f"SELECT v, PART_TIMESTAMP FROM {q}[LATEST]"), ["v", "PART_TIMESTAMP"]) == \
            [(2, pd.Timestamp("2015-01-01 10:01:00"))]
        assert rows(warehouse.execute(f"SELECT k, n FROM {quoted(name + ' t')}"), ["k", "n"]) == [(name, 1)]
        assert warehouse.execute("SHOW STREAMS")["name"].tolist() == [name]
        assert warehouse.execute(f"SHOW PARTS {q}")["part"].tolist() == [23668440, 23668441]
        assert warehouse.execute(f"DESCRIBE {q}")["column"].tolist() == ["ts", "v", "PART_TIMESTAMP"]
        assert list(warehouse.parts(name)["part"]) == [23668440, 23668441]
        check_layout(warehouse, name, name + " t")
        assert outside(tmp_path, warehouse) == before
        warehouse.execute(f"DROP STREAM {q}; DROP TABLE {quoted(name + ' t')}; VACUUM RETAIN 0 SECONDS")
    assert warehouse.catalog.get(name) is None
    assert os.listdir(os.path.join(local_root(warehouse), "data")) == []
    assert outside(tmp_path, warehouse) == before


@pytest.fixture(scope="module")
def named(spark, tmp_path_factory):
    """M with losses 12, 13, 14 at 10:00 .. 10:02, for views with hostile names (each dropped after)."""
    base = tmp_path_factory.mktemp("names")
    warehouse = Warehouse(str(base / "wh"), spark=spark, progress=False)
    warehouse.execute(PAPER_DDL.split(";")[0])
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 13, 14]))
    return base, warehouse


MINUTES = [T0 + pd.Timedelta(minutes=k) for k in range(3)]
PAIR = ("10.0.0.1", "10.0.0.2")


def created_and_dropped(base, warehouse: Warehouse, name: str, text: str, columns: list[str],
                        expected: list[tuple]) -> None:
    """Run ``text`` (which creates view ``name``), read the view back exactly, check the folders, drop it."""
    before = outside(base, warehouse)
    q = quoted(name)
    with time_limit(3 * SECONDS, text):
        warehouse.execute(text)
        assert rows(warehouse.execute(f"SELECT * FROM {q}"), columns + ["PART_TIMESTAMP"]) == expected
        assert name in warehouse.execute("SHOW VIEWS")["name"].tolist()
        check_layout(warehouse, name)
        assert outside(base, warehouse) == before
        warehouse.execute(f"DROP VIEW {q}")
    assert [d.name for d in warehouse.catalog.objects.values()] == ["M"]


@pytest.mark.parametrize("name", HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
def test_hostile_viewdf_names(named, name):
    base, warehouse = named
    name = name.format(tmp=str(base).strip("/"))
    q = quoted(name)
    text = (f"CREATE VIEW {q} AS\n"
            f"INITIALIZE {q}[i] AS SELECT src, loss AS total FROM M[i]\n"
            f"UPDATE {q}[j] AS SELECT n.src, n.loss + coalesce(p.total, 0) AS total\n"
            f"  FROM M[j] AS n LEFT JOIN {q}[j-1] AS p ON n.src = p.src")
    created_and_dropped(base, warehouse, name, text, ["src", "total"],
                        [("10.0.0.1", 12, MINUTES[0]), ("10.0.0.1", 25, MINUTES[1]), ("10.0.0.1", 39, MINUTES[2])])


TRANSLATED_NAMES = {k: HOSTILE_NAMES[k] for k in ("semicolon and DROP", "a space", "a backtick", "a quote")}


@pytest.mark.parametrize("name", TRANSLATED_NAMES.values(), ids=TRANSLATED_NAMES.keys())
def test_hostile_window_view_names(named, name):
    base, warehouse = named
    text = (f"CREATE VIEW {quoted(name)} AS SELECT src, sum(loss) AS total, count(*) AS n\n"
            f"  FROM M [WINDOW 2 MINUTES] GROUP BY src")
    created_and_dropped(base, warehouse, name, text, ["src", "total", "n"],
                        [("10.0.0.1", 12, 1, MINUTES[0]), ("10.0.0.1", 25, 2, MINUTES[1]),
                         ("10.0.0.1", 27, 2, MINUTES[2])])


@pytest.mark.parametrize("name", ["Plain", *TRANSLATED_NAMES.values()], ids=["plain", *TRANSLATED_NAMES.keys()])
def test_hostile_pattern_view_names(named, name):
    base, warehouse = named
    text = (f"CREATE VIEW {quoted(name)} AS SELECT src, count(*) AS ct, sum(loss) AS total\n"
            f"  FROM M PATTERN [a, b+] WHERE a.loss > 10 AND b.loss > 10 GROUP BY src")
    created_and_dropped(base, warehouse, name, text, ["src", "ct", "total"],
                        [("10.0.0.1", 2, 25, MINUTES[1]), ("10.0.0.1", 3, 39, MINUTES[2])])


@pytest.mark.parametrize("column", ["v`w", "my value", "x; DROP", "it's"])
def test_hostile_column_names(spark, tmp_path, column):
    """Columns with odd names go in through INSERT, ingest and LOAD, and come back."""
    warehouse = Warehouse(str(tmp_path / "wh"), spark=spark, progress=False)
    q = quoted(column)
    csv = tmp_path / "rows.csv"
    csv.write_text(f'ts,"{column}"\n2015-01-01 10:02:00,3\n')
    with time_limit(3 * SECONDS, column):
        warehouse.execute(f"CREATE STREAM S (ts TIMESTAMP, {q} INT) PARTITION LENGTH 60;\n"
                          f"INSERT INTO S VALUES (TIMESTAMP '2015-01-01 10:00:00', 1)")
        warehouse.ingest("S", pd.DataFrame({"ts": [T0 + pd.Timedelta(minutes=1)], column: [2]}))
        warehouse.execute(f"LOAD '{csv}' INTO S")
        assert rows(warehouse.execute(f"SELECT {q} FROM S"), [column]) == [(1,), (2,), (3,)]
        warehouse.execute(f"CREATE VIEW W AS SELECT sum({q}) AS total FROM S [WINDOW 2 MINUTES]")
        assert rows(warehouse.execute("SELECT * FROM W"), ["total", "PART_TIMESTAMP"]) == \
            [(1, MINUTES[0]), (3, MINUTES[1]), (5, MINUTES[2])]


@pytest.mark.parametrize("column", ["t`s", "my time"])
def test_hostile_timestamp_column_names(spark, tmp_path, column):
    warehouse = Warehouse(str(tmp_path / "wh"), spark=spark, progress=False)
    q = quoted(column)
    with time_limit(SECONDS, column):
        warehouse.execute(f"CREATE STREAM S ({q} TIMESTAMP, v INT) TIMESTAMP {q} PARTITION LENGTH 60;\n"
                          f"INSERT INTO S VALUES (TIMESTAMP '2015-01-01 10:00:00', 1)")
        warehouse.ingest("S", pd.DataFrame({column: [T0 + pd.Timedelta(minutes=1)], "v": [2]}))
        assert rows(warehouse.execute(f"SELECT {q}, v FROM S"), [column, "v"]) == [(MINUTES[0], 1), (MINUTES[1], 2)]
        assert list(warehouse.parts("S")["part"]) == [23668440, 23668441]


def test_string_literals_are_data(fresh):
    """Quotes, semicolons, comments, backticks and statement text inside string literals stay data."""
    warehouse = fresh
    text = ("INSERT INTO M VALUES\n"
            "  (TIMESTAMP '2015-01-01 10:03:00', 'x''; DROP TABLE owners; --', '`; DROP VIEW Helper`', 5),\n"
            "  (TIMESTAMP '2015-01-01 10:03:10', 'it\\'s', 'back\\\\slash', 6),\n"
            "  (TIMESTAMP '2015-01-01 10:03:20', 'M[LATEST] [WINDOW 1 MINUTES] PATTERN [a]', '/* ; */', 7)")
    with time_limit(SECONDS, text):
        warehouse.execute(text)
        assert rows(warehouse.execute("SELECT src, dest, loss FROM M[LATEST]"), ["src", "dest", "loss"]) == [
            ("M[LATEST] [WINDOW 1 MINUTES] PATTERN [a]", "/* ; */", 7),
            ("it's", "back\\slash", 6),
            ("x'; DROP TABLE owners; --", "`; DROP VIEW Helper`", 5)]
        warehouse.execute("INSERT INTO owners VALUES ('`', 'a``b'), ('\\'', '; DROP STREAM M CASCADE; --')")
        assert rows(warehouse.execute("SELECT * FROM owners"), ["src", "owner"]) == \
            [("'", "; DROP STREAM M CASCADE; --"), ("`", "a``b")]
    assert sorted(d.name for d in warehouse.catalog.objects.values()) == ["Helper", "M", "View2", "owners"]


def test_string_literals_in_translated_and_hand_written_views(fresh):
    """Clause keywords, window and pattern clauses and semicolons inside strings do not cut the query."""
    warehouse = fresh
    with time_limit(3 * SECONDS, "views with strings"):
        warehouse.execute(
            "CREATE VIEW Notes AS\n"
            "INITIALIZE Notes[i] AS SELECT src, 'UPDATE Notes[j] AS SELECT 1; --' AS note FROM M[i]\n"
            "UPDATE Notes[j] AS SELECT src, 'PARTITION LENGTH 7 START AT LATEST' AS note FROM M[j]")
        assert rows(warehouse.execute("SELECT * FROM Notes"), ["note", "PART_TIMESTAMP"]) == [
            ("PARTITION LENGTH 7 START AT LATEST", MINUTES[1]), ("PARTITION LENGTH 7 START AT LATEST", MINUTES[2]),
            ("UPDATE Notes[j] AS SELECT 1; --", MINUTES[0])]
        warehouse.execute("CREATE VIEW Sums AS SELECT src, sum(loss) AS total FROM M [WINDOW 2 MINUTES]\n"
                          "  WHERE dest <> '[WINDOW 5 MINUTES]; DROP VIEW Helper; --' GROUP BY src")
        assert rows(warehouse.execute("SELECT * FROM Sums"), ["total", "PART_TIMESTAMP"]) == \
            [(12, MINUTES[0]), (25, MINUTES[1]), (27, MINUTES[2])]
        warehouse.execute("CREATE VIEW Runs AS SELECT src, count(*) AS ct\n"
                          "  FROM M WHERE dest <> 'PATTERN [z]; DROP STREAM M; --' PATTERN [a, b+]\n"
                          "  WHERE a.loss > 10 AND b.loss > 10 AND b.src <> 'x''; --' GROUP BY src")
        assert rows(warehouse.execute("SELECT * FROM Runs"), ["ct", "PART_TIMESTAMP"]) == \
            [(2, MINUTES[1]), (3, MINUTES[2])]
    assert sorted(d.name for d in warehouse.catalog.objects.values() if not d.owner) == \
        ["Helper", "M", "Notes", "Runs", "Sums", "View2", "owners"]


def test_quotes_inside_string_literals_keep_their_meaning(spark, tmp_path):
    """Spark reads 'it''s' and 'it\\'s' as it's. Views that copy or re-render a condition (translated
    views) must compare with the same value as the user's own query does."""
    warehouse = Warehouse(str(tmp_path / "wh"), spark=spark, progress=False)
    warehouse.execute(PAPER_DDL.split(";")[0])
    warehouse.ingest("M", pd.DataFrame({"ts": MINUTES, "src": ["it's", "it's", "it's"],
                                        "dest": ["a\\b", "a\\b", "x"], "loss": [12, 13, 14]}))
    both = "src = 'it''s' AND src = 'it\\'s'"
    with time_limit(3 * SECONDS, both):
        assert rows(warehouse.execute(f"SELECT loss FROM M WHERE {both}"), ["loss"]) == [(12,), (13,), (14,)]
        warehouse.execute(f"CREATE VIEW Copy AS INITIALIZE Copy[i] AS SELECT loss FROM M[i] WHERE {both}\n"
                          f"UPDATE Copy[j] AS SELECT loss FROM M[j] WHERE {both}")
        warehouse.execute(f"CREATE VIEW Win AS SELECT src, sum(loss) AS total FROM M [WINDOW 2 MINUTES]\n"
                          f"  WHERE {both} AND dest = 'a\\\\b' GROUP BY src")
        warehouse.execute(f"CREATE VIEW Pat AS SELECT src, count(*) AS ct FROM M WHERE {both}\n"
                          f"  PATTERN [a, b+] WHERE a.src = 'it''s' AND b.dest = 'a\\\\b' GROUP BY src")
        assert rows(warehouse.execute("SELECT * FROM Copy"), ["loss"]) == [(12,), (13,), (14,)]
        assert rows(warehouse.execute("SELECT * FROM Win"), ["src", "total", "PART_TIMESTAMP"]) == \
            [("it's", 12, MINUTES[0]), ("it's", 13, MINUTES[2]), ("it's", 25, MINUTES[1])]
        assert rows(warehouse.execute("SELECT * FROM Pat"), ["src", "ct", "PART_TIMESTAMP"]) == \
            [("it's", 2, MINUTES[1])]


UNQUOTED = {
    "a name with a semicolon": ("CREATE STREAM x; DROP (ts TIMESTAMP) PARTITION LENGTH 60", ";",
                                ["expected '(' starting the column list at the end of the statement"]),
    "DROP after a failing statement": ("DROP VIEW nosuch;\nDROP STREAM M CASCADE", "nosuch",
                                       ["no view named 'nosuch'"]),
    "a comment hiding a DROP": ("SELECT nosuch FROM M -- ; DROP STREAM M CASCADE", "nosuch", ["nosuch"]),
    "a name with a dot": ("CREATE STREAM a.b (ts TIMESTAMP) PARTITION LENGTH 60", ".b", ["expected '(' starting"]),
    "a name with a slash": ("CREATE VIEW ../x AS SELECT 1", "../x", ["expected a view name"]),
    "an empty quoted name": ("CREATE TABLE `` (a INT)", "``", ["a name cannot be empty"]),
}


@pytest.mark.parametrize("text,needle,phrases", UNQUOTED.values(), ids=UNQUOTED.keys())
def test_unquoted_hostile_names_are_refused(loaded, text, needle, phrases):
    refused(loaded, text, needle, *phrases)
    assert sorted(d.name for d in loaded.catalog.objects.values()) == ["Helper", "M", "View2", "owners"]


def test_load_paths_with_parent_folders(spark, tmp_path):
    """``../`` in a LOAD path reads the file it names (a source, never a destination); a path that does
    not exist is a positioned error; nothing is created outside the warehouse."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "odd name; it's.csv").write_text(CSV_HEADER + "2015-01-01 10:00:00,\"it's; DROP\",`b`,7\n")
    (inputs / "rows.csv").write_text(CSV_HEADER + "2015-01-01 10:01:00,a,b,8\n")
    (inputs / "it's too.csv").write_text(CSV_HEADER + "2015-01-01 10:02:00,'c',\"d\",9\n")
    warehouse = Warehouse(str(tmp_path / "wh"), spark=spark, progress=False)
    warehouse.execute(PAPER_DDL.split(";")[0])
    before = outside(tmp_path, warehouse)
    root = local_root(warehouse)
    with time_limit(3 * SECONDS, "LOAD"):
        warehouse.execute(f"LOAD '{root}/../inputs/odd name; it\\'s.csv' INTO M")
        warehouse.execute(f"LOAD '{root}/data/../../inputs/../inputs/rows.csv' INTO M")
        missing = f"LOAD '{root}/../inputs/../../nowhere/rows.csv' INTO M"
        error = refused(warehouse, missing, "'", "cannot read")
        assert "nowhere/rows.csv" in error.message
        warehouse.execute(f"LOAD '{root}/../inputs/it''s too.csv' INTO M")     # Spark's other escape
    assert rows(warehouse.execute("SELECT src, dest, loss FROM M"), ["src", "dest", "loss"]) == \
        [("'c'", "d", 9), ("a", "b", 8), ("it's; DROP", "`b`", 7)]
    assert outside(tmp_path, warehouse) == before
    check_layout(warehouse)
