"""SHOW, DESCRIBE, DROP, dimension tables, INSERT and LOAD, and names that are not plain identifiers."""

import os
import re

import pandas as pd
import pytest

from viewdf_magic.errors import ViewDFError
from oracles import data_folders, local_root, loss_rows, rows
from test_paper_example import PAPER_DDL

M_1000 = 23668440         # 2015-01-01 10:00 in minutes
STAMP = pd.Timestamp


def test_show_and_describe(warehouse):
    warehouse.execute(PAPER_DDL + "CREATE TABLE owners (src STRING, owner STRING);"
                                  "INSERT INTO owners VALUES ('10.0.0.1', 'ann'), ('10.0.0.9', 'bob')")
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, None, 15]))

    streams = warehouse.execute("SHOW STREAMS")
    assert streams.to_dict("records") == [{
        "name": "M", "partition_length": 60, "timestamp": "ts", "parts": 3, "rows": 2,
        "first_part": STAMP("2015-01-01 10:00"), "newest_part": STAMP("2015-01-01 10:02")}]
    views = warehouse.execute("SHOW VIEWS").set_index("name")
    assert list(views.index) == ["Helper", "View2"]
    assert views.loc["Helper", "sources"] == "M" and views.loc["View2", "sources"] == "Helper"
    assert list(views["partition_length"]) == [60, 60] and list(views["parts"]) == [3, 3]
    assert list(views["rows"]) == [2, 0]
    assert list(views["newest_part"]) == [STAMP("2015-01-01 10:02")] * 2
    assert list(views["next_part"]) == [STAMP("2015-01-01 10:03")] * 2
    tables = warehouse.execute("SHOW TABLES")
    assert tables[["name", "rows", "columns"]].to_dict("records") == \
        [{"name": "owners", "rows": 2, "columns": "src, owner"}]

    assert warehouse.execute("DESCRIBE M").to_dict("list") == {
        "column": ["ts", "src", "dest", "loss", "PART_TIMESTAMP"],
        "type": ["timestamp", "string", "string", "int", "timestamp"]}
    assert warehouse.execute("DESCRIBE VIEW helper").to_dict("list") == {
        "column": ["src", "dest", "ct", "sum_loss", "PART_TIMESTAMP"],
        "type": ["string", "string", "int", "int", "timestamp"]}
    assert warehouse.execute("DESC TABLE owners").to_dict("list") == {
        "column": ["src", "owner"], "type": ["string", "string"]}
    [described] = warehouse.run("DESCRIBE Helper")
    assert described.detail.startswith("view Helper, PARTITION LENGTH 60, reads M\n")
    assert "UPDATE Helper[j] AS" in described.detail
    [described] = warehouse.run("DESCRIBE STREAM M")
    assert described.detail.startswith("stream M, PARTITION LENGTH 60, TIMESTAMP ts\n")


def test_drop(warehouse):
    warehouse.execute(PAPER_DDL + "CREATE TABLE owners (src STRING, owner STRING);"
                                  "INSERT INTO owners VALUES ('a', 'ann')")
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 13]))
    folder = lambda name: f"data/{warehouse.catalog.get(name).id}"  # noqa: E731
    m_folder, helper_folder, view2_folder, owners_folder = map(folder, ["M", "Helper", "View2", "owners"])
    assert {m_folder, helper_folder, owners_folder} <= data_folders(warehouse)

    [dropped] = warehouse.run("DROP VIEW View2")
    assert dropped.message == "Dropped View2. The data files are deleted after 1 HOUR (VACUUM RETAIN 0 SECONDS " \
                              "deletes them now)."
    assert list(warehouse.execute("SHOW VIEWS")["name"]) == ["Helper"]
    assert "nothing dropped" in warehouse.run("DROP VIEW IF EXISTS View2")[0].message
    [dropped] = warehouse.run("DROP STREAM M CASCADE")
    assert dropped.message.startswith("Dropped Helper, M. The data files")
    assert warehouse.execute("SHOW STREAMS").empty and warehouse.execute("SHOW VIEWS").empty
    # Kept for readers of the previous catalog version until the grace period ends (or VACUUM). View2's
    # parts were written in Helper's Spark jobs (fused), so it has no files of its own.
    assert {m_folder, helper_folder} <= data_folders(warehouse)
    assert {m_folder, helper_folder, view2_folder} == set(warehouse.catalog.garbage)
    warehouse.execute("DROP TABLE owners; DROP TABLE IF EXISTS owners; DROP STREAM IF EXISTS M")
    assert warehouse.execute("SHOW TABLES").empty and owners_folder in warehouse.catalog.garbage
    assert warehouse.run("VACUUM RETAIN 0 SECONDS")[0].message == "Deleted 4 unreferenced data folders."
    assert not {m_folder, helper_folder, view2_folder, owners_folder} & data_folders(warehouse)

    # A new stream of the same name starts empty: nothing of the old one comes back.
    warehouse.execute(PAPER_DDL)
    assert warehouse.execute("SELECT * FROM M").empty and warehouse.parts("Helper").empty
    warehouse.ingest("M", loss_rows("2015-01-01 11:00", [20]))
    assert rows(warehouse.execute("SELECT * FROM Helper"), ["ct", "sum_loss", "PART_TIMESTAMP"]) == \
        [(1, 20, STAMP("2015-01-01 11:00"))]


