"""The partition-lineage viewer: closures from the recorded lineage, the grid, details and previews."""

from __future__ import annotations

import pandas as pd
import pytest
from oracles import PATTERN_COLUMNS, loss_runs, rows
from test_replay import FIRST, PARTS, STREAM, viewdf_shell
from viewdf_magic.network_example import NETWORK_DDL
from viewdf_magic.notebook.lineage import COLORS, LineageViewer


@pytest.fixture
def network(warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", STREAM)
    return warehouse


def paper_closure(view: str, j: int) -> dict[str, set[int]]:
    """What a part was computed from, by the ViewDF itself: View2[j] reads Helper[j]; Helper[j]
    reads M[j] and Helper[j-1], except its first part, which reads only M[i]."""
    closure: dict[str, set[int]] = {}
    todo = [(view, j)]
    while todo:
        name, k = todo.pop()
        reads = {"View2": [("Helper", k)], "M": [],
                 "Helper": [("M", k)] + ([("Helper", k - 1)] if k > FIRST else [])}[name]
        for source, part in reads:
            if part not in closure.setdefault(source, set()):
                closure[source].add(part)
                todo.append((source, part))
    return closure


def test_closure_follows_the_recorded_lineage(network):
    reads = network.reads
    for j in PARTS:
        assert reads.upstream_parts("View2", j) == paper_closure("View2", j)
        assert reads.upstream_parts("Helper", j) == paper_closure("Helper", j)
    assert reads.upstream_parts("View2", PARTS[3]) == {"Helper": set(PARTS), "M": set(PARTS)}
    assert reads.upstream_parts("M", PARTS[0]) == {}


def test_viewer_opens_on_the_views_newest_part(network):
    viewer = LineageViewer(network, "View2")
    assert [d.name for d in viewer.objects] == ["M", "Helper", "View2"]
    assert viewer.selected == ("View2", PARTS[3])
    assert viewer.highlighted == paper_closure("View2", PARTS[3])
    colors = {name: [viewer.button(name, s).style.button_color for s in PARTS] for name in ("M", "Helper", "View2")}
    assert colors == {"M": [COLORS["upstream"]] * 4, "Helper": [COLORS["upstream"]] * 4,
                      "View2": [COLORS["empty"]] * 3 + [COLORS["selected"]]}
    details = viewer.details.value
    assert "UPDATE View2[j] AS\n  SELECT src, dest, ct, sum_loss FROM Helper[j] WHERE ct &gt;= 4" in details
    assert "<th style='text-align:left'>rows</th><td>1</td>" in details
    assert "<th style='text-align:left'>how</th><td>update</td>" in details
    assert "<th style='text-align:left'>recomputed after late data</th><td>no" in details
    assert f"Helper[{PARTS[0]} .. {PARTS[3]}]" in details and f"M[{PARTS[0]} .. {PARTS[3]}]" in details
    assert rows(viewer.preview_rows, PATTERN_COLUMNS) == [("10.0.0.3", "10.0.0.4", 4, 120)]


def test_clicking_a_part_selects_it_and_previews_its_rows(network):
    viewer = LineageViewer(network, "View2")
    viewer.button("Helper", PARTS[1]).click()
    assert viewer.selected == ("Helper", PARTS[1])
    assert viewer.highlighted == paper_closure("Helper", PARTS[1]) == {"M": set(PARTS[:2]), "Helper": {PARTS[0]}}
    expected = loss_runs(STREAM)[pd.Timestamp("2015-01-01 10:01")]
    assert rows(viewer.preview_rows, PATTERN_COLUMNS) == expected == \
        [("10.0.0.1", "10.0.0.2", 1, 12), ("10.0.0.3", "10.0.0.4", 2, 60)]
    assert rows(viewer.preview_rows, PATTERN_COLUMNS) == \
        rows(network.read_part("Helper", "2015-01-01 10:01"), PATTERN_COLUMNS)
    assert "UPDATE Helper[j] AS" in viewer.details.value
    assert viewer.button("View2", PARTS[3]).style.button_color == COLORS["view"]     # no longer selected
    viewer.button("Helper", PARTS[0]).click()
    assert "INITIALIZE Helper[i] AS" in viewer.details.value
    viewer.button("M", PARTS[2]).click()
    assert viewer.highlighted == {}
    assert "<pre>ingested</pre>" in viewer.details.value
    assert rows(viewer.preview_rows, ["src", "loss"]) == [("10.0.0.1", 15), ("10.0.0.3", 30)]


def test_hundreds_of_parts_scroll_and_zoom(warehouse):
    warehouse.execute("""
        CREATE STREAM S (ts TIMESTAMP, v INT) PARTITION LENGTH 60;
        CREATE VIEW Hourly AS
        INITIALIZE Hourly[i] AS SELECT count(*) AS n FROM S[i*60 .. i*60+59]
        UPDATE Hourly[j] AS SELECT count(*) AS n FROM S[j*60 .. j*60+59]
        PARTITION LENGTH 3600""")
    minutes = pd.date_range("2015-01-01 10:00", periods=300, freq="min")
    warehouse.ingest("S", pd.DataFrame({"ts": minutes, "v": range(300)}))
    viewer = LineageViewer(warehouse, "Hourly", width=48)
    assert viewer.selected == ("Hourly", FIRST // 60 + 4)        # the fifth hour, 14:00
    minute_of = FIRST + 4 * 60                                    # 14:00 in minute parts
    assert viewer.highlighted == {"S": set(range(minute_of, minute_of + 60))}
    assert len(viewer.grid.children) == 2 * (48 + 1)
    assert (viewer.scroll.min, viewer.scroll.max) == (FIRST, FIRST + 299 - 47)
    assert viewer.scroll.value <= minute_of < viewer.scroll.value + 48
    shown = [b.style.button_color for b in viewer._cells[0]]
    inside = [viewer.scroll.value + k in viewer.highlighted["S"] for k in range(48)]
    assert shown == [COLORS["upstream"] if hit else COLORS["stream"] for hit in inside]
    assert [b.style.button_color for b in viewer._cells[1]] == \
        [COLORS["selected"] if hit else COLORS["view"] for hit in inside]       # hours 13 and 14
    viewer.scroll.value = FIRST
    assert viewer.range_label.value == "2015-01-01 10:00:00 .. 2015-01-01 10:47:00 (48 × 60 s)"
    assert {b.style.button_color for b in viewer._cells[1]} == {COLORS["view"]}
    zoom_in = viewer.widget.children[0].children[2]
    zoom_in.click()
    assert len(viewer.grid.children) == 2 * (24 + 1)
    assert viewer.range_label.value.endswith("(24 × 60 s)")


def test_translated_views_show_their_generated_clause_and_origin(network):
    network.execute("CREATE VIEW Recent AS SELECT src, sum(loss) AS total FROM M [WINDOW 2 MINUTES] GROUP BY src")
    viewer = LineageViewer(network, "Recent")
    assert [d.name for d in viewer.objects][0] == "M" and viewer.objects[-1].name == "Recent"
    assert {d.owner for d in viewer.objects[1:-1]} == {"Recent"}
    assert "-- translated from:\nCREATE VIEW Recent AS SELECT src, sum(loss)" in viewer.details.value
    assert "UPDATE Recent[j] AS" in viewer.details.value
    assert viewer.highlighted["M"] <= set(PARTS) and PARTS[3] in viewer.highlighted["M"]
    assert rows(viewer.preview_rows, ["src", "total"]) == [("10.0.0.1", 39), ("10.0.0.3", 60)]


def test_lineage_magic(spark, network):
    shell = viewdf_shell(spark, network)
    viewer = shell.run_line_magic("viewdf", "lineage View2 --width 24")
    assert isinstance(viewer, LineageViewer)
    assert viewer.selected == ("View2", PARTS[3]) and len(viewer.grid.children) == 3 * (24 + 1)
    everything = shell.run_line_magic("viewdf", "lineage")
    assert [d.name for d in everything.objects] == ["M", "Helper", "View2"] and everything.selected is None


def test_a_part_computed_by_the_guarded_update_shows_that_clause(warehouse):
    """Issue 34's bug: a pattern Helper over an undeclared stream computes parts with UPDATE .. WHEN S[j] IS
    UNIQUE (..), and the details panel named the clause by a string no statement attribute had."""
    warehouse.execute("CREATE STREAM S (ts TIMESTAMP, k STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60; "
                      "CREATE VIEW Up AS SELECT k, a.ts AS since, count(*) AS n FROM S PATTERN (a, b+) "
                      "WHERE b.x > a.x GROUP BY k CONTIGUITY EVENTS")
    for minute in range(3):       # one part per batch: each part after the first steps alone
        warehouse.ingest("S", pd.DataFrame({"ts": [pd.Timestamp("2015-01-01 10:00") + pd.Timedelta(minutes=minute)],
                                            "k": ["a"], "x": [minute]}))
    [helper] = [d for d in warehouse.catalog.views() if d.owner is not None and d.name != "Up"]
    parts = warehouse.catalog.state(helper.name).parts
    hows = [parts[s].how for s in sorted(parts)]
    assert hows == ["initialize", "update when unique", "update when unique"]
    shown = warehouse.reads.producing_query(helper.name, max(parts))
    assert shown.startswith(f"UPDATE {helper.name}[j] WHEN S[j] IS UNIQUE (k) AS\n  ")
    initial = warehouse.reads.producing_query(helper.name, min(parts))
    assert initial.startswith(f"INITIALIZE {helper.name}[")
