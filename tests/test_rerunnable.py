"""Cells that can be run again: CREATE ... IF NOT EXISTS and CREATE OR REPLACE VIEW [CASCADE]."""

from __future__ import annotations

import pytest

from viewdf_magic.errors import ViewDFError

STREAM = "CREATE STREAM M (ts TIMESTAMP, k STRING, x INT) PARTITION LENGTH 60"
ROWS = ("INSERT INTO M VALUES (TIMESTAMP '2020-01-01 00:00:10', 'a', 1), (TIMESTAMP '2020-01-01 00:00:20', 'b', 2), "
        "(TIMESTAMP '2020-01-01 00:01:00', 'a', 3), (TIMESTAMP '2020-01-01 00:02:00', 'a', 4)")
DOUBLE = ("CREATE VIEW Doubled AS INITIALIZE Doubled[i] AS SELECT k, 2 * x AS y FROM M[i] "
          "UPDATE Doubled[j] AS SELECT k, 2 * x AS y FROM M[j]")
TRIPLE = ("CREATE OR REPLACE VIEW Doubled{cascade} AS INITIALIZE Doubled[i] AS SELECT k, 3 * x AS y FROM M[i] "
          "UPDATE Doubled[j] AS SELECT k, 3 * x AS y FROM M[j]")
TOTAL = ("CREATE VIEW Total AS INITIALIZE Total[i] AS SELECT sum(y) AS s FROM Doubled[i] "
         "UPDATE Total[j] AS SELECT sum(y) AS s FROM Doubled[j] RECOMPUTE Total[k] AS SELECT sum(y) AS s FROM Doubled[k]")
WINDOW = "CREATE VIEW Recent AS SELECT k, sum(y) AS s FROM Doubled [WINDOW 2 MINUTES] GROUP BY k"
PATTERN = "CREATE VIEW Rising AS SELECT k, count(*) AS n FROM M PATTERN [a, b+] WHERE b[i].x > b[i-1].x GROUP BY k"


def messages(warehouse, text: str) -> list[str]:
    return [result.message for result in warehouse.run(text)]


def rows(warehouse, query: str) -> list[tuple]:
    return [tuple(row) for row in warehouse.execute(query).itertuples(index=False)]


def parts_metadata(warehouse) -> list[tuple]:
    """Every part's identity: object, subscript, folders and last update (a recomputation changes them)."""
    table = warehouse.parts()
    return sorted(zip(table["name"], table["part"], table["last_updated"]))


@pytest.fixture
def filled(warehouse):
    warehouse.run(f"{STREAM}; {ROWS}; {DOUBLE}")
    return warehouse


def test_if_not_exists_creates_once_and_then_changes_nothing(warehouse):
    cell = (f"{STREAM.replace('CREATE STREAM', 'CREATE STREAM IF NOT EXISTS')};\n"
            f"{DOUBLE.replace('CREATE VIEW', 'CREATE VIEW IF NOT EXISTS')};\n"
            f"{WINDOW.replace('CREATE VIEW', 'CREATE VIEW IF NOT EXISTS')};\n"
            f"{PATTERN.replace('CREATE VIEW', 'CREATE VIEW IF NOT EXISTS')}")
    first = messages(warehouse, cell)
    assert first[0].startswith("Created stream M") and all(m.startswith("Created view") for m in first[1:])
    warehouse.run(ROWS)
    before = parts_metadata(warehouse)
    # The same definitions, spaced, commented and cased differently: nothing happens.
    again = cell.replace(" AS ", "  as ").replace("FROM M[i]", "FROM M[i] -- each minute\n")
    assert messages(warehouse, again) == [
        "Stream M already exists with this definition; nothing changed.",
        "View Doubled already exists with this definition; nothing changed.",
        "View Recent already exists with this definition; nothing changed.",
        "View Rising already exists with this definition; nothing changed."]
    assert parts_metadata(warehouse) == before
    assert rows(warehouse, "SELECT k, s FROM Recent WHERE PART_TIMESTAMP = '2020-01-01 00:02:00' ORDER BY k") == \
        [("a", 14)]                                           # 2*3 + 2*4: minutes 1 and 2 of key a


@pytest.mark.parametrize("statement,message,caret", [
    ("CREATE STREAM IF NOT EXISTS M (ts TIMESTAMP, k STRING, x BIGINT) PARTITION LENGTH 60",
     "stream 'M' already exists with another definition; drop it first (DROP STREAM M)", "M ("),
    (DOUBLE.replace("CREATE VIEW", "CREATE VIEW IF NOT EXISTS").replace("2 * x", "4 * x"),
     "view 'Doubled' already exists with another definition; CREATE OR REPLACE VIEW redefines it", "Doubled AS"),
    ("CREATE VIEW IF NOT EXISTS M AS SELECT sum(x) AS s FROM M [WINDOW 2 MINUTES]", "'M' is a stream, not a view",
     "M AS"),
    ("CREATE TABLE IF NOT EXISTS Doubled (a INT)", "'Doubled' is a view, not a table", "Doubled ("),
    (DOUBLE, "'Doubled' already exists", "Doubled AS"),
])
def test_an_existing_name_with_another_definition_is_a_positioned_error(filled, statement, message, caret):
    before = parts_metadata(filled)
    with pytest.raises(ViewDFError) as failure:
        filled.run(statement)
    assert failure.value.message == message
    assert failure.value.position == statement.index(caret)
    assert parts_metadata(filled) == before


