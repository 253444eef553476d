"""The automaton plan of a MATCH_RECOGNIZE view: DEFINE conditions as bits, evaluated before the search.

The general plan (match_sql.py) folds each partition's rows in Spark SQL, every thread carrying the values its
DEFINE conditions read. When every DEFINE term reads the row being mapped, or a row of the match a bounded
number of rows back (``LAST(A.price, 1)`` in ``A+``, ``LAST(A.price)`` in B after ``A+``, ``PREV`` of them),
which row it reads is known from the thread's automaton state and a small context (where the last rows of each
variable are), not from the rows' values. ``compact_plan`` then compiles the automaton into nodes (a state and
such a context), each with the condition its variable's DEFINE becomes there, read at fixed offsets from the
row. Spark SQL evaluates every distinct condition for every row, vectorised, as one bit of the row's mask; the
search itself (engine/match_runner.py) reads only masks. The matcher also tracks the measures' *index terms*:
for a navigation, the row it reads (``LAST(A.price, 1)``: the row before A's last), for a row count
(``COUNT(A.*)``, ``COUNT(*)``) the count, at every mapped row (RUNNING, ALL ROWS PER MATCH) and at the match's
end (FINAL). A measure then reads its rows by index, with no pass over the match's path; aggregates over a
variable's values (``SUM(A.price)``) are evaluated over the path by the batch search's code
(match_recompute.Search).

A pattern gets the general plan, with the reason, when a DEFINE reads an aggregate over a variable's rows
(``AVG(A.price)``), a row that can be any distance back (``FIRST(A.price)`` while ``A+`` runs, ``LAST(A.price)``
after ``B*``), or when it needs more than MAX_CONDITIONS conditions or MAX_NODES nodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ..wording import plural
from .match_pattern import ACCEPT, Automaton
from .match_recompute import Search
from .match_state import Values
from .match_terms import Agg, Nav, Output, Special, Template, Term, numbered, render_row

MAX_OFFSET = 16          # the farthest row back within a match a DEFINE may read
MAX_NODES = 2_000        # automaton states x contexts
MAX_CONDITIONS = 62      # bits of a row's mask (bigint)

Track = tuple[tuple[int, ...], tuple[int, ...], int]     # first rows' offsets, last rows' offsets, rows (capped)
Context = tuple[Track, ...]                               # one track per variable read (None: all rows)


class NotCompact(Exception):
    """Why a pattern gets the general plan."""


@dataclass(frozen=True)
class Condition:
    """A DEFINE condition at a node: ``template`` with each term read ``offsets[term]`` rows back (None: NULL)."""

    variable: str
    template: Template
    offsets: tuple[tuple[Term, int | None], ...]


@dataclass(frozen=True)
class CompactPlan:
    """The compiled automaton: ``nodes`` are (variable index, condition bit or -1 for true, successors with
    ACCEPT = 0), numbered from 1; ``conditions`` the bits' conditions; ``reach`` the most rows back a condition
    or measure reads (a partition keeps that many rows before its cursor)."""

    nodes: tuple[tuple[int, int, tuple[int, ...]], ...]
    start: tuple[int, ...]
    conditions: tuple[Condition, ...]
    reach: int
    program: str
    every: bool              # every partition's row is kept (its rows before the cursor, or its match count)
    search: Search
    values: Values
    terms: tuple[Nav | Agg, ...]  # the index terms the matcher tracks for the measures, in the program's order

    def condition_sql(self, bit: int, row_at: Callable[[int], str]) -> str:
        """The SQL of condition ``bit`` for the row whose row ``k`` back is ``row_at(k)``."""
        condition = self.conditions[bit]
        offsets = dict(condition.offsets)

        def value(term: Term) -> str:
            if isinstance(term, Special):
                return f"'{condition.variable}'" if term.name == "CLASSIFIER" else "CAST(NULL AS bigint)"
            offset = offsets[term]
            if offset is None:
                return f"CAST(NULL AS {self.values.term_type(term)})"
            assert isinstance(term, Nav)      # aggregates make a pattern general
            return render_row(term.argument, row_at(offset))
        return f"coalesce({condition.template.render(value)}, false)"

    def mask_sql(self, row_at: Callable[[int], str]) -> str:
        """A row's mask: bit k set when condition k holds."""
        bits = [f"IF({self.condition_sql(k, row_at)}, {1 << k}L, 0L)" for k in range(len(self.conditions))]
        return " | ".join(bits) or "0L"

    def output_value(self, output: Output, all_rows: bool, number: str) -> str:
        """An output column's value for the match ``o`` over the rows ``R``; with ALL ROWS PER MATCH at its mapped
        row ``x``, the ``k``-th from 0 (RUNNING measures read ``o.t``, FINAL ones ``o.f``)."""
        if output.template is None:
            return self.search.output_value(output, all_rows, number)
        running = all_rows and not output.final

        def value(term: Term) -> str:
            if isinstance(term, Special):       # CLASSIFIER() reads the last mapped row, x itself when RUNNING
                return self.search.term(term, "array(x)" if running else "o.path", number)
            if term not in self.terms:
                return self.search.term(term, "slice(o.path, 1, k + 1)" if running else "o.path", number)
            index = self.terms.index(term) + 1
            tracked = (f"try_element_at(o.t, k * {len(self.terms)} + {index})" if running
                       else f"element_at(o.f, {index})")
            if isinstance(term, Agg):
                return f"CAST(coalesce({tracked}, 0) AS bigint)"
            row = f"({tracked} - {term.back})"
            return f"IF({row} >= 1, {render_row(term.argument, f'element_at(R, {row}).e')}, NULL)"
        return output.template.render(value)

    def describe(self) -> str:
        return (f"automaton plan (every DEFINE reads rows at fixed offsets: {plural(len(self.conditions), 'condition')} "
                f"evaluated per row as bits, then the search over {plural(len(self.nodes), 'automaton node')} in "
                f"Python)")


