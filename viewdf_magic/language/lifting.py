"""Lift a one-part query to a query over a run of parts (range steps, issue 17).

A ViewDF clause computes one part ``V[j]``. When many consecutive parts are ready, the same clause
can compute all of them in one Spark job: every input relation carries the part ``j`` each of its
rows counts for (the column ``__vdf_j``; a row of ``S[j-2 .. j]`` is repeated for each ``j`` whose
range holds it), and the query is rewritten so that no row meets a row of another part:

* joins between lifted relations gain ``left part = right part``;
* GROUP BY and window functions' PARTITION BY gain the part;
* every SELECT outputs the part as its last column, so derived tables, CTEs and set operations
  carry it on, and the query's last column says which part each output row belongs to.

An input that reads every part so far (``X[.. j]``, one of ``prefixes``) would repeat its history for
every step of the run. Where it is joined with a relation that has one part per row, it is read once
instead: each row carries the first step it counts for, and the join gains ``first step <= part``
(``Lifted.joined`` names those inputs). That needs an inner, semi, anti or left outer join whose right
side it is, with a relation of one part per row before it; or, when every join of the SELECT is
inner, any position (the condition goes to the first such relation's join).

Shapes whose meaning would change are refused with a reason, and keep per-part steps: ORDER BY
or LIMIT (a per-part top-n), an aggregate without GROUP BY (it returns a row even for an empty
part, which a lifted query has no row to group), GROUPING SETS/ROLLUP/CUBE, a subquery in an
expression that reads parts, nondeterministic functions, and functions sqlglot does not know
(a user's function may be nondeterministic). The analysis is pure sqlglot: no Spark, no catalog.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from .tokens import ViewDFSpark

INPUT_PART = "__vdf_j"        # the part column of every lifted input relation
OUTPUT_PART = "__vdf_part"    # the part column of the lifted query's output (its last column)
RESERVED_PREFIX = "__vdf_"        # names the lifting adds; a query that uses them is not lifted

_NONDETERMINISTIC = (exp.Rand, exp.Randn, exp.Uuid, exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime,
                     exp.CurrentDatetime)
_NONDETERMINISTIC_NAMES = {"rand", "random", "randn", "uuid", "shuffle", "monotonically_increasing_id",
                           "spark_partition_id", "input_file_name", "now", "current_timestamp", "localtimestamp",
                           "randstr", "uniform", "try_reflect", "reflect", "java_method"}


class NotLiftable(Exception):
    """The query's meaning over a run of parts would differ; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Lifted:
    """A lifted query: ``sql`` reads each lifted input with an ``__vdf_j`` column and returns the
    part of each row as its last column; or, when ``sql`` is None, why the query is not lifted."""

    sql: str | None
    reason: str = ""
    joined: frozenset[str] = frozenset()    # prefix inputs read once, each row with the first step it counts for


def query_tree(query: str | exp.Expr) -> exp.Expr | None:
    """A tree the caller may change: ``query`` parsed, or a copy of ``query``'s tree (a compiled query keeps
    the one it was parsed into); None when sqlglot cannot parse the text."""
    if isinstance(query, exp.Expr):
        return query.copy()
    try:
        return sqlglot.parse_one(query, read=ViewDFSpark)
    except sqlglot.errors.SqlglotError:
        return None


def lift(query: str | exp.Expr, inputs: frozenset[str], prefixes: frozenset[str] = frozenset()) -> Lifted:
    """Lift ``query`` (SQL, or a compiled query's tree), whose placeholder tables ``inputs`` are read per part
    (the others, e.g. dimension tables, are the same for every part); those of ``inputs`` that are also
    ``prefixes`` read every part so far, and are joined on their first step where the query allows it."""
    once = {name.lower() for name in prefixes}
    while True:
        tree = query_tree(query)
        if tree is None:
            return Lifted(None, "sqlglot cannot parse the compiled query")
        lifter = _Lifter({name.lower() for name in inputs}, once)
        try:
            check_names(tree, inputs)
            if not lifter.query(tree, {}, OUTPUT_PART):
                raise NotLiftable("its result does not depend on any part it reads")
        except NotLiftable as refused:
            return Lifted(None, refused.reason)
        if not lifter.repeated & once:
            return Lifted(tree.sql(dialect=ViewDFSpark), joined=frozenset(p for p in prefixes if p.lower() in once))
        once -= lifter.repeated      # somewhere they cannot be joined on their first step: repeat them everywhere


