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

A DEFINE may also compare a value with an aggregate over a variable's rows, as a conjunct of its condition
(``B.price < AVG(A.price) AND ...``). Which rows an aggregate covers depends on the thread, so such a conjunct is
not a bit: Spark SQL evaluates the value (an *operand*) and the aggregate's argument for every row, and the matcher
keeps each thread's aggregates (the slots the general fold keeps, match_state.py) and compares.

A pattern gets the general plan, with the reason, when a DEFINE reads an aggregate other than that way, or over
values that are not integers or floating-point numbers, a row that can be any distance back (``FIRST(A.price)``
while ``A+`` runs, ``LAST(A.price)`` after ``B*``), or when it needs more than MAX_CONDITIONS conditions or
MAX_NODES nodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from ..wording import plural
from .match_pattern import ACCEPT, Automaton
from .match_recompute import Search
from .match_state import Values
from .match_terms import Agg, Nav, Output, Special, Template, Term, numbered, render_row

MAX_OFFSET = 16          # the farthest row back within a match a DEFINE may read
MAX_NODES = 2_000        # automaton states x contexts
MAX_CONDITIONS = 62      # bits of a row's mask (bigint)

COMPARISONS: dict[type[exp.Expr], tuple[str, str]] = {   # operator, and the same with its sides swapped
    exp.LT: ("<", ">"), exp.LTE: ("<=", ">="), exp.GT: (">", "<"), exp.GTE: (">=", "<="), exp.EQ: ("=", "="),
    exp.NEQ: ("<>", "<>")}
PASSED = {"tinyint": "bigint", "smallint": "bigint", "int": "bigint", "bigint": "bigint", "float": "double",
          "double": "double"}             # the types the matcher compares, as they reach it

Track = tuple[tuple[int, ...], tuple[int, ...], int]     # first rows' offsets, last rows' offsets, rows (capped)
Context = tuple[Track, ...]                               # one track per variable read (None: all rows)
Compared = tuple[tuple[int, str, int], ...]               # (value column, operator, aggregate) the matcher checks
Node = tuple[int, int, tuple[int, ...], Compared]


class NotCompact(Exception):
    """Why a pattern gets the general plan."""


@dataclass(frozen=True)
class Condition:
    """A DEFINE condition at a node: ``template`` with each term read ``offsets[term]`` rows back (None: NULL)."""

    variable: str
    template: Template
    offsets: tuple[tuple[Term, int | None], ...]


@dataclass(frozen=True)
class Column:
    """A value Spark SQL computes for every row, for the matcher: an operand (``operand``, a value at its offsets)
    or an aggregate's argument over the row (``key``, ``argument``), as ``kind``: bigint, double, or ``present``
    (1, or NULL when the argument is NULL: what COUNT reads)."""

    kind: str
    operand: Condition | None = None
    key: str | None = None
    argument: exp.Expr | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class CompactPlan:
    """The compiled automaton: ``nodes`` are (variable index, condition bit or -1 for true, successors with
    ACCEPT = 0, comparisons with aggregates), numbered from 1; ``conditions`` the bits' conditions; ``columns``
    the values each row brings the comparisons; ``reach`` the most rows back a condition or measure reads (a
    partition keeps that many rows before its cursor)."""

    nodes: tuple[Node, ...]
    start: tuple[int, ...]
    conditions: tuple[Condition, ...]
    reach: int
    program: str
    every: bool              # every partition's row is kept (its rows before the cursor, or its match count)
    search: Search
    values: Values
    terms: tuple[Nav | Agg, ...]  # the index terms the matcher tracks for the measures, in the program's order
    columns: tuple[Column, ...]
    aggregates: int               # how many aggregates the matcher keeps per thread

    def condition_sql(self, bit: int, row_at: Callable[[int], str]) -> str:
        """The SQL of condition ``bit`` for the row whose row ``k`` back is ``row_at(k)``."""
        return f"coalesce({self._value_sql(self.conditions[bit], row_at)}, false)"

    def _value_sql(self, condition: Condition, row_at: Callable[[int], str]) -> str:
        offsets = dict(condition.offsets)

        def value(term: Term) -> str:
            if isinstance(term, Special):
                return f"'{condition.variable}'" if term.name == "CLASSIFIER" else "CAST(NULL AS bigint)"
            offset = offsets[term]
            if offset is None:
                return f"CAST(NULL AS {self.values.term_type(term)})"
            assert isinstance(term, Nav)      # aggregates are compared by the matcher, never rendered here
            return render_row(term.argument, row_at(offset))
        return condition.template.render(value)

    def mask_sql(self, row_at: Callable[[int], str]) -> str:
        """A row's mask: bit k set when condition k holds."""
        bits = [f"IF({self.condition_sql(k, row_at)}, {1 << k}L, 0L)" for k in range(len(self.conditions))]
        return " | ".join(bits) or "0L"

    def columns_sql(self, row_at: Callable[[int], str]) -> str:
        """A row's values for the matcher's comparisons (fields c0, c1, ...)."""
        values = []
        for k, column in enumerate(self.columns):
            if column.operand is not None:
                value = self._value_sql(column.operand, row_at)
            else:
                assert column.argument is not None      # an argument column (COUNT(*) needs none)
                value = render_row(column.argument, row_at(0))
            typed = (f"IF(({value}) IS NULL, CAST(NULL AS bigint), 1L)" if column.kind == "present"
                     else f"CAST({value} AS {column.kind})")
            values.append(f"'c{k}', {typed}")
        return f"named_struct({', '.join(values)})"

    @property
    def columns_type(self) -> str:
        kinds = ",".join(f"c{k}:{'bigint' if c.kind == 'present' else c.kind}" for k, c in enumerate(self.columns))
        return f"struct<{kinds}>"

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
        kept = (f", {plural(self.aggregates, 'aggregate')} per thread, compared with "
                f"{plural(len(self.columns), 'value')} per row" if self.aggregates else "")
        return (f"automaton plan (every DEFINE reads rows at fixed offsets: {plural(len(self.conditions), 'condition')} "
                f"evaluated per row as bits, then the search over {plural(len(self.nodes), 'automaton node')} in "
                f"Python{kept})")


