"""Every user error: a ViewDFError with a clear message, positioned (line, column, caret) in the user's
own text, and nothing written (same catalog version, no new folder under data/)."""

import pandas as pd
import pytest

from oracles import loss_rows, nothing_written, rows
from test_paper_example import PAPER_DDL
from viewdf_magic import ViewDFError, Warehouse


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory):
    """The paper's M, Helper and View2 with minutes 10:00 .. 10:02, shared by the cases: every error
    leaves it as it was (two cases add a stream of their own)."""
    warehouse = Warehouse(str(tmp_path_factory.mktemp("errors") / "wh"), spark=spark, progress=False)
    warehouse.execute(PAPER_DDL)
    warehouse.execute("CREATE TABLE owners (src STRING, owner STRING)")
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 13, 14]))
    return warehouse


def _position(text: str, needle: str, occurrence: int) -> tuple[int, int]:
    at = -1
    for _ in range(occurrence):
        at = text.index(needle, at + 1)
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


def fails(warehouse, text: str, needle: str | tuple[str, int], *phrases: str) -> ViewDFError:
    """Run ``text``; it must raise a ViewDFError whose message has every phrase, positioned at ``needle``
    (or at the n-th needle when given as ``(needle, n)``), with a caret under it, writing nothing."""
    with nothing_written(warehouse):
        with pytest.raises(ViewDFError) as caught:
            warehouse.execute(text)
    error = caught.value
    for phrase in phrases:
        assert phrase in error.message, error.message
    needle, occurrence = needle if isinstance(needle, tuple) else (needle, 1)
    line, column = _position(text, needle, occurrence)
    assert (error.line, error.column) == (line, column), str(error)
    *_, source_line, caret = str(error).splitlines()
    assert source_line == "    " + text.splitlines()[line - 1]
    assert caret.index("^") == 4 + column - 1
    return error


def ingest_fails(warehouse, stream: str, frame: pd.DataFrame, *phrases: str) -> ViewDFError:
    """``Warehouse.ingest`` must raise a ViewDFError (no text, so no position) and write nothing."""
    with nothing_written(warehouse):
        with pytest.raises(ViewDFError) as caught:
            warehouse.ingest(stream, frame)
    for phrase in phrases:
        assert phrase in caught.value.message, caught.value.message
    assert (caught.value.line, caught.value.column) == (None, None)
    return caught.value


# -- parsing -------------------------------------------------------------------------------------
PARSE_ERRORS = {
    "bad statement keyword": ("SELEKT * FROM M", "SELEKT", ["expected a statement", "'SELEKT'"]),
    "bad keyword in a later statement": ("SELECT 1;\n  FOO bar", "FOO", ["expected a statement", "'FOO'"]),
    "bad SQL in a query": ("SELECT src\nFROM M\nWHERE loss > > 3", "> 3", []),
    "bad SQL in an UPDATE": ("CREATE VIEW V AS\nINITIALIZE V[i] AS SELECT src FROM M[i]\nUPDATE V[j] AS\n"
                             "  SELECT src FROM M[j] WHERE loss >> 3 GROUP", "GROUP", ["GROUP"]),
    "unterminated string": ("SELECT src\nFROM M WHERE src = '10.0.0.1", "'10.0", ["unterminated string"]),
    "unterminated quoted name": ("SELECT `src FROM M", "`src", ["unterminated"]),
    "view without UPDATE": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src FROM M[i]", "V AS",
                            ["needs an UPDATE clause"]),
    "clause for another view": ("CREATE VIEW V AS INITIALIZE W[i] AS SELECT src FROM M[i] UPDATE V[j] AS "
                                "SELECT src FROM M[j]", "W[i]", ["must define parts of V"]),
    "stream without a length": ("CREATE STREAM R (ts TIMESTAMP, v INT)", "R (", ["PARTITION LENGTH"]),
    "bad partition subscript": ("SELECT * FROM M[LATEST +* 2]", "* 2", ["bad partition subscript"]),
    "two ranges": ("SELECT * FROM M[1 .. 2 .. 3]", ".. 3", ["one '..'"]),
    # a misspelt unit is named and the unit it is closest to suggested, wherever a duration is written
    "misspelt length unit": ("CREATE STREAM R (ts TIMESTAMP, v INT) PARTITION LENGTH 1 MINUTS", "MINUTS",
                             ["after PARTITION LENGTH, found 'MINUTS'; did you mean MINUTES?"]),
    "misspelt lateness unit": ("CREATE STREAM R (ts TIMESTAMP, v INT) PARTITION LENGTH 60 ALLOWED LATENESS 2 PRATS",
                               "PRATS", ["expected PARTS or a time unit", "found 'PRATS'; did you mean PARTS?"]),
    "misspelt retain unit": ("CREATE STREAM R (ts TIMESTAMP, v INT) PARTITION LENGTH 60 RETAIN 3 SECNDS", "SECNDS",
                             ["after RETAIN, found 'SECNDS'; did you mean SECONDS?"]),
    "misspelt vacuum unit": ("VACUUM RETAIN 2 DAYSS", "DAYSS", ["after VACUUM RETAIN, found 'DAYSS'; did you mean DAYS?"]),
    "DELETE without FROM": ("DELETE M WHERE loss > 3", "M WHERE", ["expected FROM, found 'M'"]),
    "UPDATE without a value": ("UPDATE M SET loss = , src = 'a'", ", src", ["expected a value for loss"]),
    "UPDATE setting a column twice": ("UPDATE M SET loss = 1, LOSS = 2", "LOSS", ["column LOSS is set twice"]),
    "WHERE without a condition": ("DELETE FROM M WHERE", "WHERE", ["expected a condition after WHERE"]),
    "EXPLAIN of something else": ("EXPLAIN STREAM M", "STREAM", ["expected VIEW, DELETE or UPDATE after EXPLAIN"]),
    "ON LATE without what to do": ("ALTER STREAM M SET ALLOWED LATENESS 2 PARTS ON LATE DROP", "DROP",
                                   ["expected REJECT or DIVERT INTO <table> after ON LATE, found 'DROP'"]),
}