def check_names(tree: exp.Expr, inputs: frozenset[str]) -> None:
    """Refuse (NotLiftable) a query that uses reserved names besides its ``inputs``, a nondeterministic or
    unknown function, PIVOT or TABLESAMPLE: rewriting it would change what it computes."""
    placeholders = {name.lower() for name in inputs}
    for node in tree.walk():
        if isinstance(node, exp.Identifier) and node.name.lower().startswith(RESERVED_PREFIX) \
                and node.name.lower() not in placeholders:
            raise NotLiftable(f"it uses the name {node.name}, which range steps reserve")
        if isinstance(node, _NONDETERMINISTIC):
            raise NotLiftable(f"it calls {node.sql(dialect=ViewDFSpark)}, which is nondeterministic")
        if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous) \
                and node.key.lower() in _NONDETERMINISTIC_NAMES:
            raise NotLiftable(f"it calls {node.key.lower()}(), which is nondeterministic")
        if isinstance(node, exp.Anonymous):
            name = node.name.lower()
            what = "is nondeterministic" if name in _NONDETERMINISTIC_NAMES else \
                "is not known to be deterministic (a user-defined function?)"
            raise NotLiftable(f"it calls {node.name}(), which {what}")
        if isinstance(node, (exp.Pivot, exp.TableSample)):
            raise NotLiftable(f"it uses {node.key.upper()}")


