"""Sliding-window aggregates (FROM S [WINDOW w SLIDE s]) translated into ViewDFs: the thesis's worked
example, the zero-sum regression, HAVING/WHERE/AVG, holistic aggregates mixed with others, tumbling,
slides, partial windows, global aggregates, windows over views, exact DECIMAL sums, errors, EXPLAIN,
DROP, parts read per MAX step, and the chunked max/min cover itself."""

from decimal import Decimal
from typing import Callable

import pandas as pd
import pytest

from oracles import rows, rows_by_part
from test_errors import fails
from viewdf_magic.engine.window_views import replan_window
from viewdf_magic.language.source import Fragment
from viewdf_magic.language.subscripts import parse_subscript
from viewdf_magic.translation.window_diagram import chain_edges, own_svg
from viewdf_magic.translation.window_plan import chunk_length, chunk_previous, extreme_cover, suffix_source
from window_oracle import aggregate, close, window_parts

STREAM = "CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60"
T0 = pd.Timestamp("2015-01-01 10:00")


def frame(points: list[tuple]) -> pd.DataFrame:
    """(minute offset from 10:00, src, dest, loss) rows."""
    return pd.DataFrame([(T0 + pd.Timedelta(minutes=m, seconds=s), a, b, v) for m, a, b, v, *rest in points
                         for s in [rest[0] if rest else 0]], columns=["ts", "src", "dest", "loss"])


def stored(wh, view: str, columns: list[str]) -> dict:
    return rows_by_part(wh.execute(f"SELECT * FROM {view}"), columns)


def formulas(explained) -> str:
    """A window view's EXPLAIN section of index formulas (the translation's notes, reads per subscript)."""
    [text] = [text for title, text in explained.sections if title.startswith("Index formulas")]
    return text


def verified(wh, view: str) -> None:
    table = wh.execute(f"VERIFY VIEW {view}")
    assert len(table) and table["equal"].all(), table


# -- the thesis's worked example (section 1 / 4.2) -------------------------------------------------------
def test_thesis_view1_part_at_1001_is_420_plus_7_minus_5(warehouse):
    warehouse.execute(STREAM)
    start = pd.Timestamp("2015-01-01 09:01")
    losses = [5] + [7] * 58 + [9] + [7]        # 09:01 .. 10:01; the window ending 10:00 sums to 420
    data = pd.DataFrame({"ts": [start + pd.Timedelta(minutes=k) for k in range(len(losses))],
                         "src": "10.0.0.1", "dest": "10.0.0.2", "loss": losses})
    warehouse.ingest("M", data[data["ts"] <= "2015-01-01 10:00"])
    warehouse.execute("CREATE VIEW View1 AS SELECT src, dest, sum(loss) AS sum_loss FROM M [WINDOW 60 MINUTES] "
                      "GROUP BY src, dest")
    assert warehouse.read_part("View1", "2015-01-01 10:00")["sum_loss"].tolist() == [420]
    report = warehouse.ingest("M", data[data["ts"] > "2015-01-01 10:00"])
    assert warehouse.read_part("View1", "2015-01-01 10:01")["sum_loss"].tolist() == [420 + 7 - 5] == [422]
    step = [s for s in report.steps if s.view == "View1__sum"][0]
    assert step.how == "update"
    pre = 23668440 + 1          # 10:01
    assert [(r.name, r.first, r.last) for r in step.lineage] == [
        ("View1__sum", pre - 1, pre - 1), ("View1__pre", pre, pre), ("View1__pre", pre - 60, pre - 60)]
    assert warehouse.read_part("View1__pre", "2015-01-01 09:01")["__s0"].tolist() == [5]
    assert warehouse.recompute("View1", "2015-01-01 10:01")["sum_loss"].tolist() == [422]


# -- zero and negative sums, groups leaving ----------------------------------------------------------
def test_zero_sum_group_stays_until_its_count_reaches_zero(warehouse):
    warehouse.execute(STREAM)
    warehouse.ingest("M", frame([(0, "a", "b", 5), (1, "a", "b", -5), (2, "x", "y", 1), (3, "x", "y", -4),
                                 (4, "x", "y", 0), (5, "x", "y", 0)]))
    warehouse.execute("CREATE VIEW W AS SELECT src, sum(loss) AS total, count(*) AS n FROM M [WINDOW 3 MINUTES] "
                      "GROUP BY src")
    got = stored(warehouse, "W", ["src", "total", "n"])
    minute = lambda k: T0 + pd.Timedelta(minutes=k)  # noqa: E731
    assert got == {minute(0): [("a", 5, 1)],
                   minute(1): [("a", 0, 2)],                       # sum 0: still in the window
                   minute(2): [("a", 0, 2), ("x", 1, 1)],
                   minute(3): [("a", -5, 1), ("x", -3, 2)],        # negative sums stay too
                   minute(4): [("x", -3, 3)],                      # a left: its count reached 0
                   minute(5): [("x", -4, 3)]}
    verified(warehouse, "W")