@pytest.mark.parametrize("text,needle,phrases", PARSE_ERRORS.values(), ids=PARSE_ERRORS.keys())
def test_parse_errors(loaded, text, needle, phrases):
    fails(loaded, text, needle, *phrases)


def test_a_cell_with_a_parse_error_runs_none_of_its_statements(loaded):
    fails(loaded, "CREATE STREAM Q (ts TIMESTAMP) PARTITION LENGTH 60;\nSHOW PARTZ Q", "PARTZ", "expected")
    assert loaded.catalog.get("Q") is None


# -- names and references ------------------------------------------------------------------------
REFERENCE_ERRORS = {
    "unknown stream in an ad hoc reference": ("SELECT *\nFROM Nope[LATEST]", "Nope", ["unknown stream or view 'Nope'"]),
    "unknown stream in a view": ("CREATE VIEW V AS\nINITIALIZE V[i] AS SELECT src FROM Nope[i]\n"
                                 "UPDATE V[j] AS SELECT src FROM M[j]", "Nope", ["unknown stream or view 'Nope'"]),
    "unknown table in a view": ("CREATE VIEW V AS\nINITIALIZE V[i] AS SELECT src FROM M[i] JOIN nosuch USING (src)\n"
                                "UPDATE V[j] AS SELECT src FROM M[j]", "nosuch", ["unknown", "'nosuch'"]),
    "unknown table in an ad hoc query": ("SELECT *\n  FROM nosuch", "nosuch", ["nosuch", "cannot be found"]),
    "table with a subscript": ("SELECT * FROM owners[LATEST]", "owners", ["unpartitioned table"]),
    "variable in an ad hoc query": ("SELECT * FROM M[j]", "j", ["unknown name 'j'"]),
    "unknown variable in a view": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src FROM M[i]\n"
                                   "UPDATE V[j] AS SELECT src FROM M[k]", "k]", ["unknown name 'k'"]),
    "unknown part": ("SELECT * FROM M[23660000]", "M[", ["M has no part 23660000"]),
    "part after the newest": ("SELECT *\n FROM Helper[LATEST + 1]", "Helper[", ["Helper has no part 23668443"]),
    "show parts of nothing": ("SHOW PARTS nosuch", "nosuch", ["no stream or view named 'nosuch'"]),
    "describe nothing": ("DESCRIBE nosuch", "nosuch", ["'nosuch'"]),
    "insert into a view": ("INSERT INTO Helper VALUES ('a', 'b', 1, 1)", "Helper", ["'Helper' is a view"]),
    "verify a stream": ("VERIFY M", "M", ["'M' is a stream"]),
    "seal a view": ("SEAL Helper THROUGH '2015-01-01 11:00'", "Helper", ["'Helper' is a view"]),
    "seal with a bad timestamp": ("SEAL M THROUGH 'soon'", "'soon'", ["not a timestamp"]),
}


