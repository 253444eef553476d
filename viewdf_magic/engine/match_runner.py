"""The automaton plan's matcher: a MATCH_RECOGNIZE partition's rows run through its compiled automaton in Python.

Spark SQL evaluates every DEFINE condition a row can meet as a bit of the row's mask (translation/match_compact.py);
this module runs the searches over the masks, exactly as the general fold in Spark SQL does
(translation/match_sql.py): one search per start row, each a list of threads in preference order (Pike's VM), a
thread that accepts cutting the threads after it, threads at the same node merged, WITHIN ending a search's
threads, and the decision pass after every row that emits the decided search at the cursor and moves the
cursor by AFTER MATCH SKIP. A thread is a node of the compiled automaton and its path, a linked list of
(row, variable) cells, so a row costs a few integer operations per live thread. Each emitted match also
carries its measures' index terms (the row a navigation reads, or a count of rows) at its end (``f``) and, when
a RUNNING measure of ALL ROWS PER MATCH reads them, at each mapped row (``t``, row after row), computed over all
the batch's matches at once with numpy. A DEFINE that compares a value with an aggregate over a variable's rows
(``B.price < AVG(A.price)``) is checked here: each row brings the value and the aggregate's argument, each thread
keeps its aggregates as the general fold's slots (so threads merge only when those are equal too), and SQL's
rules hold: NULL arguments are skipped, a comparison with NULL fails, NaN equals NaN and exceeds every number.

``register`` makes ``search`` the SQL function ``viewdf_match_run`` of a session: an Arrow UDF, which reads a
batch of partitions' masks as Arrow arrays and builds its result as flat Arrow arrays, so no value crosses
into Python one by one. The module is pickled by value, so executors need no install of this package.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, cast

import numpy as np
import pyarrow as pa

from ..language.emptiness import MATCH_SEARCH

RESULT_TYPE = ("array<struct<cursor:int,end:int,matches:bigint,out:array<struct<num:bigint,start:int,"
               "path:array<struct<i:int,v:int>>,t:array<int>,f:array<int>>>,error:string>>")

Path = tuple | None          # (row, variable, earlier cells) or None: a thread's rows, newest first
Thread = tuple[int, Path, tuple]   # node, path, aggregates (one slot per aggregate; an AVG's is (sum, count))
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq,
           "<>": operator.ne}


class _Program:
    """A compiled automaton (``match_compact.CompactPlan.program``), read once per worker."""

    def __init__(self, text: str) -> None:
        spec = json.loads(text)
        self.variable: list[int] = [0] + [node[0] for node in spec["nodes"]]     # nodes are numbered from 1
        # the bit a node's condition sets in a row's mask (0: the condition always holds)
        self.need: list[int] = [0] + [0 if node[1] < 0 else 1 << node[1] for node in spec["nodes"]]
        self.after: list[list[int]] = [[]] + [node[2] for node in spec["nodes"]]  # 0: ACCEPT
        # per node, its comparisons with aggregates: (value column, operator, aggregate)
        self.compared: list[list[tuple[int, Any, int]]] = [[]] + [
            [(column, COMPARE[op], aggregate) for column, op, aggregate in node[3]] if len(node) > 3 else []
            for node in spec["nodes"]]
        # the aggregates a thread keeps: (function, variable or 0 for every row, argument column or -1)
        self.aggregates: list[tuple[str, int, int]] = [tuple(a) for a in spec.get("aggregates", [])]
        self.zero: tuple = tuple((None, 0) if function == "avg" else 0 if function in ("rows", "count") else None
                                 for function, _, _ in self.aggregates)
        self.start: list[int] = spec["start"]
        self.accepts_empty: bool = spec["accepts_empty"]
        self.skip: str = spec["skip"]
        self.skip_variable: int = spec["skip_variable"]
        self.skip_name: str = spec["skip_name"]         # TO FIRST or TO LAST's variable
        self.skip_words = f"AFTER MATCH SKIP {self.skip} {self.skip_name}"
        self.within: int | None = spec["within"]
        self.every: bool = spec["every"]
        # the measures' index terms (kind, variable, offset); a view created before they existed has none
        self.terms: list[tuple[str, int, int]] = [tuple(term) for term in spec.get("terms", [])]
        self.running: bool = spec.get("running", False)
        # a row starts a search when it meets a start node's condition (or the pattern matches no row)
        self.starts_always = self.accepts_empty or any(self.need[node] == 0 for node in self.start)
        self.starting = [self.need[node] for node in self.start]


@lru_cache(maxsize=16)
def _program(text: str) -> _Program:
    return _Program(text)


def _rows(path: Path) -> list[tuple[int, int]]:
    """A path's (row, variable) cells, oldest first."""
    cells = []
    while path is not None:
        cells.append((path[0], path[1]))
        path = path[2]
    cells.reverse()
    return cells