def test_null_values_sum_to_null_and_count_exactly(warehouse):
    warehouse.execute(STREAM)
    warehouse.ingest("M", frame([(0, "a", "b", None), (1, "a", "b", 4), (2, "a", "b", None), (3, "a", "b", None)]))
    warehouse.execute("CREATE VIEW W AS SELECT src, sum(loss) AS total, count(loss) AS nn, count(*) AS n, "
                      "avg(loss) AS mean, max(loss) AS peak FROM M [WINDOW 2 MINUTES] GROUP BY src")
    got = stored(warehouse, "W", ["total", "nn", "n", "mean", "peak"])
    assert list(got.values()) == [[(None, 0, 1, None, None)], [(4, 1, 2, 4.0, 4)], [(4, 1, 2, 4.0, 4)],
                                  [(None, 0, 2, None, None)]]
    verified(warehouse, "W")


# -- the issue's example: WHERE, HAVING, AVG, MAX -----------------------------------------------------
ISSUE_VIEW = """CREATE VIEW Loss5 AS
  SELECT src, dest, sum(loss) AS total, count(*) AS n, avg(loss) AS mean, max(loss) AS peak
  FROM M [WINDOW 5 MINUTES]
  WHERE loss >= 0
  GROUP BY src, dest
  HAVING count(*) >= 3"""


def test_where_having_avg_and_max_match_the_oracle(warehouse):
    warehouse.execute(STREAM)
    points = [(m, s, "d", (m * 7 + len(s) * 3) % 11 - 3, sec) for m in range(12) for s in ("a", "bb")
              for sec in (0, 30) if (m + len(s)) % 4]
    data = frame(points)
    warehouse.ingest("M", data)
    warehouse.execute(ISSUE_VIEW)
    expected = {}
    for stamp, window in window_parts(data, 60, 300, 60):
        agg = aggregate(window[window["loss"] >= 0], ["src", "dest"])
        agg = agg[agg["n"] >= 3]
        if len(agg):
            expected[stamp] = rows(agg, ["src", "dest", "total", "n", "mean", "peak"])
    got = stored(warehouse, "Loss5", ["src", "dest", "total", "n", "mean", "peak"])
    assert got.keys() == expected.keys()
    for stamp in expected:
        assert close(got[stamp], expected[stamp]), (stamp, got[stamp], expected[stamp])
    verified(warehouse, "Loss5")
    schema = {f.name: f.dataType.simpleString() for f in warehouse.catalog.get("Loss5").schema.fields}
    assert schema == {"src": "string", "dest": "string", "total": "bigint", "n": "bigint", "mean": "double",
                      "peak": "int"}


# -- holistic aggregates mixed with others --------------------------------------------------------------
MIXED_VIEW = """CREATE VIEW Mix AS
  SELECT src, sum(loss) AS total, max(loss) AS peak, count(DISTINCT dest) AS nd, percentile_approx(loss, 0.5) AS med
  FROM M [WINDOW 3 MINUTES]
  WHERE loss IS NULL OR loss > 1
  GROUP BY src
  HAVING count(DISTINCT dest) >= 2 OR max(loss) > 6"""


