"""Late and out-of-order rows: repair of every dependent view part, early cutoff, lateness bounds."""

from __future__ import annotations

import os
import time

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from viewdf_magic.errors import Interrupted, ViewDFError
from viewdf_magic.network_example import NETWORK_DDL
from viewdf_magic.maintainer.writer import PartWriter
from viewdf_magic.timeparts import subscript_of

BASE = pd.Timestamp("2015-01-01 10:00")
FIRST = subscript_of(BASE, 60)
WINDOW_VIEW = ("CREATE VIEW Recent AS SELECT src, sum(loss) AS total, max(loss) AS peak, count(*) AS n "
               "FROM M [WINDOW 3 MINUTES] GROUP BY src")
PATTERN_VIEW = ("CREATE VIEW Rising AS SELECT src, dest, count(*) AS ct, sum(loss) AS total "
                "FROM M PATTERN [a, b+] WHERE a.loss > 10 AND b.loss > a.loss GROUP BY src, dest")


def batch(minutes: list[float], losses: list[int], src: str | list[str] = "a") -> pd.DataFrame:
    return pd.DataFrame({"ts": [BASE + pd.Timedelta(minutes=m) for m in minutes], "src": src, "dest": "b",
                         "loss": losses})


def view2(warehouse) -> list[tuple]:
    rows = warehouse.execute("SELECT * FROM View2")
    return sorted((r.PART_TIMESTAMP.strftime("%H:%M"), r.ct, r.sum_loss) for r in rows.itertuples())


def contents(warehouse, name: str) -> tuple[list[int], list[str]]:
    """A view's part subscripts and its rows, each row as text (arrays and structs included)."""
    parts = sorted(warehouse.parts(name)["part"])
    frame = warehouse.run(f"SELECT * FROM {name}")[0].frame
    return parts, sorted(str(row.asDict(recursive=True)) for row in frame.collect())


def assert_equals_rebuild(warehouse, make_warehouse, ddl: list[str], rebuilt_name: str) -> None:
    """Every view part equals the same warehouse rebuilt from scratch with all of the stream's rows."""
    rebuilt = make_warehouse(rebuilt_name)
    for statement in ddl:
        rebuilt.execute(statement)
    rebuilt.ingest("M", warehouse.execute("SELECT ts, src, dest, loss FROM M"))
    for definition in warehouse.catalog.views():
        assert contents(warehouse, definition.name) == contents(rebuilt, definition.name), definition.name