class _Failed(Exception):
    """AFTER MATCH SKIP cannot resume (the message is the general fold's)."""


def _next_start(program: _Program, start: int, cells: list[tuple[int, int]]) -> int:
    if program.skip == "TO NEXT ROW":
        return start + 1
    if program.skip == "PAST LAST ROW":
        return cells[-1][0] + 1 if cells else start + 1
    rows = [row for row, variable in cells if variable == program.skip_variable]
    if not rows:
        raise _Failed(f"{program.skip_words}: no row of the match is mapped to {program.skip_name}")
    target = rows[0] if program.skip == "TO FIRST" else rows[-1]
    if target == start:
        raise _Failed(f"{program.skip_words} would resume at the match's first row")
    return target


class _Snapshots:
    """Every partition's snapshots of a batch, as the flat columns of the Arrow result."""

    def __init__(self) -> None:
        self.partitions = [0]                        # snapshot offsets per partition
        self.cursor: list[int] = []
        self.end: list[int] = []
        self.matches: list[int] = []
        self.error: list[str | None] = []
        self.emitted = [0]                           # match offsets per snapshot
        self.number: list[int] = []
        self.start: list[int] = []
        self.paths = [0]                             # cell offsets per match
        self.row: list[int] = []
        self.variable: list[int] = []

    def match(self, number: int, start: int, cells: list[tuple[int, int]]) -> None:
        self.number.append(number)
        self.start.append(start + 1)
        for row, variable in cells:
            self.row.append(row + 1)
            self.variable.append(variable)
        self.paths.append(len(self.row))

    def snapshot(self, cursor: int, end: int, matches: int, error: str | None = None) -> None:
        self.cursor.append(cursor)
        self.end.append(end)
        self.matches.append(matches)
        self.error.append(error)
        self.emitted.append(len(self.number))

    def arrow(self, program: _Program) -> pa.Array:
        def offsets(values: list[int] | np.ndarray) -> pa.Array:
            return pa.array(values, pa.int32())

        def per_match(values: np.ndarray, ends: list[int] | np.ndarray) -> pa.Array:
            """Per match, its rows of ``values`` (cells' or the match's own), the terms' values one after another."""
            return pa.ListArray.from_arrays(offsets(np.asarray(ends) * values.shape[1]), offsets(values.ravel()))
        running, final = _term_values(program.terms, np.array(self.row, np.int32),
                                      np.array(self.variable, np.int32), np.array(self.paths, np.int64))
        cells = pa.StructArray.from_arrays([offsets(self.row), offsets(self.variable)], names=["i", "v"])
        tracked = per_match(running, self.paths) if program.running else per_match(running[:0], [0] * len(self.paths))
        found = pa.StructArray.from_arrays([pa.array(self.number, pa.int64()), offsets(self.start),
                                            pa.ListArray.from_arrays(offsets(self.paths), cells), tracked,
                                            per_match(final, np.arange(len(self.paths)))],
                                           names=["num", "start", "path", "t", "f"])
        snapshots = pa.StructArray.from_arrays(
            [offsets(self.cursor), offsets(self.end), pa.array(self.matches, pa.int64()),
             pa.ListArray.from_arrays(offsets(self.emitted), found), pa.array(self.error, pa.string())],
            names=["cursor", "end", "matches", "out", "error"])
        return pa.ListArray.from_arrays(offsets(self.partitions), snapshots)