class _Lifter:
    """Rewrites a parsed query in place; ``scope`` maps a visible relation name to its part column."""

    def __init__(self, inputs: set[str], once: set[str]) -> None:
        self.inputs = inputs
        self.once = once                # prefix inputs to join on their first step
        self.repeated: set[str] = set()  # those of them read somewhere that needs every step's copy
        self._names = (f"{RESERVED_PREFIX}p{k}" for k in itertools.count())

    def query(self, node: exp.Expr, scope: dict[str, str], out: str) -> bool:
        """Lift a query; True when it reads parts (and now outputs its part as column ``out``)."""
        scope = self._ctes(node, scope)
        if node.args.get("order") is not None:
            raise NotLiftable("it has ORDER BY, which orders all parts' rows together")
        if node.args.get("limit") is not None or node.args.get("offset") is not None:
            raise NotLiftable("it has LIMIT or OFFSET, which would cut across parts")
        if isinstance(node, exp.Subquery):
            return self.query(node.this, scope, out)
        if isinstance(node, exp.SetOperation):
            left, right = self.query(node.left, scope, out), self.query(node.right, scope, out)
            if left != right:
                raise NotLiftable(f"one side of its {node.key.upper()} reads no part")
            return left
        if isinstance(node, exp.Select):
            return self._select(node, scope, out)
        raise NotLiftable(f"it uses {node.key.upper()}")

    def _ctes(self, node: exp.Expr, scope: dict[str, str]) -> dict[str, str]:
        with_ = node.args.get("with_") or node.args.get("with")
        if not with_:
            return scope
        if with_.args.get("recursive"):
            raise NotLiftable("it has a recursive CTE")
        scope = dict(scope)
        for cte in with_.expressions:
            column = next(self._names)
            if self.query(cte.this, scope, column):
                scope[cte.alias_or_name.lower()] = column
            else:
                scope.pop(cte.alias_or_name.lower(), None)
        return scope

    def _relation(self, node: exp.Expr, scope: dict[str, str]) -> _Relation | None:
        """A lifted relation; None for one that reads no part."""
        if isinstance(node, exp.Table):
            if node.args.get("db") or not isinstance(node.this, exp.Identifier):
                return None
            name = node.name.lower()
            column = INPUT_PART if name in self.inputs else scope.get(name)
            if column is None:
                return None
            return _Relation(node.alias_or_name, column, name if name in self.once else None)
        if isinstance(node, exp.Subquery):
            column = next(self._names)
            if not self.query(node, scope, column):
                return None
            if not node.alias:
                node.set("alias", exp.TableAlias(this=exp.to_identifier(next(self._names))))
            return _Relation(node.alias, column)
        if self._reads_parts(node, scope):
            raise NotLiftable(f"it reads parts through {node.key.upper()}")
        return None

    def _select(self, select: exp.Select, scope: dict[str, str], out: str) -> bool:
        source = select.args.get("from_") or select.args.get("from")
        relations: list[tuple[exp.Join | None, _Relation | None]] = []
        if source is not None:
            relations.append((None, self._relation(source.this, scope)))
        for join in select.args.get("joins") or []:
            relations.append((join, self._relation(join.this, scope)))
        lifted: list[tuple[exp.Join | None, _Relation]] = [(join, found) for join, found in relations
                                                            if found is not None]
        self._no_parts_in_expressions(select, scope)
        if not lifted:
            return False
        once = self._joined_once(select, lifted)
        self.repeated |= {found.prefix for index, (_, found) in enumerate(lifted)
                          if found.prefix is not None and index not in once}
        parts: list[exp.Expr] = []      # the part columns of the relations joined so far
        waiting: list[exp.Expr] = []    # first steps of prefixes before any relation with one part per row
        for index, (join, found) in enumerate(lifted):
            mine = exp.column(found.column, table=found.alias)
            if index in once:
                if parts:
                    _add_condition(join, exp.LTE(this=mine, expression=_coalesce(parts)))
                else:
                    waiting.append(mine)
                continue
            if parts:
                self._join_on_part(join, _coalesce(parts), mine, found.column, [c for c in parts])
            for first_step in waiting:
                _add_condition(join, exp.LTE(this=first_step, expression=mine.copy()))
            waiting = []
            if _kind(join) not in ("SEMI", "ANTI"):
                parts.append(mine)
        part = _coalesce(parts)
        self._group_by_part(select, part)
        for window in select.find_all(exp.Window):
            if _own_scope(window, select):
                window.set("partition_by", [*(window.args.get("partition_by") or []), part.copy()])
        select.set("expressions", [*select.expressions, exp.alias_(part.copy(), out)])
        return True

    @staticmethod
    def _joined_once(select: exp.Select, lifted: list[tuple[exp.Join | None, _Relation]]) -> set[int]:
        """The positions of prefix inputs in ``lifted`` that can be joined on their first step: after a
        relation with one part per row, by an inner, semi, anti or left outer join of their own; or anywhere
        when every join of ``select`` is inner."""
        anchor = next((index for index, (join, found) in enumerate(lifted)
                       if found.prefix is None and _kind(join) not in ("SEMI", "ANTI")), None)
        if anchor is None:
            return set()
        all_inner = all(_inner(join) for join in select.args.get("joins") or [])
        once = set()
        for index, (join, found) in enumerate(lifted):
            if found.prefix is None:
                continue
            if index > anchor and (_inner(join) or _right_of_left(join)):
                once.add(index)
            elif index < anchor and all_inner:      # the condition goes to the anchor's join
                once.add(index)
        return once

    def _join_on_part(self, join: exp.Join | None, left: exp.Expr, right: exp.Expr,
                      column: str, before: list[exp.Expr]) -> None:
        assert join is not None
        if join.args.get("using"):
            names = {c.name for c in before}
            if names != {column}:
                raise NotLiftable("it joins a derived table with USING")
            join.set("using", [*join.args["using"], exp.to_identifier(column)])
            return
        if join.method and join.method.upper() == "NATURAL":
            raise NotLiftable("it has a NATURAL JOIN")
        _add_condition(join, exp.EQ(this=left.copy(), expression=right))

    @staticmethod
    def _group_by_part(select: exp.Select, part: exp.Expr) -> None:
        group = select.args.get("group")
        if group is not None:
            if any(group.args.get(k) for k in ("grouping_sets", "rollup", "cube", "totals")) or \
                    any(isinstance(e, (exp.GroupingSets, exp.Rollup, exp.Cube)) for e in group.expressions):
                raise NotLiftable("it uses GROUPING SETS, ROLLUP or CUBE")
            if not group.expressions:
                raise NotLiftable("it has GROUP BY ALL")
            group.set("expressions", [*group.expressions, part.copy()])
            return
        if select.args.get("having") is not None or any(aggregates(e) for e in select.expressions):
            raise NotLiftable("it aggregates without GROUP BY, which returns a row even for an empty part")

    def _no_parts_in_expressions(self, select: exp.Select, scope: dict[str, str]) -> None:
        """A subquery inside an expression (IN, EXISTS, a scalar) would need the part too."""
        for key, value in select.args.items():
            if key in ("from_", "from", "joins", "with_", "with"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, exp.Expression) and self._reads_parts(child, scope):
                    raise NotLiftable("a subquery in an expression reads parts")
        for join in select.args.get("joins") or []:
            on = join.args.get("on")
            if on is not None and self._reads_parts(on, scope):
                raise NotLiftable("a subquery in a join condition reads parts")

    def _reads_parts(self, node: exp.Expr, scope: dict[str, str]) -> bool:
        return any(isinstance(t, exp.Table) and (t.name.lower() in self.inputs or t.name.lower() in scope)
                   for t in node.find_all(exp.Table))