def _current(term: Nav, variable: str) -> bool:
    """Whether ``term`` reads the row being mapped (or rows before it) inside ``variable``'s DEFINE."""
    return term.kind == "last" and term.offset == 0 and term.variable in (None, variable)


def _aggregate(template: Template, node: exp.Expr) -> Agg | None:
    """The aggregate ``node`` is, when it is one (a placeholder, maybe in parentheses)."""
    term = template.term_at(node.unnest())
    return term if isinstance(term, Agg) else None


def _reads_aggregate(template: Template, node: exp.Expr) -> bool:
    return any(_aggregate(template, column) is not None for column in node.find_all(exp.Column))


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    node = node.unnest()
    return _conjuncts(node.left) + _conjuncts(node.right) if isinstance(node, exp.And) else [node]


def _passed(kind: str, what: str) -> str:
    """The type a value of SQL type ``kind`` reaches the matcher as."""
    if kind not in PASSED:
        raise NotCompact(f"{what} is of type {kind}: the matcher compares integers and floating-point numbers only")
    return PASSED[kind]


Split = tuple[Template | None, tuple[tuple[Template, str, Agg, str], ...]]


def _split(variable: str, template: Template, values: Values) -> Split:
    """A DEFINE's conjuncts that read no aggregate over a variable's rows, as one template (None: there are none),
    and each conjunct comparing a value with such an aggregate: (the value, the operator with the aggregate on its
    right, the aggregate, the type the value reaches the matcher as)."""
    plain: list[exp.Expr] = []
    compared: list[tuple[Template, str, Agg, str]] = []
    for conjunct in _conjuncts(template.tree):
        if not _reads_aggregate(template, conjunct):
            plain.append(conjunct)
            continue
        operators = COMPARISONS.get(type(conjunct))
        sides = ([(conjunct.left, conjunct.right, 0), (conjunct.right, conjunct.left, 1)]
                 if operators and isinstance(conjunct, exp.Binary) else [])
        for value, other, swapped in sides:
            aggregate = _aggregate(template, other)
            if aggregate is not None and not _reads_aggregate(template, value):
                assert operators is not None
                operand = Template(value, template.terms)
                what = f"in DEFINE {variable}, the value compared with {aggregate.function.upper()}"
                kind = _passed(values.type_of(values.typed_nulls(operand)), what)
                if aggregate.key is not None and aggregate.function != "count":
                    _passed(values.argument_type(aggregate.key),
                            f"in DEFINE {variable}, {aggregate.function.upper()}'s argument")
                compared.append((operand, operators[swapped], aggregate, kind))
                break
        else:
            raise NotCompact(f"DEFINE {variable} reads an aggregate over a variable's rows other than in a comparison "
                             f"with a value (such as B.price < AVG(A.price)) joined to the rest by AND")
    whole = Template(exp.and_(*plain) if len(plain) > 1 else plain[0], template.terms) if plain else None
    return whole, tuple(compared)


def _tracked(defines: dict[str, Template]) -> dict[str | None, tuple[int, int]]:
    """Per variable a DEFINE navigates (None: all rows), how many first rows and last rows it reads."""
    needs: dict[str | None, tuple[int, int]] = {}
    for variable, template in defines.items():
        for term in template.terms:
            if isinstance(term, Nav) and not _current(term, variable):
                first, last = needs.get(term.variable, (0, 0))
                if term.kind == "first":
                    first = max(first, term.offset + 1)
                else:
                    last = max(last, term.offset + 1)
                needs[term.variable] = (first, last)
    return needs