def test_drop_through_the_api(warehouse):
    warehouse.execute(PAPER_DDL)
    with pytest.raises(ViewDFError, match="cannot drop M: Helper, View2 depend on it; use DROP STREAM M CASCADE"):
        warehouse.drop("M", "stream")
    with pytest.raises(ViewDFError, match="'Helper' is a view, not a stream"):
        warehouse.drop("Helper", "stream")
    with pytest.raises(ValueError, match="kind must be 'stream', 'view' or 'table', not 'index'"):
        warehouse.drop("M", "index")
    assert warehouse.drop("nothing", if_exists=True).message == "No view named nothing; nothing dropped."
    assert warehouse.drop("M", "stream", cascade=True).message.startswith("Dropped View2, Helper, M.")
    assert warehouse.execute("SHOW STREAMS").empty and warehouse.execute("SHOW VIEWS").empty


def test_dimension_tables(warehouse, tmp_path):
    csv = tmp_path / "owners.csv"
    csv.write_text("owner,src\ncid,10.0.0.3\n")
    semicolons = tmp_path / "owners.txt"
    semicolons.write_text("src;owner\n10.0.0.4;dan\n")
    warehouse.execute(f"""
        {PAPER_DDL}
        CREATE TABLE owners (src STRING, owner STRING);
        INSERT INTO owners VALUES ('10.0.0.1', 'ann'), ('10.0.0.2', 'bob');
        INSERT INTO owners (owner) VALUES ('nobody');
        LOAD '{csv}' INTO owners;
        LOAD DATA '{semicolons}' INTO TABLE owners FORMAT csv OPTIONS (delimiter ';')""")
    assert rows(warehouse.execute("SELECT * FROM owners"), ["src", "owner"]) == \
        [(None, "nobody"), ("10.0.0.1", "ann"), ("10.0.0.2", "bob"), ("10.0.0.3", "cid"), ("10.0.0.4", "dan")]
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 5, 30]))
    warehouse.execute("""
        CREATE TABLE loss_by_owner AS
          SELECT o.owner, sum(m.loss) AS total, count(*) AS n FROM M AS m JOIN owners AS o ON m.src = o.src
          GROUP BY o.owner;
        INSERT INTO owners SELECT DISTINCT dest, 'eve' FROM M[LATEST]""")
    assert rows(warehouse.execute("SELECT * FROM loss_by_owner"), ["owner", "total", "n"]) == [("ann", 47, 3)]
    assert warehouse.execute("DESCRIBE loss_by_owner").to_dict("list") == \
        {"column": ["owner", "total", "n"], "type": ["string", "bigint", "bigint"]}
    assert rows(warehouse.execute("SELECT owner FROM owners WHERE src = '10.0.0.2'"), ["owner"]) == \
        [("bob",), ("eve",)]
    assert warehouse.execute("SHOW TABLES").set_index("name")["rows"].to_dict() == {"owners": 6, "loss_by_owner": 1}


