"""A warehouse reopened from its folder, in a new process and in this one, has everything back
and goes on maintaining its views from the right part."""

import pickle
import subprocess
import sys
import textwrap

import pandas as pd

from oracles import PATTERN_COLUMNS, long_runs, loss_rows, loss_runs, non_empty, rows, rows_by_part
from test_paper_example import PAPER_DDL

M_1000 = 23668440         # 2015-01-01 10:00 in minutes
OWNERS = "CREATE TABLE owners (src STRING, owner STRING); INSERT INTO owners VALUES ('10.0.0.1', 'ann')"
# 101 SEALs of an unrelated stream push the catalog past a checkpoint (every 100 versions).
SEALS = "CREATE STREAM Ticks (ts TIMESTAMP) PARTITION LENGTH 60;" + "".join(
    f"SEAL Ticks THROUGH '{stamp}';" for stamp in pd.date_range("2015-01-01 09:00", periods=101, freq="min"))
BATCHES = [
    pd.concat([loss_rows("2015-01-01 10:00", [12, 15, 24, 20]),
               loss_rows("2015-01-01 10:00", [30, None, 11, 12], src="10.0.0.3")]),
    loss_rows("2015-01-01 10:05", [16, 40], src="10.0.0.3"),                   # 10:04 is a gap
    loss_rows("2015-01-01 10:07", [50, 60, 9], src="10.0.0.3"),                # ingested after reopening
]
OBJECTS = ["M", "Helper", "View2", "owners", "Ticks"]

REOPEN = textwrap.dedent("""
    import pickle, sys
    from viewdf_magic import Warehouse

    path, batch_file, out_file = sys.argv[1:]
    warehouse = Warehouse(path, progress=False)
    state = {
        "version": warehouse.catalog.version,
        "definitions": {name: warehouse.catalog.get(name).to_json() for name in %(objects)r},
        "parts": {name: warehouse.parts(name) for name in ("M", "Helper", "View2", "Ticks")},
        "show": {what: warehouse.execute("SHOW " + what) for what in ("STREAMS", "VIEWS", "TABLES")},
        "describe": {name: (warehouse.run("DESCRIBE " + name)[0].table, warehouse.run("DESCRIBE " + name)[0].detail)
                     for name in %(objects)r},
        "Helper": warehouse.execute("SELECT * FROM Helper"),
        "View2": warehouse.execute("SELECT * FROM View2"),
        "owned": warehouse.execute("SELECT o.owner, sum(m.loss) AS total FROM M AS m JOIN owners AS o "
                                   "ON m.src = o.src GROUP BY o.owner"),
    }
    with open(batch_file, "rb") as handle:
        report = warehouse.ingest("M", pickle.load(handle))
    state["steps"] = [(s.view, s.subscript, s.how) for s in report.steps]
    state["after"] = {name: warehouse.parts(name) for name in ("Helper", "View2")}
    with open(out_file, "wb") as handle:
        pickle.dump(state, handle)
""") % {"objects": OBJECTS}


def _build(warehouse) -> dict:
    """The warehouse before reopening, and what it shows."""
    warehouse.execute(PAPER_DDL + OWNERS)
    warehouse.ingest("M", BATCHES[0])
    warehouse.execute(SEALS)
    warehouse.ingest("M", BATCHES[1])                  # logged after the checkpoint
    assert warehouse.catalog.version > 100
    return {
        "version": warehouse.catalog.version,
        "definitions": {name: warehouse.catalog.get(name).to_json() for name in OBJECTS},
        "parts": {name: warehouse.parts(name) for name in ("M", "Helper", "View2", "Ticks")},
        "show": {what: warehouse.execute("SHOW " + what) for what in ("STREAMS", "VIEWS", "TABLES")},
        "describe": {name: (warehouse.run("DESCRIBE " + name)[0].table, warehouse.run("DESCRIBE " + name)[0].detail)
                     for name in OBJECTS},
    }