class _Compiler:
    def __init__(self, automaton: Automaton, defines: dict[str, Template], values: Values) -> None:
        self.automaton, self.defines, self.values = automaton, defines, values
        self.splits = {variable: _split(variable, template, values) for variable, template in defines.items()}
        self.needs = _tracked(defines)
        self.targets = sorted(self.needs, key=lambda v: (v is not None, v or ""))
        self.nodes: dict[tuple[int, Context], int] = {}
        self.pending: list[tuple[int, Context]] = []
        self.conditions: dict[Condition, int] = {}
        self.columns: dict[Column, int] = {}
        self.aggregates: dict[Agg, tuple[int, list[str | int]]] = {}     # -> index, (function, variable, column)
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

    def at(self, variable: str, template: Template, context: Context) -> Condition:
        """``template`` in ``variable``'s DEFINE, its terms read at the rows ``context`` places them."""
        offsets = tuple((term, (term.back if _current(term, variable) else self.offset(term, context))
                         if isinstance(term, Nav) else None) for term in template.terms)
        return Condition(variable, template, offsets)

    def column(self, column: Column) -> int:
        return self.columns.setdefault(column, len(self.columns))

    def aggregate(self, aggregate: Agg) -> int:
        """The index of ``aggregate`` among those the matcher keeps, each as (function, variable index or 0 for
        every row, the column of its argument or -1 for a row count)."""
        if aggregate not in self.aggregates:
            column = -1
            if aggregate.key is not None:
                kind = "present" if aggregate.function == "count" else PASSED[self.values.argument_type(aggregate.key)]
                column = self.column(Column(kind, key=aggregate.key, argument=aggregate.argument))
            over = list(self.automaton.names).index(aggregate.variable) + 1 if aggregate.variable else 0
            self.aggregates[aggregate] = (len(self.aggregates), ["rows" if column < 0 else aggregate.function,
                                                                 over, column])
        return self.aggregates[aggregate][0]

    def compared(self, variable: str, context: Context) -> Compared:
        """The comparisons of ``variable``'s DEFINE with aggregates: (value column, operator, aggregate)."""
        if variable not in self.splits:
            return ()
        return tuple((self.column(Column(kind, self.at(variable, operand, context))), operator, self.aggregate(agg))
                     for operand, operator, agg, kind in self.splits[variable][1])

    def condition(self, variable: str, context: Context) -> int:
        template = self.splits[variable][0] if variable in self.splits else None
        if template is None:
            return -1
        condition = self.at(variable, template, context)
        if condition not in self.conditions:
            if len(self.conditions) >= MAX_CONDITIONS:
                raise NotCompact(f"the DEFINE conditions take more than {MAX_CONDITIONS} forms across the pattern's "
                                 f"states")
            self.conditions[condition] = len(self.conditions)
        return self.conditions[condition]

    def compile(self) -> tuple[list[Node], tuple[int, ...]]:
        empty: Context = tuple(((), (), 0) for _ in self.targets)
        start = tuple(self.node(q, empty) for q in self.automaton.start if q != ACCEPT)
        compiled: dict[int, Node] = {}
        while self.pending:
            state, context = self.pending.pop(0)
            variable = self.automaton.state_variables[state - 1]
            now = self.taken(context, variable)
            bit = self.condition(variable, now)
            after = self.automaton.after[state - 1]
            successors = tuple(ACCEPT if q == ACCEPT else self.node(q, self.moved(now, variable, q)) for q in after)
            compiled[self.nodes[(state, context)]] = (self.automaton.variable_index(state), bit, successors,
                                                      self.compared(variable, now))
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
        compiler = _Compiler(automaton, defines, values)
        nodes, start = compiler.compile()
    except NotCompact as reason:
        return str(reason)
    conditions = tuple(sorted(compiler.conditions, key=compiler.conditions.__getitem__))
    columns = tuple(sorted(compiler.columns, key=compiler.columns.__getitem__))
    operands = [c.operand for c in columns if c.operand is not None]
    offsets = [offset for c in conditions + tuple(operands) for _, offset in c.offsets if offset is not None]
    reach = max([values.depth, *offsets])
    kind, variable = skip
    names = list(automaton.names)
    terms, running = _index_terms(outputs, all_rows)
    tracked = [["count" if isinstance(t, Agg) else t.kind, names.index(t.variable) + 1 if t.variable else 0,
                t.offset if isinstance(t, Nav) else 0] for t in terms]
    aggregates = [spec for _, spec in compiler.aggregates.values()]
    program = {"nodes": [node if node[3] else node[:3] for node in nodes], "start": start,
               "accepts_empty": ACCEPT in automaton.start, "skip": kind,
               "skip_variable": names.index(variable) + 1 if variable else 0, "skip_name": variable or "",
               "within": within, "every": numbered(outputs) or reach > 0, "terms": tracked, "running": running}
    if aggregates:
        program["aggregates"] = aggregates
    return CompactPlan(tuple(nodes), start, conditions, reach, json.dumps(program, separators=(",", ":")),
                       bool(program["every"]), search, values, terms, columns, len(aggregates))