def test_insert_and_load_into_streams(warehouse, tmp_path):
    csv = tmp_path / "batch.csv"
    csv.write_text("loss,dest,src,ts\n12,10.0.0.2,10.0.0.1,2015-01-01 10:01:30\n"
                   "13,10.0.0.2,10.0.0.1,2015-01-01 10:02:00\n")           # columns matched by name
    warehouse.execute(f"""
        {PAPER_DDL}
        CREATE STREAM Other (at TIMESTAMP, who STRING, lost INT) PARTITION LENGTH 60;
        INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:00:00', '10.0.0.1', '10.0.0.2', 11);
        LOAD '{csv}' INTO M;
        INSERT INTO Other VALUES (TIMESTAMP '2015-01-01 10:03:10', '10.0.0.1', 14);
        INSERT INTO STREAM M (loss, ts, src, dest) SELECT lost, at, who, '10.0.0.2' FROM Other[LATEST];
        INSERT INTO M (ts, src) VALUES ('2015-01-01 10:04:00', '10.0.0.1')""")
    found = warehouse.execute("SELECT ts, src, dest, loss, PART_TIMESTAMP FROM M ORDER BY ts")
    assert found.astype(object).where(found.notna(), None).values.tolist() == [
        [STAMP("2015-01-01 10:00"), "10.0.0.1", "10.0.0.2", 11, STAMP("2015-01-01 10:00")],
        [STAMP("2015-01-01 10:01:30"), "10.0.0.1", "10.0.0.2", 12, STAMP("2015-01-01 10:01")],
        [STAMP("2015-01-01 10:02"), "10.0.0.1", "10.0.0.2", 13, STAMP("2015-01-01 10:02")],
        [STAMP("2015-01-01 10:03:10"), "10.0.0.1", "10.0.0.2", 14, STAMP("2015-01-01 10:03")],
        [STAMP("2015-01-01 10:04"), "10.0.0.1", None, None, STAMP("2015-01-01 10:04")]]
    assert rows(warehouse.execute("SELECT * FROM View2"), ["ct", "sum_loss", "PART_TIMESTAMP"]) == \
        [(4, 50, STAMP("2015-01-01 10:03"))]


def test_load_of_pandas_nanosecond_parquet_says_how_to_write_it(warehouse, tmp_path):
    frame = pd.DataFrame({"ts": pd.to_datetime(["2015-01-01 10:00:30"]), "src": ["a"], "dest": ["b"], "loss": [12]})
    frame.to_parquet(tmp_path / "ns.parquet")                        # pandas' default: nanoseconds
    frame.to_parquet(tmp_path / "us.parquet", coerce_timestamps="us")  # what the hint says
    warehouse.execute("CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) PARTITION LENGTH 60")
    with pytest.raises(ViewDFError, match=r"nanosecond timestamps.*coerce_timestamps='us'"):
        warehouse.execute(f"LOAD '{tmp_path / 'ns.parquet'}' INTO M")
    warehouse.execute(f"LOAD '{tmp_path / 'us.parquet'}' INTO M")
    assert warehouse.execute("SELECT ts, src, dest, loss FROM M").values.tolist() == \
        [[STAMP("2015-01-01 10:00:30"), "a", "b", 12]]


ODD_NAMES = ["x; DROP", "../escape", "a/../../b", "sp ace", "`tick`"]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _beside(warehouse, folder) -> set[str]:
    """What ``folder`` (the warehouse's parent) holds besides the warehouse."""
    return set(os.listdir(folder)) - {os.path.basename(local_root(warehouse))}