@pytest.mark.parametrize("text,needle,phrases", REFERENCE_ERRORS.values(), ids=REFERENCE_ERRORS.keys())
def test_reference_errors(loaded, text, needle, phrases):
    fails(loaded, text, needle, *phrases)


def test_latest_of_an_object_without_parts(loaded):
    loaded.execute("CREATE STREAM Empty (ts TIMESTAMP, v INT) PARTITION LENGTH 60")
    fails(loaded, "SELECT v\n  FROM Empty[LATEST]", "Empty[", "Empty has no parts")


# -- Spark's analysis errors, mapped back to the user's text -------------------------------------
COLUMN_ERRORS = {
    "ad hoc, second line": ("SELECT src,\n       lossy\nFROM M[LATEST]", "lossy"),
    "after rewritten references on the same line": (
        "SELECT a.src\nFROM M[LATEST] AS a JOIN M[LATEST-1] AS b ON a.src = b.srcx", "b.srcx"),
    "in a later statement of the cell": ("SELECT 1;\nSELECT lossy FROM M", "lossy"),
    "in an UPDATE": ("CREATE VIEW V AS\nINITIALIZE V[i] AS SELECT src FROM M[i]\nUPDATE V[j] AS\n"
                     "  SELECT p.src FROM M[j] AS n JOIN V[j-1] AS p ON n.src = p.src\n  WHERE n.lossy > 1", "n.lossy"),
    "in an INITIALIZE after a subscript": (
        "CREATE VIEW V AS\n  INITIALIZE V[i] AS SELECT M.src FROM M[i*60 .. i*60+59] AS M WHERE M.srcc = 'a'\n"
        "  UPDATE V[j] AS SELECT src FROM M[j*60 .. j*60+59]\n  PARTITION LENGTH 3600", "M.srcc"),
}


@pytest.mark.parametrize("text,needle", COLUMN_ERRORS.values(), ids=COLUMN_ERRORS.keys())
def test_unknown_column_points_at_the_column(loaded, text, needle):
    fails(loaded, text, needle, "cannot be resolved", needle.split(".")[-1])


# -- view definitions ----------------------------------------------------------------------------
VIEW_ERRORS = {
    "length not a multiple": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT * FROM M[i]\n"
                              "UPDATE V[j] AS SELECT * FROM M[j] PARTITION LENGTH 90", "90",
                              ["PARTITION LENGTH 90 is not a multiple of M's partition length 60"]),
    "future part": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT * FROM M[i]\nUPDATE V[j] AS SELECT * FROM M[j+1]",
                    "M[j+1]", ["future part", "M[j+1]"]),
    "future part in a rollup": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT * FROM M[i*60 .. i*60+60]\n"
                                "UPDATE V[j] AS SELECT * FROM M[j*60 .. j*60+59] PARTITION LENGTH 3600",
                                "M[i*60", ["future part"]),
    "cycle": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src FROM M[i]\nUPDATE V[j] AS SELECT src FROM V[j]",
              ("V[j]", 2), ["dependency cycle", "V[j]"]),
    "INITIALIZE reads its own view": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src FROM V[i-1]\n"
                                      "UPDATE V[j] AS SELECT src FROM M[j]", "V[i-1]", ["INITIALIZE cannot read"]),
    "UPDATE column count": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src, dest FROM M[i]\n"
                            "UPDATE V[j] AS SELECT src FROM M[j]", "SELECT src FROM", ["UPDATE returns 1 columns"]),
    "UPDATE column types": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src FROM M[i]\n"
                            "UPDATE V[j] AS SELECT array(src) AS src FROM M[j]", "SELECT array",
                            ["UPDATE column types do not match INITIALIZE's", "ARRAY<STRING>"]),
    # UPDATE is INITIALIZE's query, so only RECOMPUTE is analysed after it
    "RECOMPUTE column types": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src FROM M[i]\n"
                               "UPDATE V[j] AS SELECT src FROM M[j]\nRECOMPUTE V[j] AS SELECT array(src) FROM M[j]",
                               "SELECT array", ["RECOMPUTE column types do not match INITIALIZE's", "ARRAY<STRING>"]),
    "view without a stream": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT * FROM owners\n"
                              "UPDATE V[j] AS SELECT * FROM owners", "V AS", ["at least one stream"]),
}


