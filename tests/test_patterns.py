"""Pattern views: positioned errors, EXPLAIN (FSM drawing, tables, ViewDF text, plans), the round
trip of the generated ViewDFs, DROP of the helper, and Direct with a scope."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ElementTree

import pandas as pd
import pytest

from test_errors import fails
from viewdf_magic.engine.pattern_views import replan
from viewdf_magic.translation.fsm_diagram import fsm_dot, fsm_svg, own_svg

START = pd.Timestamp("2015-01-01 10:00")
STREAM = "CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60"
VIEW1 = """CREATE VIEW View1 AS
  SELECT src, dest, a.ts AS since, count(*) AS ct, sum(loss) AS sum_loss, max(loss) AS peak
  FROM M PATTERN [a, b, c, d+]
  WHERE a.loss > 10 AND b.loss > 10 AND c.loss > 10 AND d.loss > 10
  GROUP BY src, dest"""
PAPER_LOSSES = [6, 12, 15, 24, 20, 16, 7]


def minutes(rows: list[tuple[int, str, str, int]]) -> pd.DataFrame:
    """(minute, src, dest, loss) rows as a batch for M."""
    return pd.DataFrame([(START + pd.Timedelta(minutes=m), s, d, loss) for m, s, d, loss in rows],
                        columns=["ts", "src", "dest", "loss"])


def paper_warehouse(warehouse, losses: list[int] = PAPER_LOSSES):
    """The paper's losses for pair (s, d) and a steady 20 for (t, d), one ingest for all minutes."""
    warehouse.execute(STREAM)
    warehouse.execute(VIEW1)
    warehouse.ingest("M", minutes([row for minute, loss in enumerate(losses)
                                   for row in ((minute, "s", "d", loss), (minute, "t", "d", 20))]))
    return warehouse


@pytest.fixture(scope="module")
def paper(spark, tmp_path_factory):
    """A warehouse with View1 over the paper's losses, shared by the tests that only read it."""
    from viewdf_magic import Warehouse
    return paper_warehouse(Warehouse(str(tmp_path_factory.mktemp("paper") / "wh"), spark=spark, progress=False))


def rows(frame: pd.DataFrame) -> list[tuple]:
    frame = frame.drop(columns=[c for c in ("PART_TIMESTAMP",) if c in frame.columns])
    return sorted(map(tuple, frame.astype(object).where(frame.notna(), None).values.tolist()))


# -- errors ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory):
    from viewdf_magic import Warehouse
    wh = Warehouse(str(tmp_path_factory.mktemp("pattern_errors") / "wh"), spark=spark, progress=False)
    wh.execute(STREAM + "; CREATE TABLE owners (src STRING, owner STRING)")
    wh.ingest("M", minutes([(0, "a", "b", 1)]))
    return wh


def view(pattern: str, where: str, select: str = "src, count(*) AS ct", tail: str = " GROUP BY src") -> str:
    return f"CREATE VIEW P AS\n  SELECT {select}\n  FROM M PATTERN {pattern}\n  WHERE {where}{tail}"