def test_mixed_view_recomputes_only_its_holistic_columns_over_the_window(warehouse):
    warehouse.execute(STREAM)
    warehouse.ingest("M", frame([(0, "a", "x", 5), (0, "a", "y", 1), (1, "a", "x", 3), (1, "b", "x", 7),
                                 (2, "a", "y", 5), (2, "b", None, 2), (3, "b", "z", None), (4, "a", "x", 9),
                                 (4, None, "x", 8)]))
    [created, explain] = warehouse.run(MIXED_VIEW + "; EXPLAIN VIEW Mix")
    minute = lambda k: T0 + pd.Timedelta(minutes=k)  # noqa: E731
    assert stored(warehouse, "Mix", ["src", "total", "peak", "nd", "med"]) == {
        minute(1): [("b", 7, 7, 1, 7)],
        minute(2): [("a", 13, 5, 2, 5), ("b", 9, 7, 1, 2)],     # (a, y, 1) fails WHERE: a has 1 dest at 10:00-10:01
        minute(3): [("a", 8, 5, 2, 3), ("b", 9, 7, 2, 2)],      # count(DISTINCT) skips the NULL dest
        minute(4): [(None, 8, 8, 1, 8), ("a", 14, 9, 2, 5)]}    # the NULL group joins its holistic values
    verified(warehouse, "Mix")
    assert {d.name for d in warehouse.catalog.views()} == {"Mix", "Mix__pre", "Mix__sum"}   # 3 parts: MAX reads __pre
    assert "(nd, med recomputed over the window)" in created.message
    for phrase in ("Columns maintained incrementally: total, peak.",
                   "Columns recomputed over the window (3 part(s) of M) at every step: nd, med.",
                   "COUNT(DISTINCT dest): holistic -> recomputed over the window's parts M[j-2 .. j]",
                   "SUM(loss): subtractable", "MAX(loss): distributive", "M[j-2 .. j] = all 3 window part(s)"):
        assert phrase in formulas(explain), phrase
    assert "NOT maintained incrementally" not in formulas(explain)
    newest = warehouse.parts("Mix")["lineage"].iloc[-1]
    assert "Mix__sum[23668444]" in newest and "M[23668442 .. 23668444]" in newest


# -- tumbling, slides, partial windows, global aggregates -------------------------------------------------
def test_tumbling_window_has_no_state_and_says_so(warehouse):
    warehouse.execute(STREAM)
    data = frame([(m, "a", "b", m) for m in range(7)])
    warehouse.ingest("M", data)
    [created, explain] = warehouse.run("CREATE VIEW T AS SELECT src, sum(loss) AS total, max(loss) AS peak "
                                       "FROM M [WINDOW 3 MINUTES SLIDE 3 MINUTES] GROUP BY src; EXPLAIN VIEW T")
    assert "Tumbling window" in formulas(explain) and "no incremental state" in formulas(explain)
    assert [d.name for d in warehouse.catalog.views()] == ["T"]
    got = stored(warehouse, "T", ["src", "total", "peak"])
    assert got == {T0: [("a", 3, 2)], T0 + pd.Timedelta(minutes=3): [("a", 12, 5)]}   # 10:06 is incomplete
    assert warehouse.catalog.get("T").partition_length == 180


def test_slide_longer_than_the_partition(warehouse):
    warehouse.execute(STREAM)
    data = frame([(m, "a", "b", m - 4) for m in range(1, 13)] + [(m, "c", "d", 2) for m in (2, 3, 9)])
    warehouse.ingest("M", data)
    warehouse.execute("CREATE VIEW S2 AS SELECT src, sum(loss) AS total, count(*) AS n, min(loss) AS low "
                      "FROM M [WINDOW 6 MINUTES SLIDE 2 MINUTES] GROUP BY src")
    assert warehouse.catalog.get("S2").partition_length == 120
    expected = {}
    for stamp, window in window_parts(data, 60, 360, 120):
        agg = aggregate(window, ["src"])
        expected[stamp] = rows(agg, ["src", "total", "n", "low"])
    assert stored(warehouse, "S2", ["src", "total", "n", "low"]) == {k: v for k, v in expected.items() if v}
    verified(warehouse, "S2")


def test_partial_windows_at_the_start_and_a_global_aggregate(warehouse):
    warehouse.execute(STREAM)
    data = frame([(0, "a", "b", 2), (1, "a", "b", 3), (3, "c", "d", -1), (6, "c", "d", 10)])
    warehouse.ingest("M", data)
    warehouse.execute("CREATE VIEW G AS SELECT count(*) AS n, sum(loss) AS total, max(loss) AS peak "
                      "FROM M [WINDOW 2 MINUTES]")
    got = stored(warehouse, "G", ["n", "total", "peak"])
    assert list(got.values()) == [[(1, 2, 2)], [(2, 5, 3)], [(1, 3, 3)], [(1, -1, -1)], [(1, -1, -1)],
                                  [(0, None, None)], [(1, 10, 10)]]
    assert min(got) == T0, "the view starts with the stream, not with its helper blocks"
    verified(warehouse, "G")