def _current(term: Nav, variable: str) -> bool:
    """Whether ``term`` reads the row being mapped (or rows before it) inside ``variable``'s DEFINE."""
    return term.kind == "last" and term.offset == 0 and term.variable in (None, variable)


def _tracked(defines: dict[str, Template]) -> dict[str | None, tuple[int, int]]:
    """Per variable a DEFINE navigates (None: all rows), how many first rows and last rows it reads."""
    needs: dict[str | None, tuple[int, int]] = {}
    for variable, template in defines.items():
        for term in template.terms:
            if isinstance(term, Agg):
                what = "COUNT" if term.argument is None else term.function.upper()
                raise NotCompact(f"DEFINE {variable} reads an aggregate ({what}) over a variable's rows")
            if isinstance(term, Nav) and not _current(term, variable):
                first, last = needs.get(term.variable, (0, 0))
                if term.kind == "first":
                    first = max(first, term.offset + 1)
                else:
                    last = max(last, term.offset + 1)
                needs[term.variable] = (first, last)
    return needs


class _Compiler:
    def __init__(self, automaton: Automaton, defines: dict[str, Template]) -> None:
        self.automaton, self.defines = automaton, defines
        self.needs = _tracked(defines)
        self.targets = sorted(self.needs, key=lambda v: (v is not None, v or ""))
        self.nodes: dict[tuple[int, Context], int] = {}
        self.pending: list[tuple[int, Context]] = []
        self.conditions: dict[Condition, int] = {}
        self.live = self._live()

    def _live(self) -> list[set[str | None]]:
        """Per state, the variables whose rows a DEFINE of it or of a state after it navigates."""
        reads = [{t.variable for t in self.defines[v].terms if isinstance(t, Nav) and not _current(t, v)}
                 if v in self.defines else set() for v in self.automaton.state_variables]
        live = [set(r) for r in reads]
        changed = True
        while changed:
            changed = False
            for q, after in enumerate(self.automaton.after):
                for successor in after:
                    if successor != ACCEPT and not live[successor - 1] <= live[q]:
                        live[q] |= live[successor - 1]
                        changed = True
        return live

    def node(self, state: int, context: Context) -> int:
        key = (state, context)
        if key not in self.nodes:
            if len(self.nodes) >= MAX_NODES:
                raise NotCompact(f"the pattern needs more than {MAX_NODES} automaton states and contexts")
            self.nodes[key] = len(self.nodes) + 1
            self.pending.append(key)
        return self.nodes[key]

    def taken(self, context: Context, variable: str) -> Context:
        """The context once the current row (offset 0) is mapped to ``variable``."""
        tracks: list[Track] = []
        for target, (first, last, rows) in zip(self.targets, context):
            if target in (None, variable):
                cap_first, cap_last = self.needs[target]
                first = first + (0,) if len(first) < cap_first else first
                last, rows = last + (0,), min(rows + 1, max(cap_first, cap_last))
            tracks.append((first, last, rows))
        return tuple(tracks)

    def moved(self, context: Context, variable: str, state: int) -> Context:
        """The context at the next row, at ``state``: every offset one more, only the last rows a DEFINE reads
        kept, nothing of a variable no DEFINE from ``state`` on navigates."""
        tracks: list[Track] = []
        for target, (first, last, rows) in zip(self.targets, context):
            if target not in self.live[state - 1]:
                tracks.append(((), (), 0))
                continue
            keep = self.needs[target][1]
            first = tuple(d + 1 for d in first)
            last = tuple(d + 1 for d in last[max(0, len(last) - keep):])
            if any(d > MAX_OFFSET for d in first + last):
                raise NotCompact(f"a DEFINE reads a row of the match that can be more than {MAX_OFFSET} rows back "
                                 f"(after {variable})")
            tracks.append((first, last, rows))
        return tuple(tracks)

    def offset(self, term: Nav, context: Context) -> int | None:
        first, last, rows = context[self.targets.index(term.variable)]
        if rows < term.offset + 1:
            return None
        row = first[term.offset] if term.kind == "first" else last[-(term.offset + 1)]
        return row + term.back

    def condition(self, variable: str, context: Context) -> int:
        template = self.defines.get(variable)
        if template is None:
            return -1
        offsets = tuple((term, (term.back if _current(term, variable) else self.offset(term, context))
                         if isinstance(term, Nav) else None) for term in template.terms)
        condition = Condition(variable, template, offsets)
        if condition not in self.conditions:
            if len(self.conditions) >= MAX_CONDITIONS:
                raise NotCompact(f"the DEFINE conditions take more than {MAX_CONDITIONS} forms across the pattern's "
                                 f"states")
            self.conditions[condition] = len(self.conditions)
        return self.conditions[condition]

    def compile(self) -> tuple[list[tuple[int, int, tuple[int, ...]]], tuple[int, ...]]:
        empty: Context = tuple(((), (), 0) for _ in self.targets)
        start = tuple(self.node(q, empty) for q in self.automaton.start if q != ACCEPT)
        compiled: dict[int, tuple[int, int, tuple[int, ...]]] = {}
        while self.pending:
            state, context = self.pending.pop(0)
            variable = self.automaton.state_variables[state - 1]
            now = self.taken(context, variable)
            bit = self.condition(variable, now)
            after = self.automaton.after[state - 1]
            successors = tuple(ACCEPT if q == ACCEPT else self.node(q, self.moved(now, variable, q)) for q in after)
            compiled[self.nodes[(state, context)]] = (self.automaton.variable_index(state), bit, successors)
        return [compiled[k] for k in range(1, len(compiled) + 1)], start


