"""The automaton plan's matcher (engine/match_runner.py) called directly, as Spark calls it, on hand-made masks:
its matches and the measures' index terms it tracks, with values worked out by hand."""

from __future__ import annotations

import json

import pyarrow as pa

from viewdf_magic.engine.match_runner import search

# PATTERN (A+ B): node 1 is A (condition bit 0), staying at A or moving to node 2; node 2 is B (bit 1), then ACCEPT
PROGRAM = {"nodes": [[1, 0, [1, 2]], [2, 1, [0]]], "start": [1], "accepts_empty": False, "skip": "PAST LAST ROW",
           "skip_variable": 0, "skip_name": "", "within": None, "every": False}
A, B = 1, 2            # a row's mask: the condition it meets
# FIRST(A.x), LAST(A.x, 1), COUNT(*), LAST(B.x)
TERMS = [["first", 1, 0], ["last", 1, 1], ["count", 0, 0], ["last", 2, 0]]


def _run(program: dict, partitions: list[list[int]]) -> list:
    """Each partition's snapshots: its rows, all new, in one part."""
    return search(pa.array(partitions, pa.list_(pa.int64())), pa.array([None] * len(partitions), pa.list_(pa.int64())),
                  pa.array([[len(rows)] for rows in partitions], pa.list_(pa.int32())),
                  pa.array([0] * len(partitions), pa.int32()), pa.array([0] * len(partitions), pa.int32()),
                  pa.array([0] * len(partitions), pa.int64()),
                  pa.array([json.dumps(program)] * len(partitions))).to_pylist()


def test_the_measures_terms_at_the_end_of_each_match_and_at_each_row() -> None:
    [[first], [second]] = _run({**PROGRAM, "terms": TERMS, "running": True}, [[A, A, A, B], [B, A, B]])
    [match] = first["out"]
    assert [(cell["i"], cell["v"]) for cell in match["path"]] == [(1, 1), (2, 1), (3, 1), (4, 2)]
    # at rows 1-4: A's first row, the row before A's last (none at row 1), the rows so far, B's last row
    assert match["t"] == [1, 0, 1, 0,
                          1, 1, 2, 0,
                          1, 2, 3, 0,
                          1, 2, 4, 4]
    assert match["f"] == [1, 2, 4, 4]
    [match] = second["out"]                   # row 1 (B) starts no match; rows 2-3 are A B
    assert [(cell["i"], cell["v"]) for cell in match["path"]] == [(2, 1), (3, 2)]
    assert match["t"] == [2, 0, 1, 0,
                          2, 0, 2, 3]
    assert match["f"] == [2, 0, 2, 3]


def test_final_terms_only_without_running_measures() -> None:
    [[snapshot]] = _run({**PROGRAM, "terms": TERMS, "running": False}, [[A, B]])
    [match] = snapshot["out"]
    assert (match["t"], match["f"]) == ([], [1, 0, 2, 2])


def test_a_program_from_before_index_terms_still_runs() -> None:
    """A view created by an earlier version stores a program without terms: its matches carry none."""
    [[snapshot]] = _run({**PROGRAM, "skip_words": "AFTER MATCH SKIP PAST LAST ROW None"}, [[A, A, B]])
    [match] = snapshot["out"]
    assert ([cell["i"] for cell in match["path"]], match["t"], match["f"]) == ([1, 2, 3], [], [])