def _term_values(terms: list[tuple[str, int, int]], rows: np.ndarray, variables: np.ndarray,
                 paths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each term's value at every cell (RUNNING: over the match's cells up to it) and at every match's end
    (FINAL): for ``count`` the number of the variable's cells (variable 0: every cell), for ``first`` and ``last``
    the row (from 1) of the variable's cell ``offset`` from the first or the last, or 0 when there is none."""
    starts, lengths = paths[:-1], np.diff(paths)
    running = np.zeros((len(rows), len(terms)), np.int32)
    for column, (kind, variable, offset) in enumerate(terms):
        chosen = variables == variable if variable else np.ones(len(rows), bool)
        total = np.cumsum(chosen)                                             # chosen cells up to each cell
        before = np.repeat(np.concatenate(([0], total))[starts], lengths)     # ... before the cell's match
        count = total - before
        if kind == "count":
            running[:, column] = count
            continue
        held = count > offset
        at = (total - 1 - offset if kind == "last" else before + offset)[held]
        running[held, column] = rows[np.flatnonzero(chosen)[at]]
    final = np.zeros((len(starts), len(terms)), np.int32)
    ended = lengths > 0
    final[ended] = running[paths[1:][ended] - 1]
    return running, final


def search(masks: pa.Array, times: pa.Array, counts: pa.Array, begin: pa.Array, cursor: pa.Array,
           matches: pa.Array, text: pa.Array) -> pa.Array:
    """The SQL function: ``run`` for each partition of an Arrow batch."""
    program = _program(text[0].as_py())
    mask_offsets = masks.offsets.to_pylist()
    rows_values: list[tuple] = []
    if pa.types.is_struct(masks.type.value_type):        # each row's mask and the values its comparisons read
        mask_values = masks.values.field("m").to_pylist()
        rows_values = list(zip(*(column.to_pylist() for column in masks.values.field("v").flatten())))
    else:
        mask_values = masks.values.to_pylist()
    timed = times.null_count < len(times)
    time_values, time_offsets = (times.values.to_pylist(), times.offsets.to_pylist()) if timed else ([], [])
    count_values, count_offsets = counts.values.to_pylist(), counts.offsets.to_pylist()
    snapshots = _Snapshots()
    for k, (first, at, done) in enumerate(zip(begin.to_pylist(), cursor.to_pylist(), matches.to_pylist())):
        rows = mask_values[mask_offsets[k]:mask_offsets[k + 1]]
        stamps = time_values[time_offsets[k]:time_offsets[k + 1]] if timed else None
        run(program, rows, stamps, count_values[count_offsets[k]:count_offsets[k + 1]], first, at, done, snapshots,
            rows_values[mask_offsets[k]:mask_offsets[k + 1]])
        snapshots.partitions.append(len(snapshots.cursor))
    return snapshots.arrow(program)


def run(program: _Program, masks: list[int], times: list[int] | None, counts: list[int], begin: int, cursor: int,
        matches: int, snapshots: _Snapshots, values: Sequence[tuple] = ()) -> None:
    """Run a partition's rows (their condition ``masks``, the ``values`` their comparisons with aggregates read,
    and, for WITHIN, ``times`` in microseconds): the rows
    from ``begin`` on are new, in parts of ``counts`` rows; the search resumes at row ``cursor`` (rows before it
    are decided), ``matches`` matches emitted before. A snapshot after each part: the cursor, the rows so far
    (``end``), the matches emitted so far, and the matches emitted in the part (rows numbered from 1). A failing
    AFTER MATCH SKIP ends the run with its message."""
    searches: list[list[Any]] = []       # [start, t0, threads [(node, path)], found (path,) or None]
    end = begin
    row = cursor
    try:
        for count in counts:
            end += count
            emitted = len(snapshots.number)
            while count and row < end:
                mask = masks[row]
                if not searches and not (program.starts_always or
                                         any(mask & need for need in program.starting)):
                    row += 1
                    cursor = row
                    continue
                searches.append([row, times[row] if times is not None else 0,
                                 [(node, None, program.zero) for node in program.start],
                                 (None,) if program.accepts_empty else None])
                for pending in searches:
                    _advance(program, pending, mask, row, times, values[row] if values else ())
                blocked, kept = False, []
                for pending in searches:
                    start, _, threads, found = pending
                    if blocked:
                        if threads or found is not None:
                            kept.append(pending)
                    elif start < cursor or (not threads and found is None):
                        continue
                    elif threads:
                        cursor, blocked = start, True
                        kept.append(pending)
                    else:
                        cells = _rows(found[0])
                        matches += 1
                        snapshots.match(matches, start, cells)
                        cursor = _next_start(program, start, cells)
                searches = kept
                row += 1
                if not blocked:
                    cursor = max(cursor, row)
            snapshots.snapshot(cursor, end, matches)
            if not program.every and not searches and len(snapshots.number) == emitted:
                matches = 0          # the partition's row is not stored: its next part starts afresh
    except _Failed as failure:
        snapshots.snapshot(cursor, end, matches, str(failure))


