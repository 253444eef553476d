"""Is a compiled one-part query a projection of one input part (issue 17's fused parts)?

A view whose query only keeps, reshapes and filters the rows of one part of one input, row by row
(``SELECT a, b * 2 FROM Helper[j] WHERE ct >= 4``), needs no Spark job of its own: its part can be
computed in the job that writes the input's part, as one more column of it (a struct holding the view's
row, NULL where the row is filtered out). This module decides which queries are such projections and
writes the query that adds that column. Pure sqlglot: no Spark, no catalog.

Refused, with a reason: anything that combines rows (joins, GROUP BY, aggregates, DISTINCT, window
functions), changes their number (generators such as explode, LATERAL VIEW), orders or cuts them
(ORDER BY, LIMIT), set operations and CTEs, subqueries, and functions that are nondeterministic or
unknown to sqlglot (a user's function may be either).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from .lifting import NotLiftable, aggregates, check_names, query_tree
from .tokens import ViewDFSpark, backquote

_GENERATORS = (exp.Explode, exp.Posexplode, exp.Inline, exp.Unnest)
_CLAUSES = {"joins": "a join", "laterals": "LATERAL VIEW", "group": "GROUP BY", "having": "HAVING",
            "qualify": "QUALIFY", "order": "ORDER BY", "limit": "LIMIT", "offset": "OFFSET", "distinct": "DISTINCT",
            "with": "a CTE", "with_": "a CTE", "windows": "WINDOW", "sort": "SORT BY", "cluster": "CLUSTER BY",
            "distribute": "DISTRIBUTE BY", "match": "MATCH_RECOGNIZE"}


@dataclass(frozen=True)
class Projection:
    """``items`` (SQL over the input's columns, one per output column, PART_TIMESTAMP outputs left out)
    kept where ``condition`` holds, read from ``source`` (the FROM clause as written); or, when
    ``items`` is None, why the query is not a projection."""

    items: tuple[str, ...] | None
    condition: str | None = None
    source: str = ""
    relation: str = ""             # how the input's columns are qualified: its alias, or its name
    reason: str = ""

    def fused(self, column: str, fields: list[tuple[str, str]]) -> str:
        """The query returning its input's rows with one more column ``column``: a struct of the
        projected row (``fields``: the view's column names and SQL types, matched by position), NULL
        where the row is filtered out."""
        assert self.items is not None and len(self.items) == len(fields)
        values = ", ".join(f"{exp.Literal.string(name).sql(dialect=ViewDFSpark)}, CAST(({item}) AS {kind})"
                           for (name, kind), item in zip(fields, self.items))
        keep = f"coalesce(({self.condition}), false)" if self.condition else "true"
        return (f"SELECT {backquote(self.relation)}.*, CASE WHEN {keep} THEN named_struct({values}) END "
                f"AS {backquote(column)} FROM {self.source}")


def projection(query: str | exp.Expr, placeholder: str, columns: tuple[str, ...]) -> Projection:
    """Whether ``query`` (SQL, or a compiled query's tree) is a projection of placeholder table
    ``placeholder``, whose columns are ``columns`` (for ``*``)."""
    tree = query_tree(query)
    if tree is None:
        return Projection(None, reason="sqlglot cannot parse the compiled query")
    try:
        return _projection(tree, placeholder, columns)
    except NotLiftable as refused:
        return Projection(None, reason=refused.reason)


def _projection(tree: exp.Expr, placeholder: str, columns: tuple[str, ...]) -> Projection:
    if not isinstance(tree, exp.Select):
        raise NotLiftable(f"it is a {tree.key.upper()}, not one SELECT")
    for clause, words in _CLAUSES.items():
        if tree.args.get(clause):
            raise NotLiftable(f"it uses {words}")
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or table.name.lower() != placeholder.lower() or table.args.get("db"):
        raise NotLiftable("it does not read exactly one part of one input")
    check_names(tree, frozenset([placeholder]))
    for node in tree.walk():
        if isinstance(node, (exp.Subquery, exp.Select)) and node is not tree:
            raise NotLiftable("it has a subquery")
        if isinstance(node, exp.Window):
            raise NotLiftable("it uses a window function")
        if isinstance(node, _GENERATORS):
            raise NotLiftable(f"it calls {node.key}, which changes the number of rows")
    if any(aggregates(item) for item in tree.expressions):
        raise NotLiftable("it aggregates")
    relation = table.alias_or_name
    items: list[str] = []
    for item in tree.expressions:
        star = item if isinstance(item, exp.Star) else item.this if isinstance(item, exp.Column) and \
            isinstance(item.this, exp.Star) else None
        if star is not None:
            items += [f"{backquote(relation)}.{backquote(c)}" for c in columns if c.upper() != "PART_TIMESTAMP"]
        elif item.alias_or_name.upper() != "PART_TIMESTAMP":
            items.append((item.this if isinstance(item, exp.Alias) else item).sql(dialect=ViewDFSpark))
    where = tree.args.get("where")
    return Projection(tuple(items), where.this.sql(dialect=ViewDFSpark) if where is not None else None,
                      table.sql(dialect=ViewDFSpark), relation)
