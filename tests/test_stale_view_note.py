"""A query over views that are not up to date says so (issue 35): one line under its rows in the notebook, a
MaintenanceWarning from ``Warehouse.execute``, and SHOW VIEWS' ``state`` column."""

from __future__ import annotations

import warnings

import pytest
from IPython.utils.capture import capture_output
from shells import magic_shell

from viewdf_magic import MaintenanceWarning

DDL = """CREATE STREAM M (ts TIMESTAMP, src STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60;
CREATE VIEW Ratio AS INITIALIZE Ratio[i] AS SELECT src, 10 / loss AS r FROM M[i]
  UPDATE Ratio[j] AS SELECT src, 10 / loss AS r FROM M[j];
CREATE VIEW RatioCopy AS INITIALIZE RatioCopy[i] AS SELECT src, r FROM Ratio[i]
  UPDATE RatioCopy[j] AS SELECT src, r FROM Ratio[j];
CREATE VIEW Copy AS INITIALIZE Copy[i] AS SELECT src, loss FROM M[i]
  UPDATE Copy[j] AS SELECT src, loss FROM M[j]"""
FAILED = "failed at 2015-01-01 10:01:00: Division by zero"
MINUTE_0 = 1_420_106_400 // 60        # the part of 2015-01-01 10:00
TAIL = "not up to date; the result has only the parts computed so far."


def insert(minute: int, loss: int) -> str:
    return f"INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:0{minute}:00', 'a', {loss})"


def states(warehouse) -> dict[str, str]:
    views = warehouse.execute("SHOW VIEWS")
    return dict(zip(views["name"], views["state"]))


def note(warehouse, query: str) -> str | None:
    [result] = warehouse.run(query)
    return result.note


def quiet(warehouse, query: str):
    """The rows of ``query``, which must not warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", MaintenanceWarning)
        return warehouse.execute(query)


def test_a_query_over_a_failed_view_says_so_and_warns(make_warehouse):
    warehouse = make_warehouse()
    warehouse.execute(f"{DDL}; {insert(0, 5)}")
    [inserted] = warehouse.run(insert(1, 0))
    assert "maintaining Ratio failed" in inserted.message
    assert states(warehouse) == {"Ratio": FAILED, "RatioCopy": "waiting for Ratio", "Copy": "up to date"}

    with pytest.warns(MaintenanceWarning) as caught:
        rows = warehouse.execute("SELECT src, r FROM RatioCopy")
    assert [str(w.message) for w in caught] == [f"Note: RatioCopy (waiting for Ratio) is {TAIL}"]
    assert rows["r"].tolist() == [2]
    assert note(warehouse, "SELECT * FROM Ratio r JOIN RatioCopy c USING (src) JOIN Copy USING (src)") == \
        f"Note: Ratio ({FAILED}) and RatioCopy (waiting for Ratio) are {TAIL}"
    assert quiet(warehouse, "SELECT loss FROM Copy")["loss"].tolist() == [5, 0]
    assert note(warehouse, "SELECT * FROM M") is None

    # failures are known to the session that maintained; reopening in auto mode retries, and fails again
    assert states(make_warehouse()) == states(warehouse)


def test_a_view_under_manual_maintenance_says_how_many_parts_behind(warehouse):
    warehouse.execute(f"{DDL}; {insert(0, 5)}; SET MAINTENANCE MANUAL; {insert(1, 1)}; {insert(2, 2)}; "
                      f"{insert(3, 5)}")
    assert states(warehouse) == {"Ratio": "3 parts behind", "RatioCopy": "waiting for Ratio",
                                 "Copy": "3 parts behind"}
    assert note(warehouse, "SELECT * FROM Copy") == f"Note: Copy (3 parts behind) is {TAIL}"
    # its part of 10:00 is computed: reading just it is complete; its newest part is not its last
    assert quiet(warehouse, f"SELECT loss FROM Copy[{MINUTE_0}]")["loss"].tolist() == [5]
    assert note(warehouse, f"SELECT * FROM Copy[{MINUTE_0} - 5 .. {MINUTE_0}]") is None
    assert note(warehouse, "SELECT * FROM Copy[LATEST]") == f"Note: Copy (3 parts behind) is {TAIL}"
    assert note(warehouse, "SELECT name, rows FROM viewdf_parts WHERE name = 'M'") is None   # the catalog

    warehouse.execute("STEP Ratio")
    assert states(warehouse) == {"Ratio": "2 parts behind", "RatioCopy": "1 part behind, waiting for Ratio",
                                 "Copy": "3 parts behind"}
    with pytest.warns(MaintenanceWarning, match=r"^Note: RatioCopy \(1 part behind, waiting for Ratio\) is not"):
        warehouse.execute("SELECT * FROM RatioCopy")

    warehouse.execute("SET MAINTENANCE AUTO")
    assert set(states(warehouse).values()) == {"up to date"}
    assert quiet(warehouse, "SELECT r FROM RatioCopy ORDER BY PART_TIMESTAMP")["r"].tolist() == [2, 10, 5, 2]
    assert note(warehouse, "SELECT * FROM RatioCopy") is None


def test_the_magic_shows_the_note_under_the_rows(spark, tmp_path):
    shell = magic_shell(spark)
    with capture_output():
        assert shell.run_cell(f"%%viewdf --warehouse {tmp_path / 'wh'}\n{DDL}; {insert(0, 5)};\n"
                              f"SET MAINTENANCE MANUAL; {insert(1, 1)}; {insert(2, 2)}").success
    line = f"Note: Copy (2 parts behind) is {TAIL}"

    with capture_output():
        outcome = shell.run_cell("%viewdf SELECT src, loss FROM Copy")
    formats, _ = shell.display_formatter.format(outcome.result)
    assert formats["text/plain"].splitlines()[-2:] == ["(1 row)", line]
    assert f"<div><em>(1 row)</em></div>\n<div class='viewdf-note' style='color: #b45309'>{line}</div>" in \
        formats["text/html"]

    with capture_output() as captured:      # rows stored, not shown: the note is printed alone
        assert shell.run_cell("%%viewdf copied <<\nSELECT src, loss FROM Copy").success
    assert captured.stderr.splitlines() == [line]

    with capture_output():
        assert shell.run_cell("%viewdf maintenance auto").success
        outcome = shell.run_cell("%viewdf SELECT src, loss FROM Copy")
    formats, _ = shell.display_formatter.format(outcome.result)
    assert formats["text/plain"].splitlines()[-1] == "(3 rows)"
    assert "viewdf-note" not in formats["text/html"]