def test_double_sums_are_refreshed_and_said_so(warehouse):
    warehouse.execute("CREATE STREAM D (ts TIMESTAMP, k STRING, v DOUBLE) PARTITION LENGTH 60")
    data = pd.DataFrame({"ts": [T0 + pd.Timedelta(minutes=m) for m in range(10)], "k": "a",
                         "v": [0.1, 1e10, -1e10, 0.3, None, 2.5, 0.7, -0.2, 1e-3, 3.0]})
    warehouse.ingest("D", data)
    [_, explain] = warehouse.run("CREATE VIEW DV AS SELECT k, sum(v) AS s, avg(v) AS a FROM D [WINDOW 3 MINUTES] "
                                 "GROUP BY k; EXPLAIN VIEW DV")
    assert "REFRESH EVERY 16 PARTS" in warehouse.catalog.get("DV__sum").definition   # max(16, 4 * 3 parts)
    assert "drift" in formulas(explain)
    # the sum helper's own notes (SHOW, lineage, EXPLAIN of the helper) say so too
    assert "recomputed from DV__pre every 16 parts (REFRESH EVERY)" in warehouse.catalog.get("DV__sum").notes
    got = stored(warehouse, "DV", ["s", "a"])
    for (stamp, window) in window_parts(data.rename(columns={"v": "loss"}), 60, 180, 60):
        agg = aggregate(window, [])
        assert close(got[stamp], [(agg["total"][0], agg["mean"][0])], 1e-6), stamp


# -- windows over views, DECIMAL ---------------------------------------------------------------------
def test_windows_over_a_hand_written_view_and_over_a_translated_view(warehouse):
    warehouse.execute(STREAM)
    warehouse.ingest("M", frame([(0, "a", "d", 1), (0, "b", "d", -1), (1, "a", "d", 2), (2, "b", "d", 3),
                                 (2, "a", "d", -2), (4, "a", "d", 4), (4, "b", "d", 5), (5, "b", "d", 1)]))
    warehouse.run("CREATE VIEW H AS INITIALIZE H[i] AS SELECT src, loss * 2 AS loss2 FROM M[i] WHERE loss > 0 "
                  "UPDATE H[j] AS SELECT src, loss * 2 AS loss2 FROM M[j] WHERE loss > 0;"
                  "CREATE VIEW HW AS SELECT src, sum(loss2) AS total, max(loss2) AS peak FROM H [WINDOW 3 MINUTES] "
                  "GROUP BY src;"
                  "CREATE VIEW WW AS SELECT count(*) AS n, sum(total) AS total, max(peak) AS peak, "
                  "count(DISTINCT src) AS groups FROM HW [WINDOW 2 MINUTES]")
    minute = lambda k: T0 + pd.Timedelta(minutes=k)  # noqa: E731
    assert stored(warehouse, "HW", ["src", "total", "peak"]) == {
        minute(0): [("a", 2, 2)], minute(1): [("a", 6, 4)], minute(2): [("a", 6, 4), ("b", 6, 6)],
        minute(3): [("a", 4, 4), ("b", 6, 6)], minute(4): [("a", 8, 8), ("b", 16, 10)],
        minute(5): [("a", 8, 8), ("b", 12, 10)]}
    assert stored(warehouse, "WW", ["n", "total", "peak", "groups"]) == {
        minute(0): [(1, 2, 2, 1)], minute(1): [(2, 8, 4, 1)], minute(2): [(3, 18, 6, 2)],
        minute(3): [(4, 22, 6, 2)], minute(4): [(4, 34, 10, 2)], minute(5): [(4, 44, 10, 2)]}
    assert warehouse.catalog.get("HW__pre").sources == ("H",) and "HW" in warehouse.catalog.get("WW__pre").sources
    verified(warehouse, "HW")
    verified(warehouse, "WW")