PATTERN_ERRORS = {
    "OR across variables": (view("[a, b]", "a.loss > 10 OR b.loss > 10"), "a.loss > 10 OR",
                            ("OR across pattern variables is not supported",)),
    "unqualified column in WHERE": (view("[a, b]", "loss > 10"), "loss >", ("qualify 'loss'",)),
    "unknown variable": (view("[a, b]", "c.loss > 10"), "c.loss", ("'c' is not a pattern variable",)),
    "unknown column": (view("[a, b]", "a.lossy > 10"), "a.lossy", ("M has no column 'lossy'",)),
    "occurrence of a single variable": (view("[a, b]", "a[1].loss > 10"), "a[1]", ("not a Kleene variable",)),
    "unsupported occurrence": (view("[a, b+]", "b[i-2].loss > 10"), "b[i-2]", ("unsupported occurrence",)),
    "ambiguous Kleene reference": (view("[a+, b]", "b.loss > a.loss"), "a.loss",
                                   ("'a' is a Kleene variable", "last(a.loss)")),
    "earlier occurrences outside an aggregate": (view("[a, b+]", "b[i].loss > b[..i-1].loss"), "b[..i-1]",
                                                 ("must be inside an aggregate",)),
    "previous of another variable": (view("[a+, b]", "b.loss > a[i-1].loss"), "a[i-1]",
                                     ("can only be used in a's own conditions",)),
    "unsupported aggregate": (view("[a, b+]", "b[i].loss > stddev(b[..i-1].loss)"), "stddev",
                              ("use sum, count, min, max or avg",)),
    "not a condition": (view("[a, b]", "a.loss + 1"), "a.loss + 1", ("must be true or false",)),
    "type error": (view("[a, b]", "a.loss > array(1)"), "a.loss > array", ()),
    "ungrouped column in SELECT": (view("[a, b]", "a.loss > 1", select="dest, count(*)"), "dest,",
                                   ("must be in GROUP BY",)),
    "Kleene column in SELECT": (view("[a, b+]", "a.loss > 1", select="b.loss"), "b.loss",
                                ("select b[1].loss, last(b.loss)",)),
    "unclosed pattern": ("CREATE VIEW P AS SELECT count(*) FROM M PATTERN [a, b WHERE a.loss > 1", "WHERE",
                         ("expected ',' or ']'",)),
    "star in pattern": ("CREATE VIEW P AS SELECT count(*) FROM M PATTERN [a, b*] WHERE a.loss > 1", ("*", 2),
                        ("only + is supported",)),
    "repeated variable": ("CREATE VIEW P AS SELECT count(*) FROM M PATTERN [a, a+] WHERE a.loss > 1", "a+",
                          ("listed twice",)),
    "bad contiguity": (view("[a, b]", "a.loss > 1", tail=" GROUP BY src CONTIGUITY ROWS"), "ROWS",
                       ("expected EVENTS or PARTS",)),
    "pattern over a table": ("CREATE VIEW P AS SELECT count(*) FROM owners PATTERN [a] WHERE a.src = 'x'",
                             "owners", ("is a table; a pattern reads a stream",)),
    "alias before PATTERN": ("CREATE VIEW P AS SELECT count(*) FROM M x PATTERN [a] WHERE a.loss > 1", "x PATTERN",
                             ("aliases and joins are not supported",)),
    "two output columns with one name": (view("[a, b]", "a.loss > 1", select="src, a.ts AS src"), "a.ts",
                                         ("two output columns are named 'src'",)),
}


@pytest.mark.parametrize("text, needle, phrases", PATTERN_ERRORS.values(), ids=PATTERN_ERRORS.keys())
def test_pattern_errors(loaded, text, needle, phrases):
    fails(loaded, text, needle, *phrases)


# -- EXPLAIN ---------------------------------------------------------------------------------------
def _svg_counts(svg: str) -> tuple[int, int, set[str]]:
    root = ElementTree.fromstring(svg)
    groups = [g for g in root.iter() if g.tag.endswith("}g")]
    nodes = [g for g in groups if g.get("class") == "node"]
    edges = [g for g in groups if g.get("class") == "edge"]
    texts = {"".join(t.itertext()).strip() for g in nodes for t in g.iter() if t.tag.endswith("}text")}
    return len(nodes), len(edges), texts


