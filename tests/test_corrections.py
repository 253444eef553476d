"""DELETE and UPDATE of stream rows: the parts read, the rows changed, every view kind repaired to what a
rebuild computes, positioned errors, lateness and retention, and a kill in the middle of a change."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crash_worker import Child, check_parts
from test_late_data import PATTERN_VIEW, WINDOW_VIEW, assert_equals_rebuild

from viewdf_magic.errors import ViewDFError
from viewdf_magic.network_example import NETWORK_DDL
from viewdf_magic.timeparts import subscript_of

TESTS = Path(__file__).resolve().parent
BASE = pd.Timestamp("2015-01-01 10:00")
FIRST = subscript_of(BASE, 60)
MATCH_VIEW = ("CREATE VIEW Matched AS SELECT * FROM M MATCH_RECOGNIZE (PARTITION BY src ORDER BY ts "
              "MEASURES FIRST(A.loss) AS a_loss, COUNT(B.*) AS n ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
              "PATTERN (A B+) DEFINE A AS A.loss > 10, B AS B.loss > A.loss) AS X")
DDL = [NETWORK_DDL, WINDOW_VIEW, PATTERN_VIEW, MATCH_VIEW]      # hand-written (self-referencing, a view over a
                                                               # view), window, pattern and MATCH_RECOGNIZE views
COLUMNS = ["ts", "src", "dest", "loss"]


def rows_at(minutes: list[float], losses: list[int], srcs: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"ts": [BASE + pd.Timedelta(minutes=m) for m in minutes], "src": srcs, "dest": "b",
                         "loss": losses}).astype({"loss": "int32"})


def stream_rows(warehouse) -> list[tuple]:
    frame = warehouse.execute("SELECT ts, src, dest, loss FROM M")
    return sorted(map(tuple, frame.astype({"loss": "int64"}).itertuples(index=False)))


def model_rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame[COLUMNS].astype({"loss": "int64"}).itertuples(index=False)))


def at(minute: float) -> str:
    return f"TIMESTAMP '{BASE + pd.Timedelta(minutes=minute):%Y-%m-%d %H:%M:%S}'"


def loaded(make_warehouse, ddl: list[str] = DDL, name: str = "wh"):
    """A warehouse with every view kind over M, and ten minutes of rows, one a minute of each source: a at :15
    cycles through 12, 15, 18, 21, 9 (runs of four parts for View2, a match of Rising and Matched ending at each
    9), b at :45 through 11, 14, 5."""
    warehouse = make_warehouse(name)
    for statement in ddl:
        warehouse.execute(statement)
    minutes = [m + s for m in range(10) for s in (0.25, 0.75)]
    data = rows_at(minutes, [[12, 15, 18, 21, 9][m % 5] if s == 0 else [11, 14, 5][m % 3]
                             for m in range(10) for s in (0, 1)], ["a", "b"] * 10)
    warehouse.ingest("M", data)
    return warehouse, data


def test_delete_and_update_read_only_the_parts_their_time_bounds_allow_and_every_view_equals_a_rebuild(
        make_warehouse):
    warehouse, data = loaded(make_warehouse)
    assert all(len(warehouse.execute(f"SELECT * FROM {v}")) for v in ("View2", "Recent", "Rising", "Matched"))
    condition = f"ts >= {at(3)} AND ts < {at(6)} AND src = 'a'"
    explained = warehouse.run(f"EXPLAIN DELETE FROM M WHERE {condition}")[0]
    assert explained.table.to_dict("list") == {
        "part": [FIRST + 3, FIRST + 4, FIRST + 5],
        "part_timestamp": ["2015-01-01 10:03:00", "2015-01-01 10:04:00", "2015-01-01 10:05:00"],
        "stored_rows": [2, 2, 2], "matching_rows": [1, 1, 1]}
    assert explained.message.startswith("DELETE would read 3 of M's 10 stored parts (2015-01-01 10:03:00 to "
                                        "2015-01-01 10:05:00), chosen by the condition on ts, and delete 3 rows "
                                        "in 3 parts; the parts of ")
    assert stream_rows(warehouse) == model_rows(data)            # EXPLAIN changed nothing
    message = warehouse.run(f"DELETE FROM M WHERE {condition}")[0].message
    assert message.startswith("Deleted 3 rows of M in 3 parts; read 3 of M's 10 stored parts")
    kept = data[~((data.ts >= BASE + pd.Timedelta(minutes=3)) & (data.ts < BASE + pd.Timedelta(minutes=6))
                  & (data.src == "a"))]
    assert stream_rows(warehouse) == model_rows(kept)
    assert warehouse.parts("M").set_index("part")["rows"].to_dict() == {
        FIRST + m: 1 if 3 <= m < 6 else 2 for m in range(10)}
    assert "repair" not in warehouse.catalog.settings
    message = warehouse.run("UPDATE M SET loss = loss * 2, dest = 'c' WHERE src = 'b' AND loss = 5")[0].message
    assert message.startswith("Updated 3 rows of M in 3 parts; read all 10 stored parts of M "
                              "(2015-01-01 10:00:00 to 2015-01-01 10:09:00), as the condition does not bound the "
                              "timestamp; views: ")
    # the 10:01:45 row of b moves to 10:11:45, a part after the newest: the stream advances to it
    message = warehouse.run(f"UPDATE M SET ts = ts + INTERVAL 10 MINUTES WHERE ts = {at(1.75)}")[0].message
    assert message.startswith("Updated 1 row of M in 1 part (moved into 1 other part); read 1 of M's 10 stored "
                              "parts (2015-01-01 10:01:00), chosen by the condition on ts")
    expected = kept.copy()
    changed = (expected.src == "b") & (expected.loss == 5)
    expected.loc[changed, "loss"] *= 2
    expected.loc[changed, "dest"] = "c"
    moved = expected.ts == BASE + pd.Timedelta(minutes=1.75)
    expected.loc[moved, "ts"] += pd.Timedelta(minutes=10)
    assert stream_rows(warehouse) == model_rows(expected)
    assert warehouse.catalog.state("M").newest == FIRST + 11
    assert warehouse.parts("M").set_index("part")["rows"].to_dict() == {
        **{FIRST + m: 1 if m in (1, 3, 4, 5) else 2 for m in range(10)}, FIRST + 10: 0, FIRST + 11: 1}  # 10:10 sealed
    assert_equals_rebuild(warehouse, make_warehouse, DDL, "rebuilt")


def error_of(warehouse, text: str) -> ViewDFError:
    with pytest.raises(ViewDFError) as caught:
        warehouse.execute(text)
    return caught.value


# a change, the start of its error message, and where its caret points
MISTAKES = [
    ("DELETE FROM M WHERE lost > 3", "A column, variable, or function parameter with name `lost` cannot be resolved",
     "lost"),
    ("UPDATE M SET loss = 'heavy' WHERE src = 'a'",
     "the new value of loss cannot be cast to INT for 10 rows; nothing was changed", "'heavy'"),
    ("UPDATE M SET src = 'z', loss = array(1)", "loss is INT; a value of type ARRAY<INT> cannot be cast to it", "array"),
    ("UPDATE M SET region = 'x'", "M has no column region (its columns are ts, src, dest, loss)", "region"),
    ("UPDATE M SET ts = NULL WHERE src = 'b'", "10 rows would have a NULL timestamp in column ts; nothing was changed",
     "src = 'b'"),
    ("DELETE FROM View2 WHERE ct > 1", "'View2' is a view: its rows follow from the streams it reads (Helper)", "View2"),
    ("DELETE FROM regions", "'regions' is a dimension table that Regional reads: views read a table as it is when "
     "they compute a part, so a DELETE could not reach the parts computed before it.", "regions"),
]


def test_mistakes_get_a_positioned_error_and_change_nothing(make_warehouse):
    warehouse, data = loaded(make_warehouse, [NETWORK_DDL])
    warehouse.execute("CREATE TABLE regions (src STRING, region STRING); CREATE VIEW Regional AS "
                      "INITIALIZE Regional[i] AS SELECT r.region, m.loss FROM M[i] AS m JOIN regions AS r ON m.src = r.src "
                      "UPDATE Regional[j] AS SELECT r.region, m.loss FROM M[j] AS m JOIN regions AS r ON m.src = r.src "
                      "PARTITION LENGTH 60")
    version = warehouse.catalog.version
    for text, message, at_text in MISTAKES:
        error = error_of(warehouse, text)
        assert error.message.startswith(message), error.message
        assert error.position == text.index(at_text), (text, error.position)
    assert warehouse.catalog.version == version
    assert stream_rows(warehouse) == model_rows(data)
    message = warehouse.run(f"DELETE FROM M WHERE ts > {at(20)}")[0].message      # no row matches: no change
    assert message == "Deleted 0 rows of M; read none of M's 10 stored parts, chosen by the condition on ts."
    assert warehouse.catalog.version == version
    warehouse.execute("CREATE STREAM U (ts TIMESTAMP, k INT) TIMESTAMP ts PARTITION LENGTH 60 UNIQUE (k) PER PART; "
                      f"INSERT INTO U VALUES ({at(0.25)}, 1), ({at(0.5)}, 2)")
    version = warehouse.catalog.version
    error = error_of(warehouse, "UPDATE U SET k = 1 WHERE k = 2")
    assert error.message == ("2 rows of part 2015-01-01 10:00:00 have (k) = (1), but U is UNIQUE (k) PER PART; "
                             "nothing was written")
    assert warehouse.catalog.version == version


def test_lateness_and_retention_refuse_a_change_before_anything_is_written(make_warehouse):
    warehouse, data = loaded(make_warehouse, [NETWORK_DDL])
    warehouse.execute("ALTER STREAM M SET ALLOWED LATENESS 3 PARTS")
    version = warehouse.catalog.version
    text = f"DELETE FROM M WHERE ts < {at(6)} AND loss = 5"
    error = error_of(warehouse, text)
    assert error.message == ("the change reaches 2015-01-01 10:02:00, more than ALLOWED LATENESS 3 PARTS behind the "
                             "newest part of M (2015-01-01 10:09:00), which is closed; nothing was changed")
    assert error.position == text.index("ts <")
    assert warehouse.catalog.version == version
    # bounded to that one part, the DELETE rewrites it without counting first: refused all the same, and a
    # condition that no row there meets deletes nothing and is not refused
    one = f"DELETE FROM M WHERE ts >= {at(2)} AND ts < {at(3)}"
    assert error_of(warehouse, one + " AND loss = 5").message == error.message
    assert warehouse.run(one + " AND loss = -1")[0].message == (
        "Deleted 0 rows of M; read 1 of M's 10 stored parts (2015-01-01 10:02:00), chosen by the condition on ts.")
    assert warehouse.catalog.version == version
    assert warehouse.run(f"DELETE FROM M WHERE ts >= {at(6)} AND loss = 5")[0].message.startswith(
        "Deleted 1 row of M in 1 part")
    assert stream_rows(warehouse) == model_rows(data[~((data.ts >= BASE + pd.Timedelta(minutes=6)) & (data.loss == 5))])
    retained = make_warehouse("retained")
    retained.execute("CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts "
                     "PARTITION LENGTH 60 RETAIN 4 PARTS")
    retained.ingest("M", data)
    text = f"DELETE FROM M WHERE ts >= {at(2)}"
    error = error_of(retained, text)
    assert error.message == ("the condition reaches parts of M before 2015-01-01 10:06:00, which retention dropped: "
                             "they can no longer be changed. Bound ts to later times; nothing was changed")
    assert error.position == text.index("ts >=")
    assert retained.run(f"DELETE FROM M WHERE ts >= {at(7)}")[0].message.startswith("Deleted 6 rows of M in 3 parts")
    assert stream_rows(retained) == model_rows(data[(data.ts >= BASE + pd.Timedelta(minutes=6))
                                                    & (data.ts < BASE + pd.Timedelta(minutes=7))])


# -- random mixes ---------------------------------------------------------------------------------
EXAMPLES = int(os.environ.get("VIEWDF_CHANGE_EXAMPLES", "1"))

row = st.tuples(st.integers(0, 6), st.sampled_from(["a", "b"]), st.integers(0, 30))
operation = st.one_of(
    st.tuples(st.just("insert"), st.lists(row, min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.integers(0, 6), st.integers(0, 3), st.sampled_from(["a", "b", None])),
    st.tuples(st.just("update loss"), st.sampled_from(["a", "b"]), st.integers(-12, 12)),
    st.tuples(st.just("move"), st.integers(0, 6), st.integers(-3, 3)))


def apply(warehouse, model: pd.DataFrame, step: tuple, n: int) -> pd.DataFrame:
    """Run one operation on the warehouse and on the pandas model of M's rows; the new model."""
    kind = step[0]
    if kind == "insert":
        # each row's own millisecond (its operation and position), so no two rows are ever equal
        rows = rows_at([m + 0.5 for m, _, _ in step[1]], [loss for _, _, loss in step[1]],
                       [src for _, src, _ in step[1]])
        rows["ts"] += pd.to_timedelta([10 * n + i for i in range(len(rows))], unit="ms")
        warehouse.ingest("M", rows)
        return pd.concat([model, rows], ignore_index=True)
    if kind == "delete":
        _, minute, width, src = step
        where = f"ts >= {at(minute)} AND ts < {at(minute + width)}" + (f" AND src = '{src}'" if src else "")
        warehouse.execute(f"DELETE FROM M WHERE {where}")
        low, high = BASE + pd.Timedelta(minutes=minute), BASE + pd.Timedelta(minutes=minute + width)
        hit = (model.ts >= low) & (model.ts < high) & ((model.src == src) if src else True)
        return model[~hit].reset_index(drop=True)
    if kind == "update loss":
        _, src, delta = step
        warehouse.execute(f"UPDATE M SET loss = loss + ({delta}) WHERE src = '{src}'")
        model = model.copy()
        model.loc[model.src == src, "loss"] += delta
        return model
    _, minute, shift = step          # move the rows of one minute by a few minutes (earlier or later)
    warehouse.execute(f"UPDATE M SET ts = ts + INTERVAL '{shift}' MINUTE WHERE ts >= {at(minute)} AND "
                      f"ts < {at(minute + 1)}")
    model = model.copy()
    moved = (model.ts >= BASE + pd.Timedelta(minutes=minute)) & (model.ts < BASE + pd.Timedelta(minutes=minute + 1))
    model.loc[moved, "ts"] += pd.Timedelta(minutes=shift)
    return model


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(operations=st.lists(operation, min_size=2, max_size=4))
@example(operations=[("insert", [(0, "a", 12), (1, "a", 15), (2, "a", 20), (3, "b", 25)]),
                     ("move", 1, 3), ("delete", 2, 1, "a"), ("update loss", "a", -5)])
