"""When a compiled query certainly returns no rows, as a formula over which of its inputs are empty.

A part whose query is known to be empty is recorded without running Spark (issue 17). The
analysis is conservative: "empty" is only claimed when it follows from the query's shape, for
every possible content of the other inputs.

* A SELECT is empty when its FROM clause is: the driving relation (FROM, and every INNER, CROSS
  or SEMI joined one) is empty; a LEFT join keeps the left side's emptiness, a RIGHT join the
  right side's, a FULL join needs both sides empty. WHERE, DISTINCT, window functions, LATERAL VIEW
  and LIMIT never add rows.
* Not so a SELECT without FROM, or one that aggregates without GROUP BY (one row even over
  nothing), or uses GROUPING SETS/ROLLUP/CUBE or PIVOT, or calls a function unknown to sqlglot
  (it could be an aggregate; SCALAR lists those known to be scalar): those are never known to be empty.
* UNION needs every branch empty, INTERSECT one, EXCEPT its left side.
* Relations are placeholders (inputs), CTEs (their own formula) or subqueries; anything else
  (a table function, VALUES, an unknown name) is never known to be empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

from sqlglot import exp

from .lifting import query_tree

# the automaton plan's search of MATCH_RECOGNIZE views (engine/match_runner.py): a scalar function the warehouse
# registers on its session
MATCH_SEARCH = "viewdf_match_run"
SCALAR = frozenset({MATCH_SEARCH, "raise_error"})     # scalar functions sqlglot does not know


@dataclass(frozen=True)
class EmptyWhen:
    """A formula over inputs: ``input`` (that input is empty), ``any``/``all`` of sub-formulas,
    or ``never`` (the query is not known to be empty, whatever its inputs hold)."""

    kind: str
    name: str = ""
    terms: tuple["EmptyWhen", ...] = ()

    @property
    def never(self) -> bool:
        return self.kind == "never"

    def holds(self, is_empty: Callable[[str], bool]) -> bool:
        """Whether the query is certainly empty, given which inputs are."""
        if self.kind == "input":
            return is_empty(self.name)
        if self.kind == "any":
            return any(term.holds(is_empty) for term in self.terms)
        if self.kind == "all":
            return all(term.holds(is_empty) for term in self.terms)
        return False

    def describe(self, names: Mapping[str, str]) -> str:
        """The formula in words, e.g. ``M[j] is empty or Helper[j-1] is empty``, with inputs named by
        ``names`` (placeholder -> reference text)."""
        if self.kind == "input":
            return f"{names.get(self.name, self.name)} is empty"
        joiner = " or " if self.kind == "any" else " and "
        parts = [term.describe(names) for term in self.terms]
        return joiner.join(f"({part})" if term.kind in ("any", "all") else part
                           for part, term in zip(parts, self.terms))


NEVER = EmptyWhen("never")


def _input(name: str) -> EmptyWhen:
    return EmptyWhen("input", name)


def _any(terms: list[EmptyWhen]) -> EmptyWhen:
    """Empty when one of ``terms`` holds (terms that never hold drop out)."""
    kept = _unique(t for term in terms if not term.never
                   for t in (term.terms if term.kind == "any" else (term,)))
    return NEVER if not kept else kept[0] if len(kept) == 1 else EmptyWhen("any", terms=tuple(kept))


def _all(terms: list[EmptyWhen]) -> EmptyWhen:
    """Empty when every one of ``terms`` holds."""
    if not terms or any(term.never for term in terms):
        return NEVER
    kept = _unique(t for term in terms for t in (term.terms if term.kind == "all" else (term,)))
    return kept[0] if len(kept) == 1 else EmptyWhen("all", terms=tuple(kept))


def _unique(terms: Iterator[EmptyWhen]) -> list[EmptyWhen]:
    return list(dict.fromkeys(terms))


def empty_when(query: str | exp.Expr, inputs: frozenset[str]) -> EmptyWhen:
    """When ``query`` (a compiled query's SQL or tree, whose placeholder tables are ``inputs``) returns no rows."""
    tree = query if isinstance(query, exp.Expr) else query_tree(query)     # read, never changed
    if tree is None:
        return NEVER
    return _query(tree, {name.lower(): _input(name) for name in inputs})


def _query(node: exp.Expr, scope: dict[str, EmptyWhen]) -> EmptyWhen:
    scope = _with_ctes(node, scope)
    if isinstance(node, exp.Subquery):
        return _query(node.this, scope)
    if isinstance(node, exp.Union):
        return _all([_query(node.left, scope), _query(node.right, scope)])
    if isinstance(node, exp.Intersect):
        return _any([_query(node.left, scope), _query(node.right, scope)])
    if isinstance(node, exp.Except):
        return _query(node.left, scope)
    if isinstance(node, exp.Select):
        return _select(node, scope)
    return NEVER


def _with_ctes(node: exp.Expr, scope: dict[str, EmptyWhen]) -> dict[str, EmptyWhen]:
    with_ = node.args.get("with_") or node.args.get("with")
    if not with_:
        return scope
    scope = dict(scope)
    for cte in with_.expressions:
        scope[cte.alias_or_name.lower()] = _query(cte.this, scope)
    return scope


def _select(select: exp.Select, scope: dict[str, EmptyWhen]) -> EmptyWhen:
    source = select.args.get("from_") or select.args.get("from")
    if source is None or _aggregates_everything(select):
        return NEVER
    empty = _relation(source.this, scope)
    for join in select.args.get("joins") or []:
        right = _relation(join.this, scope)
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        if side == "FULL":
            empty = _all([empty, right])
        elif side == "RIGHT":
            empty = right
        elif side == "LEFT" and kind != "SEMI":
            pass                        # LEFT [OUTER] and LEFT ANTI keep every left row or fewer
        else:
            empty = _any([empty, right])   # [INNER], CROSS, NATURAL, LEFT SEMI
    return empty


def _relation(node: exp.Expr, scope: dict[str, EmptyWhen]) -> EmptyWhen:
    if isinstance(node, exp.Table):
        if node.args.get("pivots") or not isinstance(node.this, exp.Identifier) or node.args.get("db"):
            return NEVER
        return scope.get(node.name.lower(), NEVER)
    if isinstance(node, exp.Subquery):
        if node.args.get("pivots"):
            return NEVER
        return _query(node.this, _with_ctes(node, scope))
    return NEVER


def _aggregates_everything(select: exp.Select) -> bool:
    """True when the SELECT may return a row over no input: it aggregates without GROUP BY (or
    with grouping sets, whose empty set is a grand total), or has HAVING without GROUP BY."""
    group = select.args.get("group")
    if group is not None:
        return any(group.args.get(k) for k in ("grouping_sets", "rollup", "cube", "totals")) \
            or any(isinstance(e, (exp.GroupingSets, exp.Rollup, exp.Cube)) for e in group.expressions) \
            or not group.expressions
    if select.args.get("having") is not None:
        return True
    return any(_calls_aggregate(e) for e in select.expressions)


def _calls_aggregate(node: exp.Expr) -> bool:
    """An aggregate in this SELECT's own scope (not inside a window, subquery or lambda's query).
    Functions sqlglot does not know count as aggregates (a user's aggregate is one of them), except the
    scalar functions in SCALAR."""
    if isinstance(node, exp.Anonymous) and node.name.lower() in SCALAR:
        return any(_calls_aggregate(child) for child in node.iter_expressions())
    if isinstance(node, (exp.AggFunc, exp.Anonymous, exp.Any)):
        return True
    if isinstance(node, (exp.Window, exp.Subquery, exp.Select)):
        return False
    return any(_calls_aggregate(child) for child in node.iter_expressions())