@pytest.mark.parametrize("text,needle,phrases", VIEW_ERRORS.values(), ids=VIEW_ERRORS.keys())
def test_view_definition_errors(loaded, text, needle, phrases):
    fails(loaded, text, needle, *phrases)


def test_a_views_columns_take_the_wider_type_of_initialize_and_update(warehouse):
    """UPDATE widens INITIALIZE's column types; RECOMPUTE is only checked against them."""
    warehouse.execute(PAPER_DDL.split(";")[0] + """;
        CREATE VIEW Wide AS INITIALIZE Wide[i] AS SELECT src, 1 AS n FROM M[i]
        UPDATE Wide[j] AS SELECT src, CAST(2 AS BIGINT) AS n FROM M[j];
        CREATE VIEW Same AS INITIALIZE Same[i] AS SELECT src, 1 AS n FROM M[i]
        UPDATE Same[j] AS SELECT src, 1 AS n FROM M[j]
        RECOMPUTE Same[j] AS SELECT src, CAST(1 AS DOUBLE) AS n FROM M[j]""")
    assert warehouse.catalog.get("Wide").schema.simpleString() == "struct<src:string,n:bigint>"
    assert warehouse.catalog.get("Same").schema.simpleString() == "struct<src:string,n:int>"


def test_view_failing_at_run_time_is_not_created(warehouse):
    warehouse.execute(PAPER_DDL.split(";")[0])
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12]))
    text = "CREATE VIEW Broken AS\nINITIALIZE Broken[i] AS SELECT src, loss / 0 AS x FROM M[i]\n" \
           "UPDATE Broken[j] AS SELECT src, loss / 0 FROM M[j]"
    fails(warehouse, text, "loss / 0", "Division by zero")
    assert warehouse.catalog.get("Broken") is None


def test_a_failing_view_does_not_stop_the_others(warehouse):
    warehouse.execute(PAPER_DDL.split(";")[0] + """;
        CREATE VIEW Ratio AS INITIALIZE Ratio[i] AS SELECT src, 10 / loss AS r FROM M[i]
        UPDATE Ratio[j] AS SELECT src, 10 / loss AS r FROM M[j];
        CREATE VIEW Copy AS INITIALIZE Copy[i] AS SELECT src, loss FROM M[i]
        UPDATE Copy[j] AS SELECT src, loss FROM M[j]""")
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [1, 2]))
    for batch in (loss_rows("2015-01-01 10:02", [0]), loss_rows("2015-01-01 10:03", [5])):
        try:
            warehouse.ingest("M", batch)
        except ViewDFError as error:        # reporting Ratio's failure is fine; stopping Copy is not
            assert "Ratio[23668442]" in error.message and "Division by zero" in error.message
    assert list(warehouse.parts("Ratio")["part"]) == [23668440, 23668441]
    assert rows(warehouse.execute("SELECT * FROM Copy"), ["loss"]) == [(0,), (1,), (2,), (5,)]



def test_maintenance_failures_are_reported_once_per_path(warehouse):
    from viewdf_magic import MaintenanceWarning

    warehouse.execute(PAPER_DDL.split(";")[0] + """;
        CREATE VIEW Ratio AS INITIALIZE Ratio[i] AS SELECT src, 10 / loss AS r FROM M[i]
        UPDATE Ratio[j] AS SELECT src, 10 / loss AS r FROM M[j]""")
    with pytest.warns(MaintenanceWarning, match=r"maintaining Ratio failed: computing Ratio\[23668440\]"):
        report = warehouse.ingest("M", loss_rows("2015-01-01 10:00", [0]))
    assert report.parts == [23668440] and report.failures and "Division by zero" in report.failures[0]
    [result] = warehouse.run("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:01:00', 'a', 'b', 5)")
    assert "Warning: maintaining Ratio failed" in result.message
    assert "Ratio and the views that read it are behind" in result.message
    assert warehouse.parts("Ratio").empty

