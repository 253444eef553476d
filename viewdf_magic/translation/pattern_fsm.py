"""Pattern query → finite-state machine (the paper's Algorithm 1, corrected).

States are ``0`` (begin) and one per pattern variable, in order. Each variable ``v`` has a
*proceed* edge ``v-1 → v`` (its first occurrence) and, for a Kleene variable, a *self* edge
``v → v`` (later occurrences). A WHERE conjunct belongs to the latest variable it reads and is
checked on that variable's edges:

* a conjunct that reads the previous occurrence (``d[i-1]``), earlier occurrences
  (``agg(d[..i-1].x)``) or compares the current occurrence with ``d[1]`` only applies from the
  second occurrence on, so it sits on the self edge alone;
* every other conjunct sits on the proceed edge and (for a Kleene variable) the self edge.

What later edges and the SELECT list read of earlier events becomes an *auxiliary value* that each
run carries (``Aux``). Templates are sqlglot trees whose columns are qualified by ``EVENT`` (the
event being matched), ``RUN`` (the run's auxiliary values) or ``KEY`` (a GROUP BY column).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, cast

from sqlglot import exp

from .pattern_query import AGGREGATES, PatternQuery, Variable

EVENT, RUN, KEY = "__ev", "__run", "__key"
LENGTH = "len"                     # events in the run so far: count(*) and the preference order

TypeProbe = Callable[[str], str]   # SQL over EVENT columns (aggregates allowed) -> Spark SQL type; ValueError


@dataclass
class Aux:
    """An auxiliary value carried by every run (a field of the Helper's run structs)."""

    name: str
    kind: str                      # value, first, last, sum, count, min, max
    variable: Variable | None      # None: over all matched events
    argument: exp.Expr             # per-event template over EVENT columns
    type: str
    readers: set[int] = field(default_factory=set)   # source states of edges whose predicates read it

    @property
    def description(self) -> str:
        argument = render(self.argument, event="")
        scope = f"{self.variable.name}'s occurrences" if self.variable is not None and self.variable.kleene \
            else (self.variable.name if self.variable is not None else "all matched events")
        if self.kind == "value":
            assert self.variable is not None      # a value aux is always of one variable
            return f"{self.variable.name}.{argument}"
        if self.kind in ("first", "last"):
            return f"{self.kind} {argument} of {scope}"
        return f"{self.kind}({argument}) over {scope}"


@dataclass(frozen=True)
class Predicate:
    text: str                      # as the user wrote it
    template: exp.Expr


@dataclass(frozen=True)
class Edge:
    source: int                    # 0 is the begin state
    target: int
    kind: str                      # proceed or self
    predicates: tuple[Predicate, ...]

    @property
    def label(self) -> str:
        return " AND ".join(p.text for p in self.predicates) or "TRUE"


@dataclass
class PatternFSM:
    """States, edges and auxiliary values of a pattern query, ready for SQL generation."""

    query: PatternQuery
    edges: list[Edge]
    auxes: list[Aux]
    outputs: list[tuple[str, exp.Expr]]         # final view columns after the keys (templates)
    killer: exp.Expr | None                     # an event no variable can take (template), if knowable

    @property
    def variables(self) -> tuple[Variable, ...]:
        return self.query.variables

    @property
    def final(self) -> Variable:
        return self.variables[-1]

    def edge(self, target: int, kind: str) -> Edge | None:
        return next((e for e in self.edges if e.target == target and e.kind == kind), None)

    def live(self, state: int) -> list[Aux]:
        """Auxiliary values that decide a run's future from ``state``: two runs in the same state
        that agree on these accept exactly the same continuations (dominance)."""
        return [aux for aux in self.auxes if any(reader >= state for reader in aux.readers)]

    def many(self, state: int) -> bool:
        """Can several non-dominated runs be in ``state`` at once?"""
        return bool(self.live(state))

    @property
    def entries(self) -> list[Variable]:
        """Variables right after a Kleene variable: where a run entered them decides which of two
        runs with the same start is greedier (the earlier Kleene variable took more events)."""
        return [v for v in self.variables[1:] if self.variables[v.index - 2].kleene]

    def entry_field(self, variable: Variable) -> str:
        return f"enter_{variable.index}"

    def stored_states(self) -> list[int]:
        """States whose runs the Helper keeps between parts (a non-Kleene final state has no future)."""
        last = self.final
        return [v.index for v in self.variables if v is not last or v.kleene]


def render(template: exp.Expr, event: str = "ev", run: str = "r", key: str = "") -> str:
    """Spark SQL text of a template, its EVENT/RUN/KEY qualifiers replaced by the given prefixes
    (an empty prefix leaves the column unqualified)."""
    prefixes = {EVENT: event, RUN: run, KEY: key}

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table in prefixes:
            column = exp.to_identifier(node.name).sql(dialect="spark")
            prefix = prefixes[node.table]
            return exp.Var(this=f"{prefix}.{column}" if prefix else column)
        return node
    return template.transform(swap).sql(dialect="spark")


def build_fsm(query: PatternQuery, columns: dict[str, str], probe: TypeProbe) -> PatternFSM:
    """The FSM of a checked pattern query; ``columns`` maps the stream's lowercased column names to
    their names, ``probe`` types SQL expressions. Raises positioned errors for unsupported shapes."""
    builder = _Builder(query, columns, probe)
    return builder.build()


class _Builder:
    def __init__(self, query: PatternQuery, columns: dict[str, str], probe: TypeProbe) -> None:
        self.query = query
        self.columns = columns
        self.probe = probe
        self.auxes: dict[tuple, Aux] = {}
        self.keys = {k.lower() for k in query.keys}

    # -- the pieces ----------------------------------------------------------------------------
    def build(self) -> PatternFSM:
        query = self.query
        for key in query.keys:
            self._column(key, query.tree.args["group"])
        proceed: dict[int, list[Predicate]] = {v.index: [] for v in query.variables}
        self_: dict[int, list[Predicate]] = {v.index: [] for v in query.variables if v.kleene}
        local: dict[int, list[exp.Expr]] = {v.index: [] for v in query.variables}
        for condition in query.conditions:
            owner, reads = self._owner(condition)
            text = self._text(condition)
            from_second = owner.kleene and (reads & {"previous", "earlier"} or {"first", "current"} <= reads)
            if not from_second:
                template = self._rewrite(condition, owner, "proceed")
                self._check_boolean(template, condition)
                self._read_from(template, owner.index - 1)
                proceed[owner.index].append(Predicate(text, template))
                if reads <= {"current"} and not self._reads_run(template):
                    local[owner.index].append(template)
            if owner.kleene:
                template = self._rewrite(condition, owner, "self")
                self._check_boolean(template, condition)
                self._read_from(template, owner.index)
                self_[owner.index].append(Predicate(text, template))
        edges = []
        for variable in query.variables:
            edges.append(Edge(variable.index - 1, variable.index, "proceed", tuple(proceed[variable.index])))
            if variable.kleene:
                edges.append(Edge(variable.index, variable.index, "self", tuple(self_[variable.index])))
        outputs = [(name, self._output(node)) for name, node in query.items]
        return PatternFSM(query, edges, list(self.auxes.values()), outputs, self._killer(local))

    def _killer(self, local: dict[int, list[exp.Expr]]) -> exp.Expr | None:
        """NOT (some variable's every-occurrence single-event conditions hold)."""
        if any(not conditions for conditions in local.values()):
            return None
        takes: dict[str, exp.Expr] = {}
        for conditions in local.values():
            take = exp.and_(*[exp.Coalesce(this=c.copy(), expressions=[exp.false()]) for c in conditions])
            takes.setdefault(take.sql(dialect="spark"), take)
        return exp.not_(exp.or_(*[exp.paren(t) for t in takes.values()]))

    def _text(self, node: exp.Expr) -> str:
        start, end = self.query.position(node)
        return self.query.fragment.source[start:end] if end is not None else node.sql(dialect="spark")

    def _column(self, name: str, node: exp.Expr) -> str:
        found = self.columns.get(name.lower())
        if found is None:
            raise self.query.error(f"{self.query.clause.source.text} has no column '{name}'", node)
        return found

    def _reference(self, column: exp.Column) -> tuple[Variable | None, str]:
        """(variable, occurrence kind) of a column reference; (None, "") when unqualified."""
        table = column.table
        if not table:
            return None, ""
        occurrence = self.query.clause.occurrences.get(table)
        if occurrence is not None:
            return occurrence.variable, occurrence.kind
        variable = self.query.variable(table)
        if variable is None:
            raise self.query.error(f"'{table}' is not a pattern variable of PATTERN "
                                   f"[{', '.join(v.label for v in self.query.variables)}]", column)
        return variable, "current"

    def _owner(self, condition: exp.Expr) -> tuple[Variable, set[str]]:
        """The latest variable a conjunct reads, and how it reads that variable."""
        seen: list[tuple[Variable, str]] = []
        for column in condition.find_all(exp.Column):
            variable, kind = self._reference(column)
            if variable is None:
                raise self.query.error(f"qualify '{column.name}' with a pattern variable (e.g. "
                                       f"{self.query.variables[0].name}.{column.name}); WHERE conditions of a "
                                       f"pattern query are about pattern variables", column)
            seen.append((variable, kind))
        for node in condition.find_all(exp.Or):
            # every column was checked above to name a variable
            names = {cast(Variable, self._reference(c)[0]).key for c in node.find_all(exp.Column)}
            if len(names) > 1:
                raise self.query.error("OR across pattern variables is not supported: each condition is checked "
                                       "when its latest variable takes an event, so an OR may only combine "
                                       "conditions on one variable; split it into separate patterns",
                                       node)
        if not seen:
            return self.query.variables[0], {"current"}
        owner = max((v for v, _ in seen), key=lambda v: v.index)
        for call in condition.find_all(exp.Last, exp.First):
            inner = call.this
            if isinstance(inner, exp.Column) and self._reference(inner)[0] is owner:
                raise self.query.error(f"{type(call).__name__.lower()}({owner.name}...) reads {owner.name}'s own "
                                       f"occurrences; in its conditions use {owner.name}[1] or "
                                       f"{owner.name}[i-1]", call)
        return owner, {kind for v, kind in seen if v is owner}

    # -- rewriting references --------------------------------------------------------------------
    def _rewrite(self, node: exp.Expr, owner: Variable | None, context: str) -> exp.Expr:
        """A condition (context proceed/self, on ``owner``'s edge) or SELECT item (context select)
        with every reference replaced by EVENT, RUN or KEY columns."""
        def visit(item: exp.Expr) -> exp.Expr:
            if isinstance(item, exp.Column) and item.table in (EVENT, RUN, KEY):
                return item
            if isinstance(item, exp.Count) and isinstance(item.this, exp.Star):
                if context != "select":
                    raise self.query.error("count(*) is not supported in a condition; count a variable's "
                                           "occurrences with count(d[..i-1].x)", item)
                return exp.column(LENGTH, table=RUN)
            if type(item) in AGGREGATES:
                return self._aggregate(item, owner, context)
            if isinstance(item, (exp.Last, exp.First)):
                return self._first_last(item)
            if isinstance(item, exp.AggFunc):
                raise self.query.error(f"aggregate {item.sql_name().lower()} is not supported in a pattern query; "
                                       f"use sum, count, min, max or avg", item)
            if isinstance(item, exp.Column):
                return self._plain(item, owner, context)
            return item
        return node.transform(visit)

    def _plain(self, column: exp.Column, owner: Variable | None, context: str) -> exp.Expr:
        variable, kind = self._reference(column)
        name = self._column(column.name, column)
        if variable is None:          # SELECT only (conditions were checked by _owner)
            if name.lower() not in self.keys:
                raise self.query.error(f"'{column.name}' must be in GROUP BY or inside an aggregate (e.g. "
                                       f"sum({column.name}) over the match), or qualified with a variable",
                                       column)
            return exp.column(next(k for k in self.query.keys if k.lower() == name.lower()), table=KEY)
        value = exp.column(name, table=EVENT)
        if variable is owner:
            if kind == "current" or (kind == "first" and context == "proceed"):
                return value
            if kind == "first":
                return self._aux("first", variable, value, column)
            if kind == "previous":
                return self._aux("last", variable, value, column)
            raise self.query.error(f"{variable.name}[..i-1] must be inside an aggregate, e.g. "
                                   f"avg({variable.name}[..i-1].{column.name})", column)
        if not variable.kleene:
            return self._aux("value", variable, value, column)
        if kind == "first":
            return self._aux("first", variable, value, column)
        if kind == "current" and context != "select":
            raise self.query.error(f"'{variable.name}' is a Kleene variable: say which occurrence, e.g. "
                                   f"{variable.name}[1].{column.name}, last({variable.name}.{column.name}) or "
                                   f"avg({variable.name}.{column.name})", column)
        if kind == "current":
            raise self.query.error(f"'{variable.name}' is a Kleene variable: select {variable.name}[1]."
                                   f"{column.name}, last({variable.name}.{column.name}) or an aggregate such as "
                                   f"max({variable.name}.{column.name})", column)
        raise self.query.error(f"{variable.name}[{'i-1' if kind == 'previous' else '..i-1'}] can only be used "
                               f"in {variable.name}'s own conditions", column)

    def _first_last(self, node: exp.Expr) -> exp.Expr:
        word = "last" if isinstance(node, exp.Last) else "first"
        inner = node.this
        variable = self._reference(inner)[0] if isinstance(inner, exp.Column) else None
        if variable is None or self._reference(inner)[1] != "current":
            raise self.query.error(f"{word}() takes a variable's column, e.g. {word}(d.price)", node)
        value = exp.column(self._column(inner.name, inner), table=EVENT)
        return self._aux(word, variable, value, node)

    def _aggregate(self, node: exp.Expr, owner: Variable | None, context: str) -> exp.Expr:
        function = AGGREGATES[type(node)]
        argument = node.this
        if isinstance(argument, exp.Distinct) or node.args.get("distinct"):
            raise self.query.error("DISTINCT aggregates are not supported in a pattern query", node)
        if argument is None or isinstance(argument, exp.Star):
            raise self.query.error(f"{function}() needs an argument", node)
        scopes = {self._reference(c) for c in argument.find_all(exp.Column)}
        for inner in argument.find_all(exp.AggFunc):
            raise self.query.error("an aggregate inside an aggregate is not supported", inner)
        variables = {v for v, _ in scopes}
        kinds = {k for _, k in scopes}
        if len(variables) > 1:
            raise self.query.error(f"{function}() must read one variable's events (or, in SELECT, unqualified "
                                   f"columns for all matched events)", node)
        variable = next(iter(variables), None)
        if context == "select":
            if kinds - {"", "current"}:
                raise self.query.error(f"in SELECT, aggregate over a variable as {function}(d.x) (all its "
                                       f"occurrences) or over the match as {function}(x)", node)
        elif variable is None:
            raise self.query.error(f"{function}() in a condition must read a variable's occurrences, e.g. "
                                   f"{function}(d[..i-1].x)", node)
        elif variable is owner:
            if kinds != {"earlier"}:
                raise self.query.error(f"in {owner.name}'s own conditions, aggregate over the earlier occurrences: "
                                       f"{function}({owner.name}[..i-1].x)", node)
        elif not variable.kleene or kinds != {"current"}:
            raise self.query.error(f"aggregate over an earlier Kleene variable's occurrences, e.g. "
                                   f"{function}(d.x)", node)

        def to_event(item: exp.Expr) -> exp.Expr:
            if isinstance(item, exp.Column):
                return exp.column(self._column(item.name, item), table=EVENT)
            return item
        template = argument.transform(to_event)
        if function == "avg":
            total = self._aux("sum", variable, template, node)
            count = self._aux("count", variable, template, node)
            kind = self._probe(f"avg({render(template, event=EVENT)})", node)
            division = exp.func("try_divide", exp.cast(total, "double") if not kind.startswith("decimal") else total,
                                count)
            return exp.cast(division, kind)
        return self._aux(function, variable, template, node)

    def _aux(self, kind: str, variable: Variable | None, argument: exp.Expr,
             node: exp.Expr) -> exp.Column:
        key = (kind, variable.key if variable else None, render(argument, event=EVENT))
        aux = self.auxes.get(key)
        if aux is None:
            argument_sql = render(argument, event=EVENT)
            probe = {"sum": f"sum({argument_sql})", "count": f"count({argument_sql})",
                     "min": f"min({argument_sql})", "max": f"max({argument_sql})"}.get(kind, argument_sql)
            aux = Aux(self._aux_name(kind, variable, argument), kind, variable, argument, self._probe(probe, node))
            self.auxes[key] = aux
        return exp.column(aux.name, table=RUN)

    def _aux_name(self, kind: str, variable: Variable | None, argument: exp.Expr) -> str:
        scope = variable.name.lower() if variable is not None else "all"
        what = argument.name.lower() if isinstance(argument, exp.Column) else "x"
        base = f"{scope}_{what}" if kind == "value" else f"{scope}_{kind}_{what}"
        taken = {aux.name for aux in self.auxes.values()} | {LENGTH}
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        return name

    # -- checks --------------------------------------------------------------------------------
    def _probe(self, sql: str, node: exp.Expr) -> str:
        try:
            return self.probe(sql)
        except ValueError as exc:
            raise self.query.error(str(exc), node) from None

    def _typed(self, template: exp.Expr) -> str:
        """The template as SQL over the probe's EVENT columns, run values as typed NULLs."""
        types = {aux.name: aux.type for aux in self.auxes.values()}
        types[LENGTH] = "bigint"

        def swap(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Column) and node.table == RUN:
                return exp.cast(exp.null(), types[node.name])
            if isinstance(node, exp.Column) and node.table == KEY:
                return exp.column(node.name, table=EVENT)
            return node
        return template.transform(swap).sql(dialect="spark")

    def _check_boolean(self, template: exp.Expr, node: exp.Expr) -> None:
        kind = self._probe(self._typed(template), node)
        if kind != "boolean":
            raise self.query.error(f"a condition must be true or false, but this is of type {kind}", node)

    def _read_from(self, template: exp.Expr, state: int) -> None:
        """Record that an edge leaving ``state`` reads the run values in ``template``."""
        names = {c.name for c in template.find_all(exp.Column) if c.table == RUN}
        for aux in self.auxes.values():
            if aux.name in names:
                aux.readers.add(state)

    def _reads_run(self, template: exp.Expr) -> bool:
        return any(c.table == RUN for c in template.find_all(exp.Column))

    def _output(self, node: exp.Expr) -> exp.Expr:
        template = self._rewrite(node, None, "select")
        self._probe(self._typed(template), node)
        return template