def test_decimal_sums_and_averages_are_exact(warehouse):
    warehouse.execute("CREATE STREAM D (ts TIMESTAMP, k STRING, v DECIMAL(10,2)) PARTITION LENGTH 60")
    values = {"a": ["0.10", "0.20", "0.30", "12345678.91", "-12345678.91", "0.01", "0.01", None, "0.00", "99999999.99"],
              "b": ["-0.07", "0.33", None, "0.01", "0.02", "0.02", "-0.05", "1.00", "0.10", "0.20"]}
    data = pd.DataFrame([(T0 + pd.Timedelta(minutes=m), k, None if v is None else Decimal(v))
                         for k, vs in values.items() for m, v in enumerate(vs)], columns=["ts", "k", "v"])
    warehouse.ingest("D", data)
    [_, explain] = warehouse.run("CREATE VIEW DV AS SELECT k, sum(v) AS s, avg(v) AS a, count(v) AS n FROM D "
                                 "[WINDOW 3 MINUTES] GROUP BY k; EXPLAIN VIEW DV")
    assert "Sums are exact" in formulas(explain) and "REFRESH EVERY" not in warehouse.catalog.get("DV__sum").definition
    schema = {f.name: f.dataType.simpleString() for f in warehouse.catalog.get("DV").schema.fields}
    assert schema == {"k": "string", "s": "decimal(20,2)", "a": "decimal(14,6)", "n": "bigint"}
    expected = {stamp: rows(aggregate(window, ["k"], value="v", mean_scale=6), ["k", "total", "mean", "nn"])
                for stamp, window in window_parts(data, 60, 180, 60)}
    got = stored(warehouse, "DV", ["k", "s", "a", "n"])
    assert got == expected                       # Decimal equality: not one unit in the last place off
    minute = lambda k: T0 + pd.Timedelta(minutes=k)  # noqa: E731
    assert got[minute(4)][0] == ("a", Decimal("0.30"), Decimal("0.100000"), 3)    # 0.3 after +/- 12345678.91
    assert got[minute(5)] == [("a", Decimal("0.01"), Decimal("0.003333"), 3),
                              ("b", Decimal("0.05"), Decimal("0.016667"), 3)]      # avg rounds half up
    verified(warehouse, "DV")


# -- EXPLAIN, lineage, DROP ---------------------------------------------------------------------------
def test_explain_lineage_and_parts_read_per_max_step(warehouse):
    warehouse.execute(STREAM)
    width = 20
    data = frame([(m, "a", "b", (m * 5) % 13) for m in range(23)])
    warehouse.ingest("M", data)
    [_, explain] = warehouse.run(f"CREATE VIEW P AS SELECT src, count(DISTINCT loss) AS nd, "
                                 f"percentile_approx(loss, 0.5) AS med FROM M [WINDOW {width} MINUTES] GROUP BY src;"
                                 f" EXPLAIN VIEW P")
    assert "holistic" in formulas(explain).lower() and "NOT maintained incrementally" in formulas(explain)
    warehouse.execute(f"CREATE VIEW Q AS SELECT src, max(loss) AS peak, min(loss) AS low, count(*) AS n "
                      f"FROM M [WINDOW {width} MINUTES] GROUP BY src")
    detail = formulas(warehouse.run("EXPLAIN VIEW Q")[0])
    for phrase in ("subtractable", "distributive, not subtractable", "chunked prefix and suffix", "chunks of 10 parts",
                   "Q__chunks (PARTITION LENGTH 60)", "Q__chunks[j-1 .. j-1-(10-j%10)/10]", "Q__pre[j/10*20-1-j]",
                   "Parts read per step of Q", "Q__chunks[j-2*((j-19)%10)] (suffix)",
                   "Q__chunks[j-((j-19)%10) .. j-((j-19)%10)-(10-((j-19)%10))/10] (prefix)", "Q__chunks[j] (prefix)",
                   "= at most 3 parts for max/min whatever W is", "Q__chunks reads at most 3 parts per step",
                   "Q__sum[j]", "Naive baseline"):
        assert phrase in detail, phrase
    lineage = warehouse.parts("Q")["lineage"]
    for text in lineage.iloc[width:]:            # full windows
        ranges = [r.split("[")[1].rstrip("]") for r in text.split(", ") if not r.startswith("Q__sum")]
        reads = sum(int(b) - int(a) + 1 if " .. " in r else 1 for r in ranges
                    for a, b in [r.split(" .. ") if " .. " in r else (r, r)])
        assert reads <= 3, text
    full = stored(warehouse, "Q", ["src", "peak", "low", "n"])
    for stamp, window in window_parts(data, 60, width * 60, 60):
        assert full[stamp] == rows(aggregate(window, ["src"]), ["src", "peak", "low", "n"])
    verified(warehouse, "Q")
    assert warehouse.catalog.get("Q__chunks").owner == "Q" and warehouse.catalog.get("Q").origin.startswith("CREATE")