NAME_ERRORS = {
    "stream exists (any case)": ("CREATE STREAM m (ts TIMESTAMP) PARTITION LENGTH 60", "m (", ["'m' already exists"]),
    "view exists": ("CREATE VIEW helper AS INITIALIZE helper[i] AS SELECT src FROM M[i]\n"
                    "UPDATE helper[j] AS SELECT src FROM M[j]", "helper", ["'helper' already exists"]),
    "table named like a view": ("CREATE TABLE View2 (a INT)", "View2", ["'View2' already exists"]),
    "the catalog view's name": ("CREATE TABLE viewdf_parts (a INT)", "viewdf_parts", ["already exists"]),
    "drop stream with dependents": ("DROP STREAM M", ("M", 2), ["cannot drop M", "Helper", "View2", "CASCADE"]),
    "drop view with dependents": ("DROP VIEW Helper", "Helper", ["cannot drop Helper", "View2", "CASCADE"]),
    "drop the wrong kind": ("DROP TABLE Helper", "Helper", ["'Helper' is a view"]),
    "drop nothing": ("DROP VIEW nosuch", "nosuch", ["no view named 'nosuch'"]),
    "reserved column": ("CREATE STREAM R (ts TIMESTAMP, PART_TIMESTAMP INT) PARTITION LENGTH 60", "ts TIMESTAMP",
                        ["PART_TIMESTAMP is reserved"]),
    "no timestamp column": ("CREATE STREAM R (a INT) PARTITION LENGTH 60", "R (", ["TIMESTAMP"]),
    "timestamp column of the wrong type": ("CREATE STREAM R (a INT, ts TIMESTAMP) TIMESTAMP a PARTITION LENGTH 60",
                                           "a PARTITION", ["'a' is not a TIMESTAMP column"]),
}


@pytest.mark.parametrize("text,needle,phrases", NAME_ERRORS.values(), ids=NAME_ERRORS.keys())
def test_name_errors(loaded, text, needle, phrases):
    fails(loaded, text, needle, *phrases)


# -- writing rows --------------------------------------------------------------------------------
INSERT_ERRORS = {
    "too few values": ("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:05:00', 'a', 'b')", "VALUES",
                       ["3 values per row but 4 columns"]),
    "too many values for named columns": ("INSERT INTO M (ts, loss) VALUES (TIMESTAMP '2015-01-01 10:05:00', 1, 2)",
                                          "VALUES", ["3 values per row but 2 columns"]),
    "unknown column": ("INSERT INTO M (ts, lost) VALUES (TIMESTAMP '2015-01-01 10:05:00', 1)", "VALUES",
                       ["no column lost"]),
    "NULL timestamp": ("INSERT INTO M VALUES\n  (TIMESTAMP '2015-01-01 10:05:00', 'a', 'b', 1),\n  (NULL, 'a', 'b', 1)",
                       "VALUES", ["1 row has a NULL timestamp", "nothing was written"]),
    "too many parts": ("INSERT INTO M VALUES (TIMESTAMP '2016-01-01 10:00:00', 'a', 'b', 1)", "VALUES",
                       ["would create 525,598 parts", "100,000"]),
    "into a table, too few values": ("INSERT INTO owners VALUES ('a')", "VALUES", ["1 values per row but 2 columns"]),
}


@pytest.mark.parametrize("text,needle,phrases", INSERT_ERRORS.values(), ids=INSERT_ERRORS.keys())
def test_insert_errors(loaded, text, needle, phrases):
    fails(loaded, text, needle, *phrases)


CAST_FAILURE = ("The value 'lots' of the type \"STRING\" cannot be cast to \"INT\" because it is malformed. Correct "
                "the value as per the syntax, or change its target type. Use `try_cast` to tolerate malformed input "
                "and return NULL instead")


@pytest.mark.parametrize("text", [
    "INSERT INTO M VALUES\n  (TIMESTAMP '2015-01-01 10:05:00', 'a', 'b', 'lots')",
    "INSERT INTO M (loss, ts) VALUES ('7', TIMESTAMP '2015-01-01 10:05:00'),\n  ('lots', TIMESTAMP '2015-01-01 10:06:00')",
])
def test_insert_value_that_cannot_be_cast_is_pointed_at(loaded, text):
    error = fails(loaded, text, "'lots'")
    assert error.message == f"cannot store the batch for M: {CAST_FAILURE}; nothing was written"
    assert str(error).splitlines()[-1].strip() == "^^^^^^"


LOAD_ERRORS = {
    "missing column in the header": ("missing.csv", "ts,src,dest\n2015-01-01 10:05:00,a,b\n",
                                     ["missing column loss"]),
    "wrong type in a row": ("malformed.csv", "ts,src,dest,loss\n2015-01-01 10:05:00,a,b,12\n"
                                             "2015-01-01 10:05:10,a,c,many\n", ["'many'", "INT"]),
    "no such file": ("absent.csv", None, ["cannot read"]),
    "unknown format": ("rows.txt", "ts,src,dest,loss\n", ["FORMAT csv, parquet or json"]),
}