def test_odd_names_stay_inside_the_warehouse(warehouse, tmp_path):
    outside_before = _beside(warehouse, tmp_path)
    stream = _quoted("../escape")
    warehouse.execute(f"CREATE STREAM {stream} (`event time` TIMESTAMP, `the value` INT) PARTITION LENGTH 60")
    warehouse.ingest("../escape", pd.DataFrame({"event time": pd.date_range("2015-01-01 10:00", periods=3, freq="min"),
                                                "the value": [1, 2, 3]}))
    for name in ODD_NAMES[:1] + ODD_NAMES[2:]:
        view = _quoted(name)
        warehouse.execute(f"""CREATE VIEW {view} AS
            INITIALIZE {view}[i] AS SELECT `the value` AS running FROM {stream}[i]
            UPDATE {view}[j] AS SELECT p.running + n.`the value` FROM {view}[j-1] AS p, {stream}[j] AS n""")
    names = list(warehouse.execute("SHOW VIEWS")["name"])
    assert names == [n for n in ODD_NAMES if n != "../escape"]
    for name in names:
        assert rows(warehouse.execute(f"SELECT * FROM {_quoted(name)}"), ["running", "PART_TIMESTAMP"]) == \
            [(1, STAMP("2015-01-01 10:00")), (3, STAMP("2015-01-01 10:01")), (6, STAMP("2015-01-01 10:02"))]
        assert len(warehouse.execute(f"SHOW PARTS {_quoted(name)}")) == 3
        assert warehouse.execute(f"DESCRIBE {_quoted(name)}")["column"].tolist() == ["running", "PART_TIMESTAMP"]
    assert rows(warehouse.execute(f"SELECT `the value` FROM {stream}[LATEST]"), ["the value"]) == [(3,)]

    root = local_root(warehouse)
    assert _beside(warehouse, tmp_path) == outside_before, "nothing was written beside the warehouse"
    assert set(os.listdir(root)) <= {"data", "_viewdf"}
    ids = os.listdir(os.path.join(root, "data"))
    assert all(re.fullmatch(r"[0-9a-f]{12}", i) for i in ids) and len(ids) == len(ODD_NAMES)

    warehouse.execute(f"DROP VIEW {_quoted('x; DROP')}; DROP STREAM {stream} CASCADE; VACUUM RETAIN 0 SECONDS")
    assert warehouse.execute("SHOW VIEWS").empty and warehouse.execute("SHOW STREAMS").empty
    assert os.listdir(os.path.join(root, "data")) == []
    assert _beside(warehouse, tmp_path) == outside_before


def test_names_are_case_insensitive(warehouse):
    warehouse.execute(PAPER_DDL)
    warehouse.execute("insert into m values (timestamp '2015-01-01 10:00:00', 'a', 'b', 12)")
    assert rows(warehouse.execute("select CT, Sum_Loss from HELPER[latest]"), ["CT", "Sum_Loss"]) == [(1, 12)]
    assert list(warehouse.execute("show parts HeLpEr")["part"]) == [M_1000]


def test_integer_columns_with_nulls_stay_integers(warehouse):
    rows = warehouse.execute("SELECT * FROM VALUES (1, CAST(2 AS BIGINT), CAST(0.5 AS DOUBLE)), (NULL, NULL, NULL) AS t(a, b, c)")
    assert [str(t) for t in rows.dtypes] == ["Int64", "Int64", "float64"]
    assert rows["a"].tolist()[0] == 1 and rows["a"].isna().tolist() == [False, True]


UNIQUE_DDL = ("CREATE STREAM N (ts TIMESTAMP, src STRING, dest STRING, loss INT) PARTITION LENGTH 60 "
              "UNIQUE (SRC, dest) PER PART")


def _frame(*events: tuple) -> pd.DataFrame:
    return pd.DataFrame([(STAMP(t), s, d, n) for t, s, d, n in events], columns=["ts", "src", "dest", "loss"])


def test_unique_per_part_is_checked_at_ingest(warehouse, make_warehouse):
    warehouse.execute(UNIQUE_DDL)
    assert warehouse.catalog.get("N").unique == ("src", "dest")
    warehouse.ingest("N", _frame(("2015-01-01 10:00", "a", "x", 1), ("2015-01-01 10:00:30", "a", "y", 2),
                                 ("2015-01-01 10:01", "a", "x", 3)))
    refused = [  # in one batch, NULL equal to NULL as in GROUP BY, and late rows against the stored part
        (_frame(("2015-01-01 10:02", "a", "x", 1), ("2015-01-01 10:02:59", "a", "x", 2)),
         "2 rows of part 2015-01-01 10:02:00 have (src, dest) = ('a', 'x')"),
        (_frame(("2015-01-01 10:02", "b", None, 1), ("2015-01-01 10:02:01", "b", None, 2)),
         "2 rows of part 2015-01-01 10:02:00 have (src, dest) = ('b', NULL)"),
        (_frame(("2015-01-01 10:00:10", "a", "y", 9)),
         "2 rows of part 2015-01-01 10:00:00 have (src, dest) = ('a', 'y')")]
    for batch, message in refused:
        with pytest.raises(ViewDFError) as caught:
            warehouse.ingest("N", batch)
        assert caught.value.message == f"{message}, but N is UNIQUE (src, dest) PER PART; nothing was written"
    assert warehouse.execute("SELECT count(*) AS n FROM N")["n"].tolist() == [3]
    warehouse.ingest("N", _frame(("2015-01-01 10:00:10", "a", "z", 9), ("2015-01-01 10:02", "b", None, 1)))
    assert warehouse.execute("SELECT count(*) AS n FROM N")["n"].tolist() == [5]
    assert make_warehouse().catalog.get("N").unique == ("src", "dest")      # reopened