def test_any_mix_of_inserts_late_rows_deletes_and_updates_equals_a_rebuild(make_warehouse, operations):
    name = f"wh{time.monotonic_ns()}"
    warehouse = make_warehouse(name)
    for statement in DDL:
        warehouse.execute(statement)
    model = pd.DataFrame({c: pd.Series(dtype=t) for c, t in
                          zip(COLUMNS, ["datetime64[ns]", "object", "object", "int32"])})
    for n, step in enumerate([("insert", [(3, "a", 11), (4, "b", 16)]), *operations]):
        model = apply(warehouse, model, step, n)
    assert stream_rows(warehouse) == model_rows(model)
    assert "repair" not in warehouse.catalog.settings
    assert_equals_rebuild(warehouse, make_warehouse, DDL, name + "-rebuilt")


# -- a kill in the middle of a change -----------------------------------------------------------
CHANGER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from crash_worker import small_session
    from viewdf_magic import Warehouse
    from viewdf_magic.engine.corrections import Corrector
    publish = Corrector._publish

    def announced(*args, **kwargs):
        publish(*args, **kwargs)
        print("COMMITTED", flush=True)       # the change's log entry is written; the views' repair comes next
    Corrector._publish = announced
    spark = small_session()
    warehouse = Warehouse(sys.argv[1], spark=spark, progress=False)
    print("READY", flush=True)
    sys.stdin.readline()
    print("BEGIN", flush=True)
    warehouse.execute(sys.argv[2])
    print("DONE", flush=True)
    sys.stdin.readline()