@dataclass(frozen=True)
class _Relation:
    """A relation of a FROM clause that reads parts: the alias its columns are qualified with, its part
    column, and its name when it is a prefix input that may be joined on its first step."""

    alias: str
    column: str
    prefix: str | None = None


def _kind(join: exp.Join | None) -> str:
    return ((join.kind or "") if join is not None else "").upper()


def _plain(join: exp.Join | None) -> bool:
    """A join that takes an extra ON condition: no USING, not NATURAL."""
    return join is not None and not join.args.get("using") and not (join.method and join.method.upper() == "NATURAL")


def _inner(join: exp.Join | None) -> bool:
    return _plain(join) and join is not None and not join.side and _kind(join) in ("", "INNER", "CROSS")


def _right_of_left(join: exp.Join | None) -> bool:
    """A semi, anti or left outer join: the relation joined keeps no row of its own."""
    return _plain(join) and join is not None and (
        _kind(join) in ("SEMI", "ANTI") or ((join.side or "").upper() == "LEFT" and _kind(join) in ("", "OUTER")))


def _add_condition(join: exp.Join | None, condition: exp.Expr) -> None:
    assert join is not None
    on = join.args.get("on")
    join.set("on", condition if on is None else exp.and_(exp.Paren(this=on), condition))
    if _kind(join) == "CROSS":
        join.set("kind", None)


def _coalesce(parts: list[exp.Expr]) -> exp.Expr:
    """The part of a joined row: outer joins may leave some sides' parts NULL."""
    if len(parts) == 1:
        return parts[0].copy()
    return exp.Coalesce(this=parts[0].copy(), expressions=[p.copy() for p in parts[1:]])


def _own_scope(node: exp.Expr, select: exp.Select) -> bool:
    parent = node.parent
    while parent is not None and parent is not select:
        if isinstance(parent, (exp.Select, exp.Subquery)):
            return False
        parent = parent.parent
    return parent is select


def aggregates(node: exp.Expr) -> bool:
    """Whether ``node`` aggregates in its own scope (not inside a window or a subquery)."""
    if isinstance(node, exp.AggFunc):
        return True
    if isinstance(node, (exp.Window, exp.Subquery, exp.Select)):
        return False
    return any(aggregates(child) for child in node.iter_expressions())