def _index_terms(outputs: list[Output], all_rows: bool) -> tuple[tuple[Nav | Agg, ...], bool]:
    """The measures' terms the matcher tracks (navigations and row counts), and whether a RUNNING measure of ALL ROWS
    PER MATCH reads one (so the matcher tracks them at every mapped row)."""
    terms: dict[Nav | Agg, None] = {}
    running = False
    for output in outputs:
        for term in output.template.terms if output.template is not None else ():
            if isinstance(term, Nav) or (isinstance(term, Agg) and term.argument is None):
                terms[term] = None
                running = running or (all_rows and not output.final)
    return tuple(terms), running


def compact_plan(automaton: Automaton, defines: dict[str, Template], values: Values, search: Search,
                 skip: tuple[str, str | None], within: int | None, outputs: list[Output],
                 all_rows: bool) -> CompactPlan | str:
    """The automaton plan of a pattern, or why it gets the general plan."""
    try:
        compiler = _Compiler(automaton, defines)
        nodes, start = compiler.compile()
    except NotCompact as reason:
        return str(reason)
    conditions = tuple(sorted(compiler.conditions, key=compiler.conditions.__getitem__))
    offsets = [offset for c in conditions for _, offset in c.offsets if offset is not None]
    reach = max([values.depth, *offsets])
    kind, variable = skip
    names = list(automaton.names)
    terms, running = _index_terms(outputs, all_rows)
    tracked = [["count" if isinstance(t, Agg) else t.kind, names.index(t.variable) + 1 if t.variable else 0,
                t.offset if isinstance(t, Nav) else 0] for t in terms]
    program = {"nodes": nodes, "start": start, "accepts_empty": ACCEPT in automaton.start, "skip": kind,
               "skip_variable": names.index(variable) + 1 if variable else 0, "skip_name": variable or "",
               "within": within, "every": numbered(outputs) or reach > 0, "terms": tracked, "running": running}
    return CompactPlan(tuple(nodes), start, conditions, reach, json.dumps(program, separators=(",", ":")),
                       bool(program["every"]), search, values, terms)