def _advance(program: _Program, search: list[Any], mask: int, row: int, times: list[int] | None,
             values: tuple) -> None:
    """A search after ``row`` (whose comparisons read ``values``): its threads moved in order; the first to accept
    becomes its match and cuts the threads after it; a thread at a node an earlier thread holds (with the same
    aggregates) is dropped."""
    threads = search[2]
    if program.within is not None and times is not None and times[row] - search[1] >= program.within:
        threads = []
    kept: list[Thread] = []
    held: set = set()
    found = search[3]
    need, variable, after, compared = program.need, program.variable, program.after, program.compared
    aggregates = program.aggregates
    for node, path, slots in threads:
        if mask & need[node] != need[node]:
            continue
        if aggregates:
            slots = _aggregated(program, slots, variable[node], values)
            if not all(_holds(comparison, values[column], _value(aggregates[k][0], slots[k]))
                       for column, comparison, k in compared[node]):
                continue
        taken = (row, variable[node], path)
        for successor in after[node]:
            if successor == 0:
                found = (taken,)
                break
            key = (successor, slots) if aggregates else successor
            if key not in held:
                held.add(key)
                kept.append((successor, taken, slots))
        else:
            continue
        break
    search[2], search[3] = kept, found


def _aggregated(program: _Program, slots: tuple, variable: int, values: tuple) -> tuple:
    """A thread's aggregates once the row with ``values`` is mapped to ``variable``; NULL arguments are skipped."""
    updated = list(slots)
    for k, (function, over, column) in enumerate(program.aggregates):
        if over and over != variable:
            continue
        value = values[column] if column >= 0 else 1
        if value is None:
            continue
        old = updated[k]
        if function in ("rows", "count"):
            updated[k] = old + 1
        elif function == "sum":
            updated[k] = value if old is None else old + value
        elif function == "avg":
            updated[k] = (value if old[0] is None else old[0] + value, old[1] + 1)
        elif old is None or _holds(operator.lt if function == "min" else operator.gt, value, old):
            updated[k] = value
    return tuple(updated)


def _value(function: str, slot: Any) -> Any:
    """An aggregate's value from its slot (AVG divides as Spark's general fold does, in double)."""
    if function == "avg":
        total, count = slot
        return float(total) / count if count else None
    return slot


def _holds(comparison: Any, left: Any, right: Any) -> bool:
    """``left comparison right`` under SQL's rules for numbers: false when either is NULL, an integer compared
    with a double compared as a double, NaN equal to NaN and greater than every other number."""
    if left is None or right is None:
        return False
    if isinstance(left, float) or isinstance(right, float):
        left, right = float(left), float(right)
        if left != left or right != right:
            return bool(comparison((left != left, 0.0 if left != left else left),
                                   (right != right, 0.0 if right != right else right)))
    return bool(comparison(left, right))


def register(spark: Any) -> None:
    """Make ``search`` the SQL function ``viewdf_match_run`` of ``spark`` (classic or Connect)."""
    import sys

    from pyspark import cloudpickle
    from pyspark.sql.functions import arrow_udf

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.udf.register(MATCH_SEARCH, cast(Any, arrow_udf)(search, returnType=RESULT_TYPE))
