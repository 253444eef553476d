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


def _run_with_values(program: dict, partitions: list[list[tuple[int, tuple]]]) -> list:
    """As ``_run``, each row a mask and the values its comparisons with aggregates read (c0, c1, ...)."""
    columns = len(partitions[0][0][1])
    kind = pa.struct([("m", pa.int64()), ("v", pa.struct([(f"c{k}", pa.float64()) for k in range(columns)]))])
    rows = [[{"m": mask, "v": {f"c{k}": value for k, value in enumerate(values)}} for mask, values in partition]
            for partition in partitions]
    return search(pa.array(rows, pa.list_(kind)), pa.array([None] * len(rows), pa.list_(pa.int64())),
                  pa.array([[len(partition)] for partition in rows], pa.list_(pa.int32())),
                  pa.array([0] * len(rows), pa.int32()), pa.array([0] * len(rows), pa.int32()),
                  pa.array([0] * len(rows), pa.int64()), pa.array([json.dumps(program)] * len(rows))).to_pylist()


def _paths(snapshots: list) -> list[list[list[tuple[int, int]]]]:
    return [[[(cell["i"], cell["v"]) for cell in match["path"]] for match in snapshot["out"]]
            for snapshot in snapshots]


def test_a_define_compared_with_an_average_skips_nulls_and_orders_nan_last() -> None:
    """PATTERN (A+ B) DEFINE A by its bit, B AS B.x < AVG(A.x): column 0 is x as AVG's argument, column 1 as
    B's value."""
    program = {**PROGRAM, "nodes": [[1, 0, [1, 2]], [2, -1, [0], [[1, "<", 0]]]], "aggregates": [["avg", 1, 0]]}
    nan = float("nan")
    found = _run_with_values(program, [
        [(A, (4.0, 4.0)), (A, (None, None)), (0, (2.0, 2.0))],    # AVG(A.x) = 4 over rows 1-2 (NULL skipped): 2 < 4
        [(A, (3.0, 3.0)), (0, (3.0, 3.0)), (A, (nan, nan)), (0, (9.0, 9.0))],   # 3 < 3 fails; 9 < NaN holds
        [(A, (None, None)), (0, (1.0, 1.0))]])                 # AVG over no value is NULL: the comparison fails
    assert [_paths(partition) for partition in found] == [[[[(1, 1), (2, 1), (3, 2)]]], [[[(3, 1), (4, 2)]]], [[]]]


def test_threads_at_one_node_with_different_aggregates_are_both_kept() -> None:
    """PATTERN ((A | B)+ C) DEFINE C AS C.x > COUNT(A.*): row 1 meets A and B. The thread that took it as A prefers
    C at row 2 but has COUNT(A.*) = 1, so 0.5 > 1 fails; the thread that took it as B reaches the same node with
    COUNT(A.*) = 0 and matches. Merged by node alone, it would have been dropped."""
    program = {**PROGRAM, "nodes": [[1, 0, [1, 2, 3]], [2, 1, [1, 2, 3]], [3, -1, [0], [[0, ">", 0]]]],
               "start": [1, 2], "aggregates": [["rows", 1, -1]]}
    [found] = _run_with_values(program, [[(A | B, (7.0,)), (0, (0.5,))]])
    assert _paths(found) == [[[(1, 2), (2, 3)]]]