def _pattern_views(warehouse_or_state, data: pd.DataFrame) -> None:
    """Helper and View2 hold exactly the runs of the paper's definition over ``data``."""
    runs = loss_runs(data)
    for view, expected in (("Helper", runs), ("View2", long_runs(runs))):
        found = warehouse_or_state[view] if isinstance(warehouse_or_state, dict) else \
            warehouse_or_state.execute(f"SELECT * FROM {view}")
        assert rows_by_part(found, PATTERN_COLUMNS) == non_empty(expected), view


def test_reopen_in_a_new_process(make_warehouse, tmp_path):
    before = _build(make_warehouse("shared"))
    batch_file, out_file = tmp_path / "batch.pkl", tmp_path / "state.pkl"
    batch_file.write_bytes(pickle.dumps(BATCHES[2]))
    subprocess.run([sys.executable, "-c", REOPEN, str(tmp_path / "shared"), str(batch_file), str(out_file)],
                   check=True, timeout=300)
    reopened = pickle.loads(out_file.read_bytes())

    assert reopened["version"] == before["version"]
    assert reopened["definitions"] == before["definitions"]
    for name, parts in before["parts"].items():
        pd.testing.assert_frame_equal(reopened["parts"][name], parts, obj=name)
    for what, table in before["show"].items():
        pd.testing.assert_frame_equal(reopened["show"][what], table, obj=what)
    for name, (table, detail) in before["describe"].items():
        pd.testing.assert_frame_equal(reopened["describe"][name][0], table, obj=name)
        assert reopened["describe"][name][1] == detail
    _pattern_views(reopened, pd.concat(BATCHES[:2]))
    assert rows(reopened["owned"], ["owner", "total"]) == [("ann", 71)]

    # Maintenance went on from the part after the newest: UPDATE, carrying runs across the reopen.
    newest = M_1000 + 6
    assert sorted(reopened["steps"]) == \
        [(view, newest + k, "update") for view in ("Helper", "View2") for k in (1, 2, 3)]
    helper = reopened["after"]["Helper"]
    assert list(helper["part"]) == list(range(M_1000, M_1000 + 10))
    assert helper["lineage"].iloc[7] == f"M[{M_1000 + 7}], Helper[{M_1000 + 6}]"

    # And this process sees what the other one did, and carries on too.
    again = make_warehouse("shared")
    # one log entry for the ingest, one per Helper part (each runs a Spark job; a part is published
    # before the next job starts) with View2's part, which the same job computes (a projection of it)
    assert again.catalog.version == before["version"] + 1 + 3
    _pattern_views(again, pd.concat(BATCHES))
    again.ingest("M", loss_rows("2015-01-01 10:10", [70], src="10.0.0.3"))
    _pattern_views(again, pd.concat([*BATCHES, loss_rows("2015-01-01 10:10", [70], src="10.0.0.3")]))
    assert list(again.parts("Helper")["how"]) == ["initialize"] + ["update"] * 10


def test_reopen_in_this_process(make_warehouse):
    before = _build(make_warehouse("same"))
    reopened = make_warehouse("same")
    assert reopened.catalog.version == before["version"]
    assert [(f.name, f.dataType.simpleString()) for f in reopened.schema("M").fields] == \
        [("ts", "timestamp"), ("src", "string"), ("dest", "string"), ("loss", "int")]
    assert [f.name for f in reopened.schema("View2").fields] == ["src", "dest", "ct", "sum_loss"]
    for name, parts in before["parts"].items():
        pd.testing.assert_frame_equal(reopened.parts(name), parts, obj=name)
    for what, table in before["show"].items():
        pd.testing.assert_frame_equal(reopened.execute("SHOW " + what), table, obj=what)
    _pattern_views(reopened, pd.concat(BATCHES[:2]))
    reopened.ingest("M", BATCHES[2])
    _pattern_views(reopened, pd.concat(BATCHES))
    assert sorted((s.view, s.subscript) for s in reopened.history()) == \
        [(view, M_1000 + k) for view in ("Helper", "View2") for k in (7, 8, 9)]