def test_explain_shows_fsm_tables_viewdfs_and_plans(paper):
    [result] = paper.run("EXPLAIN VIEW View1")
    nodes, edges, labels = _svg_counts(result.figure)
    assert (nodes, edges) == (5, 5)                      # begin, a, b, c, d+; four proceed edges, one self loop
    assert labels == {"begin", "a", "b", "c", "d+"}
    titles = [title for title, _ in result.tables]
    assert titles == ["States", "Edges", "Values each run carries"]
    states, edge_table, values = (table for _, table in result.tables)
    assert states["name"].tolist() == ["begin", "a", "b", "c", "d+"]
    assert states["kind"].tolist()[-1] == "Kleene, accepting"
    assert edge_table[["edge", "kind", "predicates"]].values.tolist() == [
        ["E[0][1]", "proceed", "a.loss > 10"], ["E[1][2]", "proceed", "b.loss > 10"],
        ["E[2][3]", "proceed", "c.loss > 10"], ["E[3][4]", "proceed", "d.loss > 10"],
        ["E[4][4]", "self", "d.loss > 10"]]
    assert values["value"].tolist() == ["len", "a_ts", "all_sum_loss", "all_max_loss"]
    assert "Next part: View1__helper[" in result.detail and "Next part: View1[" in result.detail
    assert "CREATE VIEW" not in result.detail and "== Physical Plan ==" not in result.detail   # the summary
    sections = dict(result.sections)
    assert list(sections)[0::3] == ["ViewDF of View1__helper", "ViewDF of View1"]
    assert "CREATE VIEW View1__helper AS\nINITIALIZE View1__helper[i] AS" in sections["ViewDF of View1__helper"]
    assert "CREATE VIEW View1 AS\nINITIALIZE View1[i] AS" in sections["ViewDF of View1"]
    assert "RECOMPUTE View1[j] AS" in sections["ViewDF of View1"]
    plans = [text for title, text in result.sections if title.startswith("Spark plans of ")]
    assert len(plans) == 2 and all("== Physical Plan ==" in p and "== Optimized Logical Plan ==" in p for p in plans)


def test_own_svg_and_graphviz_draw_the_same_machine(warehouse):
    warehouse.execute(STREAM)
    warehouse.execute("CREATE VIEW S AS SELECT src, a.loss AS first_loss, last(b.loss) AS top FROM M "
                      "PATTERN (a, b+, c) WHERE a.loss > 10 AND b[i].loss > b[i-1].loss AND c.loss < last(b.loss) "
                      "GROUP BY src")
    fsm = replan(warehouse.catalog.get("S"), warehouse.catalog, warehouse.spark).fsm
    assert _svg_counts(own_svg(fsm)) == (4, 4, {"begin", "a", "b+", "c"})
    dot = fsm_dot(fsm)
    assert dot.count("->") == 4 and "s2 -> s2" in dot and "doublecircle" in dot
    if shutil.which("dot"):                     # Graphviz installed (./run test installs it where it can)
        nodes, edges, labels = _svg_counts(fsm_svg(fsm))
        assert (nodes, edges, labels) == (4, 4, {"begin", "a", "b+", "c"})


def test_generated_viewdfs_round_trip_as_hand_written_views(paper, make_warehouse):
    translated = paper
    texts = [translated.catalog.get(name).definition for name in ("View1__helper", "View1")]
    by_hand = make_warehouse("by_hand")
    by_hand.execute(STREAM)
    for text in texts:
        by_hand.execute(text)
    by_hand.ingest("M", minutes([row for minute, loss in enumerate(PAPER_LOSSES)
                                 for row in ((minute, "s", "d", loss), (minute, "t", "d", 20))]))
    for minute in range(len(PAPER_LOSSES)):
        stamp = START + pd.Timedelta(minutes=minute)
        assert rows(by_hand.read_part("View1", stamp)) == rows(translated.read_part("View1", stamp))
    assert rows(translated.read_part("View1", START + pd.Timedelta(minutes=5))) == [
        ("s", "d", START + pd.Timedelta(minutes=1), 5, 87, 24), ("t", "d", START, 6, 120, 20)]


