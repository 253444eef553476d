"""The "Direct" strategy for pattern queries: re-run the pattern from scratch (the naive baseline).

Written independently of the FSM translation, as a search over assignments: for each group, the
events of the scanned parts are sorted; from the earliest allowed start, every way of giving the
suffix's events to the pattern variables (greedy order: earlier Kleene variables longest first) is
checked against the WHERE conditions by position; the first start with a valid assignment gives
the longest match. The SELECT list is then computed with Spark's own aggregates over the matched
events. It backs RECOMPUTE (so VERIFY and ``Warehouse.recompute``) and the timing baseline.
"""

from __future__ import annotations

from typing import Callable, cast

from sqlglot import exp

from ..timeparts import subscript_sql
from .pattern_query import AGGREGATES, PatternQuery, Variable
from ..language.lifting import INPUT_PART, OUTPUT_PART
from ..language.tokens import quote_name

TypeOf = Callable[[str], str]      # SQL over columns qualified by __ev (aggregates allowed) -> type



class _Direct:
    def __init__(self, query: PatternQuery, columns: list[str], type_of: TypeOf) -> None:
        self.query = query
        self.names = {c.lower(): c for c in columns}
        self.type_of = type_of
        self.m = len(query.variables)
        self.lambdas = 0

    def fresh(self, stem: str) -> str:
        self.lambdas += 1
        return f"{stem}{self.lambdas}"

    def column(self, node: exp.Column) -> str:
        return quote_name(self.names[node.name.lower()])

    def bound(self, index: int) -> str:
        """b_index: the position where variable ``index`` starts (m+1: one past the end)."""
        return f"element_at(b, {index})" if index <= self.m else "(size(seq) + 1)"

    def meaning(self, node: exp.Column) -> tuple[Variable | None, str]:
        occurrence = self.query.clause.occurrences.get(node.table)
        if occurrence is not None:
            return occurrence.variable, occurrence.kind
        return (self.query.variable(node.table), "current") if node.table else (None, "")

    # -- conditions at a position ----------------------------------------------------------------
    def condition(self, node: exp.Expr, owner: Variable, at: str) -> str:
        """A WHERE conjunct owned by ``owner`` with references resolved for the event at ``at``."""
        def visit(item: exp.Expr) -> exp.Expr:
            if type(item) in AGGREGATES:
                return exp.Var(this=self.aggregate_by_position(item, owner, at))
            if isinstance(item, (exp.Last, exp.First)):
                variable = self.meaning(item.this)[0]
                assert variable is not None      # the FSM builder checked first() and last() take a variable's column
                where = self.bound(variable.index + 1) + " - 1" if isinstance(item, exp.Last) else \
                    self.bound(variable.index)
                return exp.Var(this=f"element_at(seq, {where}).e.{self.column(item.this)}")
            if isinstance(item, exp.Column):
                variable, kind = self.meaning(item)
                if variable is owner:
                    where = {"current": at, "first": self.bound(owner.index), "previous": f"{at} - 1"}[kind]
                else:
                    assert variable is not None      # the FSM builder checked every condition's columns are qualified
                    where = self.bound(variable.index)   # a non-Kleene variable's event, or d[1]
                return exp.Var(this=f"element_at(seq, {where}).e.{self.column(item)}")
            return item
        return f"coalesce({node.transform(visit).sql(dialect='spark')}, false)"

    def aggregate_by_position(self, node: exp.Expr, owner: Variable, at: str) -> str:
        function = AGGREGATES[type(node)]
        variable = self.meaning(next(node.this.find_all(exp.Column)))[0]
        assert variable is not None      # the FSM builder checked every condition's columns are qualified
        if variable is owner:       # earlier occurrences: positions b_v .. at-1
            events = f"slice(seq, {self.bound(owner.index)}, {at} - {self.bound(owner.index)})"
        else:                       # all occurrences of an earlier Kleene variable
            events = f"slice(seq, {self.bound(variable.index)}, " \
                     f"{self.bound(variable.index + 1)} - {self.bound(variable.index)})"
        z, w, a = self.fresh("z"), self.fresh("w"), self.fresh("a")
        per_event = node.this.transform(
            lambda item: exp.Var(this=f"{z}.e.{self.column(item)}") if isinstance(item, exp.Column) else item)
        values = f"filter(transform({events}, {z} -> {per_event.sql(dialect='spark')}), {w} -> {w} IS NOT NULL)"
        if function == "count":
            return f"CAST(size({values}) AS bigint)"
        if function in ("min", "max"):
            return f"array_{function}({values})"
        argument = node.this.transform(
            lambda item: exp.column(self.names[item.name.lower()], table="__ev") if isinstance(item, exp.Column)
            else item).sql(dialect="spark")
        total_type = self.type_of(f"sum({argument})")
        total = f"aggregate({values}, CAST(NULL AS {total_type}), ({a}, {w}) -> coalesce({a} + {w}, {w}))"
        if function == "sum":
            return total
        average = self.type_of(f"avg({argument})")
        numerator = total if average.startswith("decimal") else f"CAST({total} AS double)"
        return f"CAST(try_divide({numerator}, size({values})) AS {average})"

    def owner(self, node: exp.Expr) -> tuple[Variable, bool]:
        """The latest variable a conjunct reads, and whether it only applies from that variable's
        second occurrence (it reads d[i-1], d[..i-1], or d[1] together with the current d)."""
        refs = [self.meaning(c) for c in node.find_all(exp.Column)]
        if not refs:
            return self.query.variables[0], False
        # the FSM builder checked every condition's columns are qualified with a variable
        owner = max((cast(Variable, v) for v, _ in refs), key=lambda v: v.index)
        kinds = {k for v, k in refs if v is owner}
        return owner, owner.kleene and bool(kinds & {"previous", "earlier"} or {"first", "current"} <= kinds)

    def check(self) -> str:
        """Does assignment ``b`` satisfy every condition at every position?"""
        tests = []
        for variable in self.query.variables:
            conditions = [c for c in self.query.conditions if self.owner(c)[0] is variable]
            if not conditions:
                continue
            o = self.fresh("o")
            first = self.bound(variable.index)
            parts = []
            for condition in conditions:
                test = self.condition(condition, variable, o)
                parts.append(f"({o} = {first} OR {test})" if self.owner(condition)[1] else test)
            tests.append(f"forall(sequence({first}, {self.bound(variable.index + 1)} - 1), {o} -> "
                         f"{' AND '.join(parts)})")
        return " AND ".join(tests) or "true"

    # -- assignments -----------------------------------------------------------------------------
    def assignments(self, index: int, at: str) -> str:
        """Every [b_index .. b_m] with b_index = ``at`` that covers the events up to the last one,
        greediest first."""
        variable = self.query.variables[index - 1]
        t = self.fresh("t")
        if index == self.m:
            fits = f"{at} <= size(seq)" if variable.kleene else f"{at} = size(seq)"
            return f"IF({fits}, array(array({at})), CAST(array() AS array<array<int>>))"
        if not variable.kleene:
            return f"transform({self.assignments(index + 1, f'({at} + 1)')}, {t} -> concat(array({at}), {t}))"
        length = self.fresh("l")
        longest = f"(size(seq) - {at} + 1 - {self.m - index})"
        return (f"flatten(transform(IF({longest} >= 1, sequence({longest}, 1, -1), CAST(array() AS array<int>)), "
                f"{length} -> transform({self.assignments(index + 1, f'({at} + {length})')}, "
                f"{t} -> concat(array({at}), {t}))))")

    def segment_start(self) -> str:
        if self.query.clause.contiguity == "EVENTS":
            return "1"
        g, i = self.fresh("g"), self.fresh("i")
        return (f"IF(size(seq) < 2, 1, aggregate(sequence(2, size(seq)), 1, ({g}, {i}) -> "
                f"IF(element_at(seq, {i}).part - element_at(seq, {i} - 1).part > 1, {i}, {g})))")

    def search(self) -> str:
        s, found = self.fresh("s"), self.fresh("found")
        starts = (f"IF(size(seq) - {self.m} + 1 >= {self.segment_start()}, sequence({self.segment_start()}, "
                  f"size(seq) - {self.m} + 1), CAST(array() AS array<int>))")
        return (f"aggregate({starts}, CAST(NULL AS array<int>), ({found}, {s}) -> IF({found} IS NOT NULL, {found}, "
                f"try_element_at(filter({self.assignments(1, s)}, b -> {self.check()}), 1)))")

    # -- the SELECT list ---------------------------------------------------------------------------
    def output(self, node: exp.Expr) -> str:
        """A SELECT item over the exploded matched events ``x`` at position ``o`` (grouped)."""
        keys = {k.lower() for k in self.query.keys}

        def event(item: exp.Column) -> str:
            return f"x.e.{self.column(item)}"

        def within(variable: Variable) -> str:
            return f"o >= {self.bound(variable.index)} AND o < {self.bound(variable.index + 1)}"

        def visit(item: exp.Expr) -> exp.Expr:
            if isinstance(item, exp.Count) and isinstance(item.this, exp.Star):
                return exp.Var(this="count(*)")
            if type(item) in AGGREGATES:
                columns = list(item.this.find_all(exp.Column))
                variable = self.meaning(columns[0])[0] if columns else None
                argument = item.this.transform(
                    lambda c: exp.Var(this=event(c)) if isinstance(c, exp.Column) else c).sql(dialect="spark")
                if variable is not None:
                    argument = f"IF({within(variable)}, {argument}, NULL)"
                return exp.Var(this=f"{AGGREGATES[type(item)]}({argument})")
            if isinstance(item, (exp.Last, exp.First)):
                variable = self.meaning(item.this)[0]
                assert variable is not None      # the FSM builder checked first() and last() take a variable's column
                where = f"{self.bound(variable.index + 1)} - 1" if isinstance(item, exp.Last) else \
                    self.bound(variable.index)
                return exp.Var(this=f"first(IF(o = {where}, {event(item.this)}, NULL), true)")
            if isinstance(item, exp.Column):
                variable, kind = self.meaning(item)
                if variable is None and item.name.lower() in keys:
                    return exp.Var(this=quote_name(item.name))
                assert variable is not None      # the FSM builder rejects unqualified columns other than the keys
                return exp.Var(this=f"first(IF(o = {self.bound(variable.index)}, {event(item)}, NULL), true)")
            return item
        return node.transform(visit).sql(dialect="spark")