@pytest.mark.parametrize("name,content,phrases", LOAD_ERRORS.values(), ids=LOAD_ERRORS.keys())
def test_load_errors(loaded, tmp_path, name, content, phrases):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    fails(loaded, f"LOAD '{path}'\n  INTO M", f"'{path}'", *phrases)


MALFORMED = "the file has malformed rows (a field missing or one too many, or a value that cannot be parsed)"
BAD_ROWS = {
    "value its column's type rejects": ("ts,src,dest,loss\n2015-01-01 10:05:00,a,b,12\n\n2015-01-01 10:05:10,a,c,lots\n"
                                        "2015-01-01 10:05:20,a,c,many\n", 4, CAST_FAILURE),
    "a field too many": ("ts,src,dest,loss\n2015-01-01 10:05:00,a,b,12\n2015-01-01 10:05:10,a,c,1,2\n", 3, MALFORMED),
    "no header": ("2015-01-01 10:05:00,a,b,12\n2015-01-01 10:05:10,a,c,lots\n", 2, CAST_FAILURE),
}


@pytest.mark.parametrize("content,line,reason", BAD_ROWS.values(), ids=BAD_ROWS.keys())
def test_load_names_the_file_and_line_of_a_bad_row(loaded, tmp_path, content, line, reason):
    path = tmp_path / "bad rows.csv"
    path.write_text(content)
    options = "" if content.startswith("ts,") else " OPTIONS (header 'false')"
    error = fails(loaded, f"LOAD '{path}'\n  INTO M{options}", f"'{path}'")
    assert error.message == f"line {line} of '{path}': cannot store the batch for M: {reason}; nothing was written"


MINUTE_1005 = pd.Timestamp("2015-01-01 10:05")
INGEST_ERRORS = {
    "NULL timestamp": ("M", pd.DataFrame({"ts": [MINUTE_1005, pd.NaT], "src": "a", "dest": "b", "loss": [1, 2]}),
                       ["1 row has a NULL timestamp"]),
    "missing column": ("M", pd.DataFrame({"ts": [MINUTE_1005], "src": "a", "loss": [1]}), ["missing column dest"]),
    "extra column": ("M", pd.DataFrame({"ts": [MINUTE_1005], "src": "a", "dest": "b", "loss": [1], "extra": [0]}),
                     ["unexpected column extra"]),
    "value that cannot be cast": ("M", pd.DataFrame({"ts": [MINUTE_1005], "src": "a", "dest": "b", "loss": ["many"]}),
                                  ["'many'"]),
    # Epoch seconds read as nanoseconds land in 1970, long before M's parts.
    "timestamps in the wrong unit": ("M", pd.DataFrame({"ts": pd.to_datetime([1420106700], unit="ns"), "src": "a",
                                                        "dest": "b", "loss": [1]}),
                                     ["would create", "Are the timestamps in the right unit", "Nothing was written"]),
    "too many parts": ("M", pd.DataFrame({"ts": [MINUTE_1005, pd.Timestamp("2015-04-01")], "src": "a", "dest": "b",
                                          "loss": [1, 2]}), ["would create 128,998 parts", "limit is 100,000"]),
    "into a view": ("Helper", loss_rows("2015-01-01 10:05", [1]), ["'Helper' is a view"]),
    "into nothing": ("nosuch", loss_rows("2015-01-01 10:05", [1]), ["no stream named 'nosuch'"]),
}


@pytest.mark.parametrize("stream,frame,phrases", INGEST_ERRORS.values(), ids=INGEST_ERRORS.keys())
def test_ingest_errors(loaded, stream, frame, phrases):
    ingest_fails(loaded, stream, frame, *phrases)


def test_recompute_needs_a_recompute_clause(loaded):
    with nothing_written(loaded), pytest.raises(ViewDFError, match="no RECOMPUTE clause"):
        loaded.recompute("Helper", "2015-01-01 10:01")


def test_too_many_parts_in_a_first_batch(loaded):
    loaded.execute("CREATE STREAM Fresh (ts TIMESTAMP, v INT) PARTITION LENGTH 1")
    frame = pd.DataFrame({"ts": [pd.Timestamp("2015-01-01"), pd.Timestamp("2015-01-03")], "v": [1, 2]})
    ingest_fails(loaded, "Fresh", frame, "would create 172,801 parts")
    assert loaded.parts("Fresh").empty
