"""Manual maintenance: SET MAINTENANCE, pending work (NEXT[V] and B[V]), stepping, step reports."""

import random

import pandas as pd
import pytest

from viewdf_magic import ViewDFError

from test_paper_example import LOSSES, PAPER_DDL

FIRST = 23668440     # 2015-01-01 10:00 UTC in minute parts

BAND_JOIN = """
CREATE STREAM A (ts TIMESTAMP, k STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60;
CREATE STREAM B (ts TIMESTAMP, k STRING, y INT) TIMESTAMP ts PARTITION LENGTH 60;
CREATE VIEW J AS
INITIALIZE J[i] AS SELECT a.k, a.x, b.y FROM A[i] a JOIN B[i] b ON a.k = b.k
UPDATE J[j] AS SELECT a.k, a.x, b.y FROM A[j] a JOIN B[j] b ON a.k = b.k;
"""


def _paper_batch(minutes: range = range(7)) -> pd.DataFrame:
    return pd.DataFrame({"ts": [pd.Timestamp("2015-01-01 10:00") + pd.Timedelta(minutes=m) for m in minutes],
                         "src": "10.0.0.1", "dest": "10.0.0.2", "loss": [LOSSES[m] for m in minutes]})


def _stored(warehouse, view: str) -> dict[int, list[tuple]]:
    """Every stored part of a view, as sorted row tuples keyed by subscript."""
    frame = warehouse.execute(f"SELECT * FROM {view}")
    parts = warehouse.parts(view)
    result = {int(p): [] for p in parts["part"]}
    for row in frame.itertuples(index=False):
        subscript = int(pd.Timestamp(row.PART_TIMESTAMP).value // 60_000_000_000)
        result[subscript].append(tuple(v for k, v in row._asdict().items() if k != "PART_TIMESTAMP"))
    return {k: sorted(v) for k, v in result.items()}


def test_manual_mode_ingests_without_computing(warehouse):
    warehouse.execute("SET MAINTENANCE MANUAL;" + PAPER_DDL)
    report = warehouse.ingest("M", _paper_batch())
    assert report.parts == list(range(FIRST, FIRST + 7))
    assert report.steps == []
    assert warehouse.parts("Helper").empty and warehouse.parts("View2").empty
    assert warehouse.maintenance == "manual"


def test_pending_shows_missing_references_of_a_self_referencing_chain(warehouse):
    warehouse.execute("SET MAINTENANCE MANUAL;" + PAPER_DDL)
    warehouse.ingest("M", _paper_batch(range(2)))
    pending = warehouse.pending()
    helper = pending[pending["view"] == "Helper"]
    assert list(helper["clause"]) == ["INITIALIZE"]
    assert list(helper["resolves_to"]) == [f"M[{FIRST}]"]
    assert list(helper["exists"]) == [True] and bool(helper["ready"].iloc[0])
    view2 = pending[pending["view"] == "View2"]
    assert list(view2["resolves_to"]) == [f"Helper[{FIRST}]"]
    assert list(view2["exists"]) == [False] and not bool(view2["ready"].iloc[0])

    warehouse.step("Helper")
    pending = warehouse.pending()
    helper = pending[pending["view"] == "Helper"].set_index("reference")
    assert helper.loc["M[j]", "resolves_to"] == f"M[{FIRST + 1}]"
    assert helper.loc["Helper[j-1]", "resolves_to"] == f"Helper[{FIRST}]"
    assert helper["exists"].all() and helper["ready"].all()


def test_pending_for_a_multi_source_view_names_the_missing_source(warehouse):
    warehouse.execute("SET MAINTENANCE MANUAL;" + BAND_JOIN)
    warehouse.execute("INSERT INTO A VALUES (TIMESTAMP '2015-01-01 10:00:10', 'k1', 1)")
    pending = warehouse.pending()
    # J's start is known from A, but B has no part at all yet.
    rows = pending.set_index("reference")
    assert rows.loc["A[i]", "exists"] and not rows.loc["B[i]", "exists"]
    assert not rows["ready"].any()
    with pytest.raises(ViewDFError, match=r"J is not ready: its next part 2015-01-01 10:00:00 waits for B\[23668440\]"):
        warehouse.step("J")
    warehouse.execute("INSERT INTO B VALUES (TIMESTAMP '2015-01-01 10:00:20', 'k1', 2)")
    assert warehouse.pending()["ready"].all()
    [report] = warehouse.step("J")
    assert (report.view, report.subscript, report.how, report.rows) == ("J", FIRST, "initialize", 1)


def test_step_report_names_resolved_parts_and_row_counts(warehouse):
    warehouse.execute("SET MAINTENANCE MANUAL;" + PAPER_DDL)
    warehouse.ingest("M", _paper_batch(range(3)))
    warehouse.step("Helper", n=2)
    [report] = warehouse.step("Helper", plan=True)
    assert report.subscript == FIRST + 2 and report.how == "update"
    assert report.part_timestamp == pd.Timestamp("2015-01-01 10:02:00")
    refs = {r.written: r for r in report.references}
    assert refs["M[j]"].resolved == f"M[{FIRST + 2}]" and refs["M[j]"].rows == 1
    assert refs["Helper[j-1]"].resolved == f"Helper[{FIRST + 1}]" and refs["Helper[j-1]"].rows == 1
    assert refs["M[j]"].first_timestamp == pd.Timestamp("2015-01-01 10:02:00")
    assert f"FROM M[{FIRST + 2}] AS n LEFT OUTER JOIN Helper[{FIRST + 1}] AS p" in report.sql
    assert report.rows == 1
    assert report.preview().to_dict("records") == [{"src": "10.0.0.1", "dest": "10.0.0.2", "ct": 2,
                                                    "sum_loss": 27}]
    assert "Physical Plan" in report.plan
    text = report.text()
    assert f"Helper[j-1] = Helper[{FIRST + 1}] (2015-01-01 10:01:00, 1 row)" in text
    assert "<b>Helper[23668442] (2015-01-01 10:02:00) UPDATE: 1 row in " in report._repr_html_()


def test_stepping_in_any_legal_order_equals_auto_mode(make_warehouse):
    auto = make_warehouse("auto")
    auto.execute(PAPER_DDL)
    auto.ingest("M", _paper_batch())
    expected = {view: _stored(auto, view) for view in ("Helper", "View2")}
    for seed in range(3):
        manual = make_warehouse(f"manual{seed}")
        manual.execute("SET MAINTENANCE MANUAL;" + PAPER_DDL)
        manual.ingest("M", _paper_batch())
        chooser = random.Random(seed)
        while True:
            pending = manual.pending()
            ready = sorted(set(pending.loc[pending["ready"], "view"]))
            if not ready:
                break
            manual.step(chooser.choice(ready))
        assert {view: _stored(manual, view) for view in ("Helper", "View2")} == expected


def test_switching_back_to_auto_drains_the_queue(warehouse):
    warehouse.execute("SET MAINTENANCE MANUAL;" + PAPER_DDL)
    warehouse.ingest("M", _paper_batch())
    warehouse.execute("STEP Helper 2")
    results = warehouse.run("SET MAINTENANCE AUTO")
    assert len(results[0].steps) == 5 + 7
    assert list(warehouse.parts("View2")["part"]) == list(range(FIRST, FIRST + 7))
    assert not warehouse.pending()["ready"].any()
    assert [str(r) for r in warehouse.history()][:2] == [
        f"Helper[{FIRST}] (2015-01-01 10:00:00) INITIALIZE: 0 rows in {warehouse.history()[0].seconds:.3f}s, "
        f"read M[{FIRST}]",
        f"Helper[{FIRST + 1}] (2015-01-01 10:01:00) UPDATE: 1 row in {warehouse.history()[1].seconds:.3f}s, "
        f"read M[{FIRST + 1}], Helper[{FIRST}]"]


def test_step_all_and_nothing_ready(warehouse):
    warehouse.execute("SET MAINTENANCE MANUAL;" + PAPER_DDL)
    assert warehouse.run("STEP")[0].message == "Nothing is ready to compute."
    warehouse.ingest("M", _paper_batch(range(3)))
    result = warehouse.run("STEP ALL")[0]
    # View2 is a projection of Helper's part, so each of its parts is computed in the job of Helper's
    assert [(s.view, s.subscript) for s in result.steps] == \
        [("Helper", FIRST), ("View2", FIRST), ("Helper", FIRST + 1), ("View2", FIRST + 1),
         ("Helper", FIRST + 2), ("View2", FIRST + 2)]
    assert [s.fused_into for s in result.steps[1::2]] == [f"Helper[{FIRST + k}]" for k in range(3)]


def test_maintenance_mode_survives_reopening(make_warehouse):
    first = make_warehouse("wh")
    first.execute("SET MAINTENANCE MANUAL;" + PAPER_DDL)
    reopened = make_warehouse("wh")
    assert reopened.maintenance == "manual"
    reopened.ingest("M", _paper_batch(range(2)))
    assert reopened.parts("Helper").empty


def test_step_statement_errors(warehouse):
    warehouse.execute(PAPER_DDL)
    with pytest.raises(ViewDFError) as info:
        warehouse.execute("STEP Nope")
    assert "no view named 'Nope'" in info.value.message and info.value.column == 6
    with pytest.raises(ViewDFError, match="expected MANUAL or AUTO"):
        warehouse.execute("SET MAINTENANCE SOMETIMES")