def test_or_replace_with_the_same_definition_recomputes_nothing(filled):
    before = parts_metadata(filled)
    same = DOUBLE.replace("CREATE VIEW", "create or replace view").replace("SELECT", "select")
    assert messages(filled, same) == ["View Doubled already exists with this definition; nothing changed."]
    assert parts_metadata(filled) == before


def test_or_replace_recomputes_a_changed_view(filled, make_warehouse):
    [message] = messages(filled, TRIPLE.format(cascade=""))
    assert message == "Replaced view Doubled (PARTITION LENGTH 60); computed 3 parts up to 2020-01-01 00:02:00."
    expected = [("a", 3), ("b", 6), ("a", 9), ("a", 12)]
    assert rows(filled, "SELECT k, y FROM Doubled ORDER BY PART_TIMESTAMP, k") == expected
    reopened = make_warehouse()                          # the replacement is durable
    assert rows(reopened, "SELECT k, y FROM Doubled ORDER BY PART_TIMESTAMP, k") == expected
    assert "3 * x" in reopened.catalog.get("Doubled").definition


def test_or_replace_refuses_while_other_views_read_it(filled):
    filled.run(f"{TOTAL}; {WINDOW}")
    before = parts_metadata(filled)
    statement = TRIPLE.format(cascade="")
    with pytest.raises(ViewDFError) as failure:
        filled.run(statement)
    assert failure.value.message == ("cannot replace Doubled: Total, Recent read it; "
                                     "CREATE OR REPLACE VIEW Doubled CASCADE AS ... recomputes them too")
    assert failure.value.position == statement.index("Doubled")
    assert parts_metadata(filled) == before
    assert rows(filled, "SELECT s FROM Total ORDER BY PART_TIMESTAMP") == [(6,), (6,), (8,)]


def test_or_replace_cascade_recomputes_the_readers(filled):
    filled.run(f"{TOTAL}; {WINDOW}")
    [message] = messages(filled, TRIPLE.format(cascade=" CASCADE"))
    assert message.startswith("Replaced view Doubled (PARTITION LENGTH 60); computed 3 parts")
    assert message.endswith("; recomputed Total, Recent (CASCADE).")
    assert rows(filled, "SELECT s FROM Total ORDER BY PART_TIMESTAMP") == [(9,), (9,), (12,)]    # 3+6, 9, 12
    assert rows(filled, "SELECT k, s FROM Recent WHERE PART_TIMESTAMP = '2020-01-01 00:02:00' ORDER BY k") == \
        [("a", 21)]                                                                               # 9 + 12
    [verified] = filled.run("VERIFY VIEW Total")
    assert verified.table["equal"].all() and len(verified.table) == 3
    assert [d.name for d in filled.catalog.views()] == ["Doubled", "Total", "Recent__pre", "Recent__sum", "Recent"]


def test_or_replace_cascade_that_would_break_a_reader_changes_nothing(filled):
    filled.run(TOTAL)
    before = parts_metadata(filled)
    statement = ("CREATE OR REPLACE VIEW Doubled CASCADE AS INITIALIZE Doubled[i] AS SELECT k, x AS z FROM M[i] "
                 "UPDATE Doubled[j] AS SELECT k, x AS z FROM M[j]")
    with pytest.raises(ViewDFError) as failure:
        filled.run(statement)
    assert failure.value.message.startswith("Total, which reads Doubled, cannot be defined over the new Doubled: ")
    assert failure.value.message.endswith("; nothing was replaced")
    assert parts_metadata(filled) == before
    assert "2 * x" in filled.catalog.get("Doubled").definition
    assert rows(filled, "SELECT s FROM Total ORDER BY PART_TIMESTAMP") == [(6,), (6,), (8,)]


@pytest.mark.parametrize("statement,message", [
    ("CREATE OR REPLACE STREAM M (ts TIMESTAMP) PARTITION LENGTH 60",
     "OR REPLACE is for views: replacing a stream would lose its data; drop it first (DROP STREAM), "
     "or use IF NOT EXISTS"),
    ("CREATE OR REPLACE VIEW IF NOT EXISTS V AS SELECT 1", "use either OR REPLACE or IF NOT EXISTS, not both"),
    ("CREATE OR REPLACE VIEW Recent__pre AS SELECT k, sum(x) AS s FROM M [WINDOW 2 MINUTES] GROUP BY k",
     "'Recent__pre' is a helper view of Recent"),
])
def test_or_replace_misuse_is_refused(filled, statement, message):
    filled.run(WINDOW)
    with pytest.raises(ViewDFError) as failure:
        filled.run(statement)
    assert failure.value.message == message