def test_a_late_row_repairs_the_self_referencing_chain_up_to_the_newest_part(warehouse, make_warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", batch([0, 1, 2, 4, 5, 6], [12, 15, 24, 20, 16, 7]))
    assert view2(warehouse) == []          # 10:03 is missing, so no run reaches four parts
    before = warehouse.parts("Helper").set_index("part")["last_updated"]
    report = warehouse.ingest("M", batch([3], [30]))
    assert report.late == [FIRST + 3] and report.late_rows == 1
    # Helper[3..6] and View2[3..5] are recomputed; Helper[6] comes out empty as before, so View2[6]
    # is skipped by the early cutoff.
    assert [(s.view, s.subscript - FIRST, s.repair) for s in report.repair.steps] == \
        [("Helper", 3, "changed"), ("Helper", 4, "changed"), ("Helper", 5, "changed"), ("Helper", 6, "unchanged"),
         ("View2", 3, "changed"), ("View2", 4, "changed"), ("View2", 5, "changed")]
    assert (report.repair.changed, report.repair.unchanged, report.repair.skipped) == (6, 1, 1)
    assert "7 view parts recomputed (6 changed, 1 unchanged), 1 skipped by early cutoff" in str(report)
    assert view2(warehouse) == [("10:03", 4, 81), ("10:04", 5, 101), ("10:05", 6, 117)]
    after = warehouse.parts("Helper").set_index("part")
    assert after.loc[FIRST + 6, "last_updated"] == before[FIRST + 6]      # unchanged content, unchanged time
    assert after.loc[FIRST + 2, "last_updated"] == before[FIRST + 2]      # not affected at all
    assert after.loc[FIRST + 3, "last_updated"] > before[FIRST + 3]
    stream = warehouse.parts("M").set_index("part")
    assert stream.loc[FIRST + 3, "how"] == "late" and stream.loc[FIRST + 3, "rows"] == 1
    assert warehouse.catalog.state("Helper").parts[FIRST + 3].repairs == 1
    assert_equals_rebuild(warehouse, make_warehouse, [NETWORK_DDL], "rebuilt")


def test_late_rows_join_an_existing_part_and_can_precede_the_first_one(warehouse, make_warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", batch([2, 3, 4], [11, 12, 13]))
    assert warehouse.catalog.state("View2").parts.keys() == {FIRST + 2, FIRST + 3, FIRST + 4}
    report = warehouse.ingest("M", batch([0, 3.5], [40, 50]))
    assert report.late == [FIRST, FIRST + 3] and report.late_rows == 2
    m = warehouse.catalog.state("M").parts
    assert m[FIRST + 3].rows == 2 and len(m[FIRST + 3].folders) == 2 and len(m[FIRST + 3].arrivals) == 2
    assert m[FIRST + 3].late_rows and m[FIRST].how == "late"
    # The views now start at 10:00; 10:01 has no rows, so the run restarts at 10:02.
    assert sorted(warehouse.catalog.state("View2").parts) == list(range(FIRST, FIRST + 5))
    assert warehouse.catalog.state("Helper").parts[FIRST].how == "initialize"
    assert warehouse.catalog.state("Helper").parts[FIRST + 2].how == "update"
    sealed = warehouse.parts("M").set_index("part")
    assert sealed.loc[FIRST + 1, "how"] == "sealed" and sealed.loc[FIRST + 1, "rows"] == 0
    assert_equals_rebuild(warehouse, make_warehouse, [NETWORK_DDL], "rebuilt")


def test_show_parts_changed_since_lists_the_parts_late_data_changed(warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", batch([0, 1, 2, 4, 5, 6], [12, 15, 24, 20, 16, 7]))
    mark = pd.Timestamp.now(tz="UTC").tz_localize(None)
    time.sleep(0.01)
    warehouse.ingest("M", batch([3], [30]))
    changed = warehouse.execute(f"SHOW PARTS View2 CHANGED SINCE '{mark}'")
    assert list(changed["part"] - FIRST) == [3, 4, 5]
    helper = warehouse.execute(f"SHOW PARTS OF Helper CHANGED SINCE '{mark}'")
    assert list(helper["part"] - FIRST) == [3, 4, 5]
    with pytest.raises(ViewDFError, match="not a timestamp") as caught:
        warehouse.execute("SHOW PARTS View2 CHANGED SINCE 'yesterday-ish'")
    assert caught.value.position is not None


def expected_lateness(batches: list[list[float]]) -> tuple[int, dict[int, int]]:
    """Rows on time, and late rows by how many parts they were behind the newest part when their batch
    arrived, from the batches' minutes alone (one-minute parts)."""
    newest, on_time, behind = None, 0, {}
    for minutes in batches:
        for part in (int(m) for m in minutes):
            if newest is None or part > newest:
                on_time += 1
            else:
                behind[newest - part] = behind.get(newest - part, 0) + 1
        newest = max([newest if newest is not None else -1, *(int(m) for m in minutes)])
    return on_time, behind


def test_show_lateness_counts_late_rows_by_parts_behind_and_the_repairs_they_cost(warehouse, make_warehouse):
    warehouse.execute(NETWORK_DDL)
    batches = [[0, 1, 2, 4, 5, 6], [3], [6.5, 7, 7.5], [1.5, 2.5, 7.2]]
    reports = [warehouse.ingest("M", batch(batches[0], [12, 15, 24, 20, 16, 7])), warehouse.ingest("M", batch([3], [30]))]
    first = warehouse.execute("SHOW LATENESS")
    # the late row into 10:03 (three parts behind 10:06) recomputed Helper[3..6] and View2[3..5] (the test above)
    assert first.loc[0, ["view_parts_recomputed", "changed", "unchanged"]].tolist() == [7, 6, 1]
    reports += [warehouse.ingest("M", batch(minutes, [30 - k for k in range(len(minutes))])) for minutes in batches[2:]]
    with pytest.raises(ViewDFError):      # a batch refused for a NULL timestamp is not lateness: not counted
        warehouse.ingest("M", batch([0.5], [1]).assign(ts=[pd.NaT]))
    shown = warehouse.execute("SHOW LATENESS FOR M")
    on_time, behind = expected_lateness(batches)
    assert (on_time, behind) == (8, {0: 2, 3: 1, 5: 1, 6: 1})     # 6.5 and 7.2 went into the newest part
    row = shown.iloc[0]
    assert (row["stream"], row["rows"], row["on_time_rows"], row["late_rows"]) == ("M", 13, on_time, sum(behind.values()))
    assert row["late_rows_by_parts_behind"] == dict(sorted(behind.items())) and row["most_parts_behind"] == 6
    assert row["late_arrivals"] == 5 and row["parts"] == 8 and row["views"] == "Helper, View2"
    assert (row["refused_rows"], row["diverted_rows"], row["diverted_into"]) == (0, 0, None)
    repaired = [step for report in reports if report.repair for step in report.repair.steps]
    assert row["view_parts_recomputed"] == len(repaired)
    assert row["changed"] == sum(step.repair == "changed" for step in repaired)
    assert row["unchanged"] == sum(step.repair == "unchanged" for step in repaired)
    assert row["repair_seconds"] == pytest.approx(sum(step.seconds for step in repaired))
    with pytest.raises(ViewDFError, match="'View2' is a view, not a stream"):
        warehouse.execute("SHOW LATENESS FOR View2")
    pd.testing.assert_frame_equal(make_warehouse().execute("SHOW LATENESS"), shown)     # kept in the catalog
    # the notebook's plot: a dot per late arrival at its parts behind, a bar per view of its repair seconds
    from viewdf_magic.notebook.lateness_plot import lateness_figure

    left, right = lateness_figure(warehouse, "M").axes
    assert sorted(y for _, y in left.collections[0].get_offsets()) == \
        sorted(k for k, n in behind.items() for _ in range(n))          # every late arrival here is one row
    assert sum(bar.get_width() for bar in right.patches) == pytest.approx(row["repair_seconds"])
    assert [label.get_text() for label in right.texts] == [
        f"{sum(s.view == v and s.repair in ('changed', 'unchanged') for s in repaired)} parts, "
        f"{sum(s.view == v and s.repair == 'changed' for s in repaired)} changed" for v in ("View2", "Helper")]    # bottom to top


def test_allowed_lateness_refuses_older_rows_and_writes_nothing(warehouse):
    warehouse.execute("CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) "
                      "PARTITION LENGTH 60 ALLOWED LATENESS 2 MINUTES;"
                      "CREATE VIEW Total AS SELECT src, sum(loss) AS total FROM M [WINDOW 2 MINUTES] GROUP BY src")
    warehouse.ingest("M", batch([0, 5], [1, 2]))
    version = warehouse.catalog.version
    with pytest.raises(ViewDFError) as caught:
        warehouse.execute("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:02:10', 'a', 'b', 7)")
    message = caught.value.message
    assert "1 row is more than ALLOWED LATENESS 2 PARTS behind the newest part of M" in message
    assert "2015-01-01 10:05:00" in message and "Nothing was written" in message
    assert caught.value.position is not None
    # no row was written; the refusal is counted (one log entry after the batch's own was undone)
    assert warehouse.catalog.version == version + 1 and warehouse.parts("M")["rows"].sum() == 2
    assert warehouse.execute("SHOW LATENESS FOR M").loc[0, ["refused_rows", "diverted_rows"]].tolist() == [1, 0]
    warehouse.execute("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:03:10', 'a', 'b', 7)")   # 2 parts late
    total = warehouse.execute("SELECT total FROM Total WHERE PART_TIMESTAMP = '2015-01-01 10:04:00'")
    assert list(total["total"]) == [7]
    # Without the bound the row is no longer "too late", but the window's helper kept only what the
    # bound required, so the repair it would need is refused, never half done.
    warehouse.execute("ALTER STREAM M RESET ALLOWED LATENESS")
    version = warehouse.catalog.version
    with pytest.raises(ViewDFError, match=r"cannot be repaired: the part of Total__pre they change "
                                          r"\(2015-01-01 10:00:00\) was dropped by retention; nothing was written"):
        warehouse.execute("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:00:30', 'a', 'b', 5)")
    assert warehouse.catalog.version == version


def test_on_late_divert_stores_rows_later_than_allowed_and_ingests_the_rest(warehouse, make_warehouse):
    warehouse.execute(NETWORK_DDL.replace("PARTITION LENGTH 60", "PARTITION LENGTH 60 ALLOWED LATENESS 2 PARTS ON LATE "
                                          "DIVERT INTO LateM", 1))
    assert warehouse.catalog.get("LateM").kind == "table"
    warehouse.ingest("M", batch([0, 1, 2, 3, 6], [12, 15, 24, 20, 7]))
    # 10:04 is two parts behind 10:06 (taken, late); 10:02 and 10:01 are more (diverted); 10:05 is late too
    report = warehouse.ingest("M", batch([4, 2.5, 1.5, 5], [16, 30, 31, 11], ["a", "b", "a", "a"]))
    assert (report.rows, report.parts, report.late_rows, report.diverted) == (2, [FIRST + 4, FIRST + 5], 2, 2)
    assert str(report).startswith("2 rows into 2 parts of M (2 late rows into 2 earlier parts); 2 rows later than "
                                  "ALLOWED LATENESS diverted into LateM")
    late = warehouse.execute("SELECT ts, src, loss, reason FROM LateM ORDER BY ts")
    assert [(t.strftime("%H:%M:%S"), src, loss) for t, src, loss in zip(late.ts, late.src, late.loss)] == \
        [("10:01:30", "a", 31), ("10:02:30", "b", 30)]
    assert set(late.reason) == {"more than ALLOWED LATENESS 2 PARTS behind the newest part (2015-01-01 10:06:00)"}
    version = warehouse.catalog.version
    report = warehouse.ingest("M", batch([0.5], [40]))          # every row too late: only the table changes
    assert (report.rows, report.diverted) == (0, 1) and warehouse.catalog.version == version + 1
    shown = warehouse.execute("SHOW LATENESS FOR M").iloc[0]
    assert (shown["diverted_rows"], shown["diverted_into"], shown["late_rows"]) == (3, "LateM", 2)
    # raising the bound lets them be taken back (the hand-written views keep every part to repair from)
    warehouse.execute("ALTER STREAM M SET ALLOWED LATENESS 10 PARTS ON LATE DIVERT INTO LateM;"
                      "INSERT INTO M SELECT ts, src, dest, loss FROM LateM")
    assert warehouse.execute("SELECT count(*) AS n FROM M")["n"][0] == 10
    # no view reads the divert table, so it can be changed and emptied
    assert warehouse.run("UPDATE LateM SET reason = 'taken back' WHERE loss > 30")[0].message.startswith(
        "Updated 2 rows of LateM; read table LateM")
    assert sorted(warehouse.execute("SELECT reason FROM LateM")["reason"])[-2:] == ["taken back", "taken back"]
    assert warehouse.run("DELETE FROM LateM")[0].message.startswith("Deleted 3 rows of LateM")
    assert warehouse.execute("SELECT count(*) AS n FROM LateM")["n"][0] == 0
    assert_equals_rebuild(warehouse, make_warehouse, [NETWORK_DDL], "rebuilt")
    reopened = make_warehouse()
    assert reopened.catalog.state("M").late_into == "LateM" and reopened.catalog.state("M").diverted_rows == 3
    with pytest.raises(ViewDFError, match="table Helper|'Helper' is a view; ON LATE DIVERT INTO needs a table"):
        reopened.execute("ALTER STREAM M SET ALLOWED LATENESS 3 PARTS ON LATE DIVERT INTO Helper")
    reopened.execute("ALTER STREAM M RESET ALLOWED LATENESS")
    assert reopened.catalog.state("M").late_into is None


def test_an_interrupted_repair_is_finished_when_the_warehouse_reopens(warehouse, make_warehouse, monkeypatch):
    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", batch([0, 1, 2, 4, 5, 6], [12, 15, 24, 20, 16, 7]))
    original, calls = PartWriter.compute, []

    def crash_on_the_third(self, step, plan=False, previous=None):
        calls.append(step.subscript)
        if len(calls) == 3:
            raise KeyboardInterrupt        # the process dies in the middle of the repair
        return original(self, step, plan, previous)

    monkeypatch.setattr(PartWriter, "compute", crash_on_the_third)
    with pytest.raises(Interrupted, match="^Interrupted: kept 1 stream part "):   # as a cell shows it
        warehouse.ingest("M", batch([3], [30]))
    monkeypatch.setattr(PartWriter, "compute", original)
    assert "repair" in warehouse.catalog.settings       # the batch is acknowledged, its repair is not done
    reopened = make_warehouse()
    assert [(s.view, s.subscript - FIRST) for s in reopened.recovered] == \
        [("Helper", 5), ("Helper", 6), ("View2", 3), ("View2", 4), ("View2", 5)]
    assert "repair" not in reopened.catalog.settings
    assert view2(reopened) == [("10:03", 4, 81), ("10:04", 5, 101), ("10:05", 6, 117)]


EXAMPLES = int(os.environ.get("VIEWDF_LATE_EXAMPLES", "3"))

batches_strategy = st.lists(
    st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["a", "b"]), st.integers(-5, 40)), min_size=1, max_size=4),
    min_size=2, max_size=4)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batches=batches_strategy)