""").format(tests=str(TESTS))


def test_a_kill_in_the_middle_of_a_delete_leaves_the_old_rows_or_the_new_and_reopening_repairs_the_views(
        spark, make_warehouse, tmp_path):
    """The first kill lands as soon as the change is committed, in the views' repair; the second half way
    from BEGIN to where the first one committed, while the parts are written."""
    warehouse, data = loaded(make_warehouse, [NETWORK_DDL])
    deleted = (data.ts >= BASE + pd.Timedelta(minutes=1)) & (data.src == "b")
    text = f"DELETE FROM M WHERE ts >= {at(1)} AND src = 'b'"
    before, after = model_rows(data), model_rows(data[~deleted])
    to_commit = None
    for kill in ("after the commit", "while writing"):
        child = Child(["-c", CHANGER, warehouse.path[len("file:"):], text], tmp_path / "changer-stderr.txt")
        child.wait_for("READY", timeout=300)
        child.send("GO")
        child.wait_for("BEGIN", timeout=60)
        began = time.monotonic()
        if to_commit is None:
            child.wait_for("COMMITTED", timeout=300)
            to_commit = time.monotonic() - began
        else:
            time.sleep(to_commit / 2)
        child.kill()
        committed = any(line.startswith("COMMITTED") for line in child.lines)
        reopened = make_warehouse()               # recovers: a pending repair is finished
        check_parts(spark, reopened, set())
        rows = stream_rows(reopened)
        assert rows in (before, after), f"a DELETE killed {kill} left a mix of old and new rows"
        assert rows == after or not committed
        assert "repair" not in reopened.catalog.settings
        assert_equals_rebuild(reopened, make_warehouse, [NETWORK_DDL], f"rebuilt-{kill.replace(' ', '-')}")
        if rows == after:
            reopened.ingest("M", data[deleted])   # the rows back, for the next kill