LOSS60 = ("CREATE VIEW Loss60 AS SELECT src, sum(loss) AS total, max(loss) AS worst "
          "FROM M [WINDOW 60 MINUTES SLIDE 30 MINUTES] GROUP BY src")


def test_explain_draws_the_chain_and_names_the_parts_each_next_step_reads(warehouse):
    warehouse.execute(STREAM)
    warehouse.execute(LOSS60)
    before = warehouse.run("EXPLAIN VIEW Loss60")[0]
    [(title, strategies)] = before.tables              # no part yet: no table of parts read
    assert title == "Strategy per aggregate" and strategies.to_dict("records") == [
        {"aggregate": "SUM(loss)", "strategy": "subtractable",
         "why": "a window's value is the previous window's plus the new parts' minus the expired parts'",
         "kept as": "running sums in Loss60__sum"},
        {"aggregate": "MAX(loss)", "strategy": "distributive",
         "why": "parts' values combine, but an expired part's value cannot be taken out",
         "kept as": "prefix and suffix maxima/minima over chunks of 30 parts in Loss60__chunks"}]
    assert before.detail == (
        "Loss60 is a sliding window over M: WINDOW 1 HOUR = 60 parts, SLIDE 30 MINUTES = 30 parts of M, maintained "
        "by the views drawn above (incremental).\n\n"
        "No part is ready yet: M has no part. Once it has one, the first part of each view reads: Loss60__pre reads "
        "M (its part); Loss60__chunks reads Loss60__pre (its part and one older); Loss60__sum reads Loss60__pre "
        "(its 30 parts, the expired 30); Loss60 reads Loss60__sum (its part); Loss60 reads Loss60__chunks (suffix, "
        "chunk, prefix); parts before M's first count as empty, so the first windows are partial.")
    assert all(f">{name}<" in before.figure for name in ("M", "Loss60__pre", "Loss60__chunks", "Loss60__sum",
                                                        "Loss60"))
    assert "Loss60__chunks[j*30+29] (prefix)" in formulas(before)     # the index formulas, folded
    assert [title for title, _ in before.sections] == ["Index formulas: the parts each view reads, per subscript"] \
        + [f"ViewDF of {name}" for name in ("Loss60__pre", "Loss60__chunks", "Loss60__sum", "Loss60")]
    plan = replan_window(warehouse.catalog.get("Loss60"), warehouse.catalog, warehouse.maintainer.definer)
    assert [(e.source, e.target, e.label) for e in chain_edges(plan.translation)] == [
        ("M", "Loss60__pre", "its part"), ("Loss60__pre", "Loss60__chunks", "its part and one older"),
        ("Loss60__chunks", "Loss60__chunks", "the part before"),
        ("Loss60__pre", "Loss60__sum", "its 30 parts, the expired 30"),
        ("Loss60__sum", "Loss60__sum", "the part before"), ("Loss60__sum", "Loss60", "its part"),
        ("Loss60__chunks", "Loss60", "suffix, chunk, prefix")]
    drawn = own_svg(plan.translation)                   # the drawing without Graphviz
    assert (drawn.count('class="node"'), drawn.count('class="edge"')) == (5, 7)

    warehouse.ingest("M", frame([(0, "a", "b", 4), (1, "b", "c", 6)]))
    after = warehouse.run("EXPLAIN VIEW Loss60")[0]
    title, reads = after.tables[1]
    # Loss60__chunks at 10:02 (the third part of its chunk): its part before, its part of __pre and the one its
    # suffix adds (09:57), instead of the 3 parts its prefix and the 3 its suffix cover; the first running sums
    # read the whole window; Loss60 reads the sums and both sides of Loss60__chunks[10:29]
    assert title == "Parts the next step of each view reads" and reads.to_dict("records") == [
        {"view": "Loss60__pre", "part": "2015-01-01 10:02:00", "reads": "M[2015-01-01 10:02:00]",
         "parts read": 1, "instead of": 1},
        {"view": "Loss60__chunks", "part": "2015-01-01 10:02:00",
         "reads": "Loss60__chunks[2015-01-01 10:01:00], Loss60__pre[2015-01-01 10:02:00], "
                  "Loss60__pre[2015-01-01 09:57:00]", "parts read": 3, "instead of": 6},
        {"view": "Loss60__sum", "part": "2015-01-01 10:00:00",
         "reads": "Loss60__pre[2015-01-01 09:30:00 .. 10:29:00]", "parts read": 60, "instead of": 60},
        {"view": "Loss60", "part": "2015-01-01 10:00:00",
         "reads": "Loss60__sum[2015-01-01 10:00:00], Loss60__chunks[2015-01-01 10:29:00]", "parts read": 2,
         "instead of": 60}]
    assert after.detail.endswith("A step of Loss60 reads 2 parts instead of the 60 parts of M that recomputing its "
                                 "window reads; the table lists the next step of each view of the chain.")
    assert "Next part: Loss60[788948] (2015-01-01 10:00:00), INITIALIZE, waiting." in after.detail