# A row before the first part moves the window's start back: its MAX blocks' new first part must be
# computed before the window parts that read it are repaired.
@example(batches=[[(2, "a", 0)], [(0, "a", 0)]])
def test_any_mix_of_on_time_and_late_batches_equals_a_rebuild(make_warehouse, batches):
    """Hand-written (Helper/View2), window (SUM and MAX) and pattern views over the same stream."""
    ddl = [NETWORK_DDL, WINDOW_VIEW, PATTERN_VIEW]
    name = f"wh{time.monotonic_ns()}"
    warehouse = make_warehouse(name)
    for statement in ddl:
        warehouse.execute(statement)
    for rows in batches:
        minutes = [m + 0.5 for m, _, _ in rows]
        warehouse.ingest("M", batch(minutes, [loss for _, _, loss in rows], [src for _, src, _ in rows]))
    assert "repair" not in warehouse.catalog.settings
    on_time, behind = expected_lateness([[m + 0.5 for m, _, _ in rows] for rows in batches])
    shown = warehouse.execute("SHOW LATENESS FOR M").iloc[0]
    assert (shown["on_time_rows"], shown["late_rows_by_parts_behind"]) == (on_time, dict(sorted(behind.items())))
    assert_equals_rebuild(warehouse, make_warehouse, ddl, name + "-rebuilt")