def direct_sql(query: PatternQuery, stream: str, partition_length: int, timestamp: str, columns: list[str],
               type_of: TypeOf, history: str = ".. j", part: str = "j") -> str:
    """A query computing the pattern view's part ``part`` from ``stream[history]`` from scratch."""
    return _direct_query(query, stream, partition_length, timestamp, columns, type_of, history, part)


def direct_runs_sql(query: PatternQuery, stream: str, partition_length: int, timestamp: str, columns: list[str],
                    type_of: TypeOf) -> str | None:
    """The same search for every part from ``__vdf_first`` to ``j`` in one query (VERIFY VIEW): the history
    ``stream[.. j]`` is grouped once, and each group's events up to each part it has events in are searched
    as ``direct_sql`` searches them up to that part; each row's part is its last column. None without group
    keys: ``direct_sql``'s aggregate then returns a row for a part without a match, which grouping by part
    would not."""
    if not query.keys:
        return None
    return _direct_query(query, stream, partition_length, timestamp, columns, type_of, ".. j", None)


def _direct_query(query: PatternQuery, stream: str, partition_length: int, timestamp: str, columns: list[str],
                  type_of: TypeOf, history: str, part: str | None) -> str:
    """``direct_sql``'s query, or with ``part`` None ``direct_runs_sql``'s."""
    direct = _Direct(query, columns, type_of)
    keys = [quote_name(direct.names[k.lower()]) for k in query.keys]
    key_list = "".join(f"{k}, " for k in keys)
    same = " AND ".join(f"c.{k} <=> s.{k}" for k in keys) or "true"
    ordered = ", ".join(quote_name(c) for c in [timestamp] + [c for c in columns if c != timestamp])
    where = f" WHERE {query.filter_sql}" if query.filter_sql is not None else ""
    outputs = [f"{direct.output(node)} AS {quote_name(name)}" for name, node in query.items]
    events = (f"WITH events AS (SELECT {key_list}struct({ordered}) AS e, "
              f"{subscript_sql(quote_name(timestamp), partition_length)} AS part FROM {quote_name(stream)}[{history}]"
              f"{where})")
    grouped = f"FROM events{' GROUP BY ' + ', '.join(keys) if keys else ''}"
    whole = "array_sort(collect_list(named_struct('e', e, 'part', part)))"
    if part is None:        # each (group, part) searches its group's events up to that part
        at, searched = f"{INPUT_PART}, ", "seqs AS t"
        parts = [f", whole AS (SELECT {key_list}{whole} AS seq {grouped})",
                 f", ending AS (SELECT DISTINCT {key_list}part AS {INPUT_PART} FROM events WHERE part >= __vdf_first)",
                 f", seqs AS (SELECT {''.join(f'c.{k}, ' for k in keys)}c.{INPUT_PART}, slice(s.seq, 1, "
                 f"size(filter(s.seq, z -> z.part <= c.{INPUT_PART}))) AS seq FROM ending AS c JOIN whole AS s "
                 f"ON {same})"]
    else:
        at, searched = "", f"(SELECT * FROM seqs AS s WHERE EXISTS (SELECT 1 FROM ending AS c WHERE {same})) AS t"
        parts = [f", seqs AS (SELECT {key_list}{whole} AS seq {grouped})",
                 f", ending AS (SELECT DISTINCT {key_list}1 AS one FROM {quote_name(stream)}[{part}]{where})"]
    by = [*keys, INPUT_PART] if part is None else keys
    return "\n".join([
        events, *parts,
        # the search is bound once by LATERAL VIEW: a filter on b is not pushed below it as a copy
        f", found AS (SELECT {key_list}{at}seq, b FROM {searched} LATERAL VIEW explode(array({direct.search()})) AS b)",
        f", matched AS (SELECT {key_list}{at}seq, b, pos + 1 AS o, x FROM found LATERAL VIEW posexplode(seq) AS pos, x "
        f"WHERE b IS NOT NULL AND pos + 1 >= element_at(b, 1))",
        f"SELECT {', '.join(outputs)}{f', {INPUT_PART} AS {OUTPUT_PART}' if part is None else ''} FROM matched"
        f"{' GROUP BY ' + ', '.join(by) if by else ''}",
    ])