def test_direct_scope_reads_only_the_last_parts(paper):
    warehouse = paper
    stamp = START + pd.Timedelta(minutes=5)
    assert rows(warehouse.recompute("View1", stamp)) == rows(warehouse.read_part("View1", stamp))
    # with 4 parts of history the runs start at 10:02: (s: 15+24+20+16) and (t: 4 x 20)
    assert rows(warehouse.recompute("View1", stamp, scope=4)) == [
        ("s", "d", START + pd.Timedelta(minutes=2), 4, 75, 24), ("t", "d", START + pd.Timedelta(minutes=2), 4, 80, 20)]
    assert rows(warehouse.recompute("View1", stamp, scope=3)) == []
    with pytest.raises(ValueError):
        warehouse.recompute("View1", stamp, scope=0)


def test_drop_removes_the_helper_and_the_helper_cannot_be_dropped_alone(warehouse):
    paper_warehouse(warehouse, PAPER_LOSSES[:5])
    with pytest.raises(Exception) as caught:
        warehouse.execute("DROP VIEW View1__helper")
    assert "View1" in str(caught.value)
    warehouse.execute("DROP VIEW View1")
    assert warehouse.catalog.get("View1") is None and warehouse.catalog.get("View1__helper") is None
    warehouse.execute(VIEW1)        # the names are free again; the view is backfilled
    assert rows(warehouse.read_part("View1", START + pd.Timedelta(minutes=4)))[0][3:5] == (4, 71)


def test_paper_bugs_first_edge_filter_and_natural_join(warehouse):
    """Regressions for two of the paper's translation bugs, in one warehouse:
    * Algorithm 2 keeps only new events passing the first edge's predicate (a.loss > 10), so a
      b with loss 3 could never extend a run;
    * it joins the new part with Helper[j-1] by NATURAL JOIN, which also equates the timestamps,
      so a run could never continue into a part whose event has another timestamp."""
    warehouse.execute(STREAM)
    warehouse.execute("CREATE VIEW Drop AS SELECT src, a.loss AS high, b.loss AS low FROM M PATTERN [a, b] "
                      "WHERE a.loss > 10 AND b.loss < 5 GROUP BY src")
    warehouse.execute("CREATE VIEW Pair AS SELECT src, a.ts AS first, b.ts AS second FROM M PATTERN [a, b] "
                      "WHERE a.loss > 10 AND b.loss > 10 GROUP BY src")
    batch = pd.DataFrame({"ts": [START + pd.Timedelta(seconds=5), START + pd.Timedelta(seconds=90),
                                 START + pd.Timedelta(seconds=7), START + pd.Timedelta(seconds=95)],
                          "src": ["s", "s", "t", "t"], "dest": "d", "loss": [12, 3, 11, 14]})
    warehouse.ingest("M", batch)
    minute = START + pd.Timedelta(minutes=1)
    assert rows(warehouse.read_part("Drop", minute)) == [("s", 12, 3)]
    assert rows(warehouse.read_part("Pair", minute)) == [
        ("t", START + pd.Timedelta(seconds=7), START + pd.Timedelta(seconds=95))]
    assert rows(warehouse.read_part("Drop", START)) == [] and rows(warehouse.read_part("Pair", START)) == []


@pytest.mark.parametrize("contiguity, expected", [("PARTS", [(2, 24)]), ("EVENTS", [(4, 48)])])
def test_global_pattern_without_group_by(warehouse, contiguity, expected):
    """Without GROUP BY the whole stream is one sequence; with CONTIGUITY EVENTS the empty
    minute 10:02 does not break the run."""
    warehouse.execute(STREAM)
    warehouse.execute(f"CREATE VIEW G AS SELECT count(*) AS n, sum(loss) AS total FROM M PATTERN [a, b+] "
                      f"WHERE a.loss > 10 AND b.loss > 10 CONTIGUITY {contiguity}")
    warehouse.ingest("M", minutes([(0, "s", "d", 12), (1, "t", "d", 12), (3, "s", "d", 11), (4, "u", "e", 13)]))
    assert rows(warehouse.read_part("G", START + pd.Timedelta(minutes=1))) == [(2, 24)]
    assert rows(warehouse.read_part("G", START + pd.Timedelta(minutes=4))) == expected