@pytest.mark.parametrize("tail, message, column", [
    ("UNIQUE (b) PER PART", "UNIQUE names 'b', which is not a column of X", 67),
    ("UNIQUE (a, A) PER PART", "'A' is named twice in UNIQUE", 70),
    ("UNIQUE (a)", "expected PER PART after UNIQUE (...): uniqueness holds within each part at the end of the "
                   "statement", 69),
    ("UNIQUE a PER PART", "expected (, found 'a'", 66)])
def test_unique_per_part_errors(warehouse, tail, message, column):
    with pytest.raises(ViewDFError) as caught:
        warehouse.execute(f"CREATE STREAM X (ts TIMESTAMP, a INT) PARTITION LENGTH 60 {tail}")
    assert caught.value.message == message
    assert f"line 1, column {column}:" in str(caught.value)
    assert warehouse.catalog.get("X") is None


def test_a_batch_is_stored_with_the_counts_it_was_checked_with(warehouse, spark):
    """Ingest reads a batch once: the job that writes it counts it, and a batch spanning several parts is
    counted per part from what was written. So a batch that every evaluation would change (a UDF drawing
    random minutes, marked nondeterministic or not; now() behaves alike) is stored with exactly the
    row counts the catalog records."""
    import random

    from pyspark.sql import functions as F

    warehouse.execute("CREATE STREAM R (ts TIMESTAMP, n INT) PARTITION LENGTH 60")
    draw = lambda: random.randrange(6)      # noqa: E731
    flagged, unflagged = F.udf(draw, "int").asNondeterministic(), F.udf(draw, "int")
    drawn = lambda minute, first: spark.range(first, first + 300).select(  # noqa: E731
        F.timestamp_seconds(F.lit(M_1000 * 60) + minute() * 60).alias("ts"), F.col("id").cast("int").alias("n"))
    warehouse.ingest("R", drawn(flagged, 0))
    warehouse.ingest("R", drawn(unflagged, 300))
    stored = warehouse.execute("SELECT PART_TIMESTAMP AS part_timestamp, count(*) AS stored FROM R "
                               "GROUP BY PART_TIMESTAMP")
    counted = warehouse.parts("R")[["part_timestamp", "rows"]]
    both = counted.merge(stored, on="part_timestamp", how="outer").fillna(0)
    assert both["stored"].sum() == 600 and (both["rows"] == both["stored"]).all(), both
    assert warehouse.execute("SELECT count(DISTINCT n) AS n FROM R")["n"].tolist() == [600]


def test_every_statement_class_has_a_handler_and_only_inspection_reads_without_the_writer_lock():
    import inspect

    from viewdf_magic.handlers import HANDLERS
    from viewdf_magic.language import statements as st
    from viewdf_magic.language.parser import parse

    kinds = {c for _, c in inspect.getmembers(st, inspect.isclass)
             if issubclass(c, st.Statement) and c is not st.Statement}
    assert kinds == set(HANDLERS)
    assert {c.__name__ for c in kinds if c.read_only} == {
        "Query", "ShowStreams", "ShowViews", "ShowTables", "ShowPending", "ShowParts", "ShowLateness", "Describe",
        "ExplainView", "ExplainChange", "Verify"}
    shown = [type(s).__name__ for s in parse("SHOW STREAMS; SHOW VIEWS; SHOW TABLES; SHOW PENDING; "
                                             "SHOW PARTS OF M; SHOW PARTS M CHANGED SINCE '2024-01-01'; SHOW LATENESS; "
                                             "SHOW LATENESS FOR M")]
    assert shown == ["ShowStreams", "ShowViews", "ShowTables", "ShowPending", "ShowParts", "ShowParts", "ShowLateness",
                     "ShowLateness"]
