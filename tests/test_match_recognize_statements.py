"""MATCH_RECOGNIZE views (#20) as statements: the issue's example in %%viewdf and from Python, part by part,
VERIFY VIEW against RECOMPUTE, EXPLAIN VIEW's automaton; and what a stream cannot maintain (NEXT(), PERMUTE, the
anchors ^ and $, exclusion {- -}) and other mistakes refused with a positioned error (line, column, caret)
naming the construct, writing nothing."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

import pandas as pd
import pytest
from IPython.utils.capture import capture_output

from shells import magic_shell
from test_errors import fails
from test_patterns import _svg_counts
from viewdf_magic.translation.match_diagram import own_svg


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory):
    from viewdf_magic import Warehouse

    warehouse = Warehouse(str(tmp_path_factory.mktemp("mr_errors") / "wh"), spark=spark, progress=False)
    warehouse.execute("CREATE STREAM T (key STRING, ts TIMESTAMP, price DOUBLE, out INT) TIMESTAMP ts "
                      "PARTITION LENGTH 60;"
                      "CREATE TABLE owners (key STRING, owner STRING)")
    warehouse.ingest("T", pd.DataFrame({"key": ["a"], "ts": [pd.Timestamp("2024-01-01")], "price": [1.0], "out": [0]}))
    return warehouse


def view(pattern: str = "A B+", define: str = "B AS B.price < PREV(B.price)",
         measures: str = "FIRST(A.ts) AS start_ts", source: str = "T") -> str:
    return (f"CREATE VIEW V AS\n  SELECT * FROM {source} MATCH_RECOGNIZE (\n    PARTITION BY key ORDER BY ts\n"
            f"    MEASURES {measures}\n    ONE ROW PER MATCH\n    PATTERN ({pattern})\n    DEFINE {define})")


MATCH_ERRORS = {
    "NEXT in DEFINE": (view(define="B AS B.price < NEXT(B.price)"), "NEXT(", ("NEXT() is not supported",)),
    "NEXT in MEASURES": (view(measures="NEXT(A.price) AS after"), "NEXT(", ("NEXT() is not supported",)),
    "PERMUTE": (view(pattern="PERMUTE(A, B)"), "PERMUTE", ("PERMUTE is not supported", "(A B | B A)")),
    "anchor ^": (view(pattern="^ A B+"), "^", ("the anchor ^", "not supported")),
    "anchor $": (view(pattern="A B+ $"), "$", ("the anchor $", "not supported")),
    "exclusion": (view(pattern="A {- B+ -}"), "{-", ("exclusion {- ... -} is not supported",)),
    "unknown column": (view(define="B AS B.cost < 1"), "B.cost", ()),
    "not a condition": (view(define="B AS B.price + 1"), "B.price + 1", ("must be a condition",)),
    "over a table": (view(source="owners"), "owners", ("is a table; MATCH_RECOGNIZE reads a stream",)),
    "unknown stream": (view(source="Nowhere"), "Nowhere", ("unknown stream 'Nowhere'",)),
    "two columns with one name": (view(measures="FIRST(A.ts) AS key"), "FIRST(A.ts)",
                                  ("two output columns are named 'key'",)),
    "a key named as a helper column": (view().replace("PARTITION BY key", "PARTITION BY key, out"), "out ORDER",
                                       ("a PARTITION BY column named 'out' is not supported",)),
}


@pytest.mark.parametrize("text, needle, phrases", MATCH_ERRORS.values(), ids=MATCH_ERRORS.keys())
def test_match_recognize_errors(loaded, text: str, needle: str, phrases: tuple[str, ...]) -> None:
    fails(loaded, text, needle, *phrases)


# -- the issue's example ----------------------------------------------------------------------------------
DIPS = """CREATE VIEW Dips AS
SELECT * FROM Q MATCH_RECOGNIZE (
  PARTITION BY symbol ORDER BY ts
  MEASURES FIRST(A.ts) AS start_ts, LAST(B.price) AS bottom, LAST(C.ts) AS end_ts, COUNT(B.*) AS falls
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C)
  DEFINE B AS B.price < PREV(B.price), C AS C.price > PREV(C.price) AND C.price > AVG(B.price)
)"""
MINUTES = [  # (minute, symbol, price): a's dip spans minutes 0 to 2 and ends in minute 2; b only rises
    [(0.0, "a", 10.0), (0.5, "a", 9.0), (0.0, "b", 1.0)],
    [(1.0, "a", 8.0), (1.0, "b", 2.0)],
    [(2.0, "a", 11.0), (2.5, "a", 12.0), (2.0, "b", 3.0)],
]


def _at(minute: float) -> pd.Timestamp:
    return pd.Timestamp("2024-01-01") + pd.Timedelta(minutes=minute)


def _insert(rows: list[tuple[float, str, float]]) -> str:
    return "INSERT INTO Q VALUES " + ", ".join(f"('{s}', TIMESTAMP '{_at(m)}', {p})" for m, s, p in rows)


def _shown(shell, cell: str) -> str:
    """Run a cell (it must succeed); what it printed and displayed, as text and HTML."""
    with capture_output() as captured:
        assert shell.run_cell(cell).success
    return captured.stdout + "".join(output.data.get("text/html", output.data.get("text/plain", ""))
                                     for output in captured.outputs)


def test_the_issues_example_in_viewdf_cells_part_by_part(spark, tmp_path) -> None:
    """%%viewdf: the match spanning three parts is in the part of its last row, VERIFY VIEW finds every part equal
    to RECOMPUTE, a late row repairs the match, and EXPLAIN VIEW draws the automaton (start, A, B1, B2, C, end;
    B2 loops) over its table of states."""
    shell = magic_shell(spark)
    cells = [f"%%viewdf --warehouse {tmp_path / 'wh'}\nCREATE STREAM Q (symbol STRING, ts TIMESTAMP, price DOUBLE) "
             f"TIMESTAMP ts PARTITION LENGTH 60;\n{_insert(MINUTES[0])};\n{DIPS}",
             *(f"%%viewdf\n{_insert(rows)}" for rows in MINUTES[1:])]
    for cell in cells:
        _shown(shell, cell)
    with capture_output():
        found = shell.run_cell("%%viewdf\nSELECT * FROM Dips").result.toPandas()
    assert found.to_dict("records") == [{"symbol": "a", "start_ts": _at(0), "bottom": 8.0, "end_ts": _at(2),
                                         "falls": 2, "PART_TIMESTAMP": _at(2)}]
    assert "Dips: all 3 parts equal their recomputation." in _shown(shell, "%%viewdf\nVERIFY VIEW Dips")
    # a late row in minute 1 extends the dip: its parts are recomputed, the match is still found in minute 2
    _shown(shell, f"%%viewdf\n{_insert([(1.5, 'a', 7.5)])}")
    with capture_output():
        repaired = shell.run_cell("%%viewdf\nSELECT * FROM Dips").result.toPandas()
    assert repaired.to_dict("records") == [{"symbol": "a", "start_ts": _at(0), "bottom": 7.5, "end_ts": _at(2),
                                            "falls": 3, "PART_TIMESTAMP": _at(2)}]
    assert "Dips: all 3 parts equal their recomputation." in _shown(shell, "%%viewdf\nVERIFY VIEW Dips")
    explained = _shown(shell, "%%viewdf\nEXPLAIN VIEW Dips")
    assert "Dips is a MATCH_RECOGNIZE query" in explained and "Automaton states" in explained
    [svg] = re.findall(r"<svg.*?</svg>", explained, re.DOTALL)
    nodes, edges, labels = _svg_counts(svg)
    assert (nodes, edges) == (6, 7) and labels == {"start", "A", "B1", "B2", "C", "end"}   # B+ is B B*


def test_own_drawing_of_an_automaton() -> None:
    """Without Graphviz: a node per state, an edge per transition, titled with preference and DEFINE."""
    from viewdf_magic.translation.match_pattern import Automaton

    automaton = Automaton(("A", "B"), ("A", "B", "A"), (1,), ((2, 3), (2, 0), (0,)))   # A (B+ | A)
    svg = own_svg(automaton, {"B": "B.price > 1"})
    nodes, edges, labels = _svg_counts(svg)
    assert (nodes, edges) == (5, 6) and labels == {"start", "A1", "B", "A2", "end"}
    titles = {"".join(t.itertext()) for t in ElementTree.fromstring(svg).iter() if t.tag.endswith("}title")}
    assert {"1: B if B.price > 1", "1: A if TRUE", "2: A if TRUE", "2"} <= titles