def test_drop_cascades_to_helpers_and_helpers_cannot_be_dropped_alone(warehouse):
    warehouse.execute(STREAM)
    warehouse.ingest("M", frame([(m, "a", "b", m) for m in range(5)]))
    warehouse.execute("CREATE VIEW Q AS SELECT src, max(loss) AS peak, sum(loss) AS s FROM M [WINDOW 4 MINUTES] "
                      "GROUP BY src")
    assert {d.name for d in warehouse.catalog.views()} == {"Q", "Q__pre", "Q__chunks", "Q__sum"}
    fails(warehouse, "DROP VIEW Q__chunks", "Q__chunks", "helper view of Q")
    [result] = warehouse.run("DROP VIEW Q")
    assert warehouse.catalog.views() == [] and "Q__pre" in result.message
    warehouse.execute("CREATE VIEW Q AS SELECT src, min(loss) AS low FROM M [WINDOW 4 MINUTES] GROUP BY src")
    warehouse.execute("DROP STREAM M CASCADE")
    assert warehouse.catalog.objects == {}


# -- errors -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory):
    from viewdf_magic import Warehouse
    wh = Warehouse(str(tmp_path_factory.mktemp("window_errors") / "wh"), spark=spark, progress=False)
    wh.execute(STREAM + "; CREATE TABLE owners (src STRING, owner STRING)")
    wh.ingest("M", frame([(0, "a", "b", 1)]))
    return wh


WINDOW_ERRORS = {
    "window not a multiple": ("CREATE VIEW V AS SELECT src, sum(loss) FROM M [WINDOW 90 SECONDS] GROUP BY src",
                              "90 SECONDS", ("WINDOW 90 s is not a multiple", "partition length 60")),
    "slide not a multiple": ("CREATE VIEW V AS SELECT src, sum(loss) FROM M\n  [WINDOW 1 HOURS SLIDE 30 SECONDS] "
                             "GROUP BY src", "30 SECONDS", ("SLIDE 30 s is not a multiple",)),
    "slide longer than window": ("CREATE VIEW V AS\nSELECT src, sum(loss) FROM M [WINDOW 2 MINUTES SLIDE 3 MINUTES] "
                                 "GROUP BY src", "3 MINUTES", ("longer than the WINDOW",)),
    "no aggregate, no group by": ("CREATE VIEW V AS\n  SELECT src, loss FROM M [WINDOW 5 MINUTES]", "SELECT src",
                                  ("must aggregate",)),
    "column not grouped": ("CREATE VIEW V AS SELECT src, dest, sum(loss) FROM M [WINDOW 5 MINUTES] GROUP BY src",
                           "dest", ("must be in GROUP BY or inside an aggregate",)),
    "join": ("CREATE VIEW V AS SELECT src, sum(loss) FROM M [WINDOW 5 MINUTES] JOIN owners USING (src) GROUP BY src",
             "owners", ("JOIN is not supported",)),
    "unknown stream": ("CREATE VIEW V AS SELECT sum(loss) FROM Nope [WINDOW 5 MINUTES]", "Nope",
                       ("unknown stream or view 'Nope'",)),
    "table": ("CREATE VIEW V AS SELECT count(*) FROM owners [WINDOW 5 MINUTES]", "owners", ("is a table",)),
    "unknown column": ("CREATE VIEW V AS\nSELECT src, sum(lossy) FROM M [WINDOW 5 MINUTES] GROUP BY src", "lossy",
                       ("lossy",)),
    "unknown column after the window": ("CREATE VIEW V AS SELECT src, sum(loss) FROM M [WINDOW 5 MINUTES]\n"
                                        "WHERE nope > 1 GROUP BY src", "nope", ("nope",)),
    "bad unit": ("CREATE VIEW V AS SELECT sum(loss) FROM M [WINDOW 5 FORTNIGHTS]", "FORTNIGHTS",
                 ("expected ']'",)),
    "two windows": ("CREATE VIEW V AS SELECT sum(loss) FROM M [WINDOW 5 MINUTES] [WINDOW 2 MINUTES]",
                    ("[", 2), ("only one [WINDOW",)),
    "order by": ("CREATE VIEW V AS SELECT src, sum(loss) FROM M [WINDOW 5 MINUTES] GROUP BY src ORDER BY src",
                 ("src", 3), ("ORDER BY is not supported",)),
    "name taken": ("CREATE VIEW M AS SELECT sum(loss) FROM M [WINDOW 5 MINUTES]", ("M", 1), ("already exists",)),
}


@pytest.mark.parametrize("text, needle, phrases", WINDOW_ERRORS.values(), ids=WINDOW_ERRORS.keys())
def test_window_errors(loaded, text, needle, phrases):
    fails(loaded, text, needle, *phrases)


@pytest.mark.parametrize("clause, unit, what, meant", [("[WINDOW 3 MINUTS]", "MINUTS", "WINDOW", "MINUTES"),
                                                       ("[WINDOW 1 HOUR SLIDE 5 mintues]", "mintues", "SLIDE", "MINUTES")])
def test_misspelt_unit_gets_a_suggestion(loaded, clause, unit, what, meant):
    error = fails(loaded, f"CREATE VIEW V AS SELECT sum(loss) FROM M {clause}", unit)
    assert error.message == f"expected a unit after the {what} length, found '{unit}'; did you mean {meant}?"
    assert str(error).splitlines()[-1].strip() == "^" * len(unit)


# -- the chunked max/min cover, brute force (no Spark) ------------------------------------------------
def _engine(text: str) -> Callable[[int], int]:
    subscript = parse_subscript(Fragment(text, 0, len(text)), {"j"})
    return lambda j: subscript.evaluate({"j": j})


def test_chunk_helpers_hold_what_the_cover_assumes():
    """The chunks helper's prefix[x] = prefix[chunk_previous] + pre[x] and suffix[x] = suffix[chunk_previous] +
    pre[suffix_source]: unrolled, prefix[x] is x's chunk up to x and suffix[x] the last x % C + 1 parts of the
    previous chunk."""
    for chunk in range(2, 12):
        source = _engine(suffix_source(chunk))
        low, high = (_engine(t) for t in chunk_previous(chunk).split(" .. "))
        prefix, suffix = {}, {}
        for x in range(-3 * chunk, 5 * chunk):
            previous = range(low(x), high(x) + 1)
            assert len(previous) == (0 if x % chunk == 0 else 1) and all(p < x for p in previous)
            prefix[x] = set().union(*(prefix.get(p, set()) for p in previous)) | {x}
            suffix[x] = set().union(*(suffix.get(p, set()) for p in previous)) | {source(x)}
            start = x - x % chunk
            assert prefix[x] == set(range(start, x + 1))
            assert suffix[x] == set(range(start - 1 - x % chunk, start))


def test_chunked_cover_covers_every_window_exactly_with_three_reads():
    for width in range(2, 70):
        for slide in sorted({s for s in (1, 2, 3, 5, 7, width - 1) if 0 < s < width}):
            refs = extreme_cover(slide, width)
            chunk = chunk_length(width)
            holds = {"pre": lambda x: {x},
                     "prefix": lambda x: set(range(x - x % chunk, x + 1)),
                     "suffix": lambda x: set(range(x - x % chunk - 1 - x % chunk, x - x % chunk))}
            bounds = [(ref.side, [_engine(t) for t in ref.subscript.split(" .. ")]) for ref in refs]
            for j in range(-2 * width - 3, 3 * width + 3):
                last = (j + 1) * slide - 1
                read = [(side, x) for side, ends in bounds for x in range(ends[0](j), ends[-1](j) + 1)]
                assert all(x <= last for _, x in read), (width, slide, j, refs)       # never a future part
                assert len(read) == len(set(read)) <= 3, (width, slide, j, refs)      # no part's side read twice
                covered = set().union(*(holds[side](x) for side, x in read))
                assert covered == set(range(last - width + 1, last + 1)), (width, slide, j, refs)
