"""Find and check a sliding-window query: ``SELECT ... FROM S [WINDOW w [SLIDE s]] WHERE ... GROUP BY ...``.

``S[...]`` is array indexing for sqlglot, so the ``[WINDOW ...]`` clause is found on tokens and
cut out of the text first; the rest is parsed with sqlglot (Spark dialect). The cut is recorded
in a ``RewrittenText`` so every error points at the user's own text.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import TokenType

from ..language.parser import suggestion
from ..language.queries import parse_query
from ..language.source import Fragment, Replacement, RewrittenText
from ..language.statements import Name
from ..language.tokens import IDENTIFIER_TYPES, fragment_tokens
from ..timeparts import UNIT_SECONDS


@dataclass(frozen=True)
class WindowClause:
    """``[WINDOW w [SLIDE s]]`` after the source name ``source``; ``start``/``end`` span the brackets."""

    source: Name
    start: int
    end: int
    width: int                 # seconds
    width_at: tuple[int, int]  # where w is written
    slide: int | None          # seconds; None: the source's partition length
    slide_at: tuple[int, int] | None


def find_window(query: Fragment) -> WindowClause | None:
    """The query's window clause, or None when it has none."""
    tokens = fragment_tokens(query)
    found: WindowClause | None = None
    for index, token in enumerate(tokens):
        if token.token_type != TokenType.L_BRACKET or index + 1 >= len(tokens) or \
                tokens[index + 1].text.upper() != "WINDOW" or tokens[index + 1].token_type == TokenType.STRING:
            continue
        if found is not None:
            raise query.error("a query can have only one [WINDOW ...] clause", token.start, token.end + 1)
        before = tokens[index - 1] if index else None
        if before is None or not (before.token_type in IDENTIFIER_TYPES or before.text.isidentifier()):
            raise query.error("[WINDOW ...] must follow the name of the stream it windows", token.start,
                              token.end + 1)
        source = Name(before.text, before.start, before.end + 1)
        at = index + 2
        width, width_at, at = _duration(query, tokens, at, "WINDOW")
        slide = slide_at = None
        if at < len(tokens) and tokens[at].text.upper() == "SLIDE":
            slide, slide_at, at = _duration(query, tokens, at + 1, "SLIDE")
        if at >= len(tokens) or tokens[at].token_type != TokenType.R_BRACKET:
            where = tokens[at] if at < len(tokens) else tokens[-1]
            raise query.error("expected ']' closing the window clause, e.g. [WINDOW 60 MINUTES SLIDE 5 MINUTES]",
                              where.start, where.end + 1)
        found = WindowClause(source, token.start, tokens[at].end + 1, width, width_at, slide, slide_at)
    return found


def _duration(query: Fragment, tokens, at: int, what: str) -> tuple[int, tuple[int, int], int]:
    token = tokens[at] if at < len(tokens) else None
    if token is None or token.token_type != TokenType.NUMBER or not token.text.isdigit():
        where = token or tokens[-1]
        raise query.error(f"expected the {what} length, a whole number with a unit (SECONDS, MINUTES, HOURS, "
                          f"DAYS)", where.start, where.end + 1)
    value = int(token.text)
    span = (token.start, token.end + 1)
    at += 1
    unit = tokens[at] if at < len(tokens) else None
    if unit is not None and unit.token_type != TokenType.STRING and unit.text.upper() in UNIT_SECONDS:
        value *= UNIT_SECONDS[unit.text.upper()]
        span = (span[0], unit.end + 1)
        at += 1
    elif unit is not None and (hint := suggestion(unit, UNIT_SECONDS)):
        raise query.error(f"expected a unit after the {what} length, found '{unit.text}'{hint}", unit.start,
                          unit.end + 1)
    if value <= 0:
        raise query.error(f"the {what} length must be positive", *span)
    return value, span, at


@dataclass
class WindowQuery:
    """A checked window query: its pieces as sqlglot expressions, positions through ``rewritten``."""

    clause: WindowClause
    fragment: Fragment                 # the user's query text (with the window clause)
    rewritten: RewrittenText           # the same text with the window clause cut out
    tree: exp.Select
    alias: str | None                  # the source's alias, if any
    items: list[exp.Expr]              # SELECT expressions (aliases removed)
    keys: list[exp.Expr]               # GROUP BY expressions (ordinals and aliases resolved)
    where: exp.Expr | None
    having: exp.Expr | None
    aggregates: list[exp.AggFunc]      # in SELECT and HAVING, in order of appearance

    def position(self, node: exp.Expr) -> tuple[int, int | None]:
        """Where ``node`` is written in the user's text (start, end)."""
        for item in node.walk():
            meta = item.meta if isinstance(item, exp.Expression) else {}
            if "start" in meta:
                start = self.rewritten.source_position(meta["start"])
                end = self.rewritten.source_position(meta["end"]) + 1 if "end" in meta else None
                if item is node and isinstance(node, exp.Func):
                    end = None
                return start, end
        return self.fragment.start, None

    def error(self, message: str, node: exp.Expr):
        start, end = self.position(node)
        return self.fragment.error(message, start, end)


def normalized(node: exp.Expr) -> str:
    """A comparison key for expressions: Spark SQL with identifiers lowercased."""
    return node.sql(dialect="spark", normalize=True, identify=False).lower()


def analyze_window(query: Fragment, clause: WindowClause) -> WindowQuery:
    """Parse the query around the window clause and check it has a shape that can be translated."""
    rewritten = RewrittenText(query, [Replacement(clause.start, clause.end, "")])
    tree = parse_query(rewritten)
    start_error = lambda message: query.error(message, query.start)  # noqa: E731
    if not isinstance(tree, exp.Select):
        raise start_error("a sliding-window query must be a single SELECT ... FROM stream [WINDOW ...] "
                          "(no UNION, WITH or VALUES)")
    partial = WindowQuery(clause, query, rewritten, tree, None, [], [], None, None, [])
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or table.name.lower() != clause.source.key or \
            table.args.get("db") or table.args.get("catalog"):
        raise query.error("the window clause must follow the stream in FROM: FROM stream [WINDOW ...]",
                          clause.source.start, clause.source.end)
    for arg, what in (("joins", "a JOIN"), ("laterals", "LATERAL VIEW"), ("order", "ORDER BY"),
                      ("limit", "LIMIT"), ("offset", "OFFSET"), ("qualify", "QUALIFY"), ("with_", "WITH"),
                      ("windows", "a WINDOW clause"), ("distinct", "SELECT DISTINCT"), ("sort", "SORT BY"),
                      ("cluster", "CLUSTER BY"), ("distribute", "DISTRIBUTE BY")):
        value = tree.args.get(arg)
        if value:
            node = value[0] if isinstance(value, list) else value
            node = node.this if isinstance(node, exp.Join) else node
            raise partial.error(f"{what} is not supported in a sliding-window query; it reads one stream "
                                f"and aggregates per group", node) if isinstance(node, exp.Expression) \
                else start_error(f"{what} is not supported in a sliding-window query")
    for node in tree.find_all(exp.Subquery, exp.Window):
        what = "a subquery" if isinstance(node, exp.Subquery) else "a window function (OVER)"
        raise partial.error(f"{what} is not supported in a sliding-window query", node)
    for node in tree.find_all(exp.Select):
        if node is not tree:
            raise partial.error("a subquery is not supported in a sliding-window query", node)
    alias = table.alias or None
    items: list[exp.Expr] = []
    aliases: dict[str, exp.Expr] = {}
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            raise partial.error("SELECT * is not supported in a sliding-window query; list the group "
                                "columns and aggregates", item)
        inner = item.this if isinstance(item, exp.Alias) else item
        items.append(inner)
        if isinstance(item, exp.Alias):
            aliases[item.alias.lower()] = inner
    keys: list[exp.Expr] = []
    group = tree.args.get("group")
    for key in (group.expressions if group else []):
        if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.this) <= len(items):
            key = items[int(key.this) - 1]
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            key = aliases[key.name.lower()]
        keys.append(key)
    if group is not None and any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        raise partial.error("GROUPING SETS, ROLLUP and CUBE are not supported in a sliding-window query", group)
    having = tree.args.get("having")
    having = having.this if having is not None else None
    aggregates: list[exp.AggFunc] = []
    for root in items + ([having] if having is not None else []):
        for node in root.find_all(exp.AggFunc):
            if any(isinstance(p, exp.AggFunc) for p in _ancestors(node, root)):
                continue
            inner = [n for n in node.find_all(exp.AggFunc) if n is not node]
            if inner:
                raise partial.error("an aggregate inside an aggregate is not supported", inner[0])
            aggregates.append(node)
    if not aggregates and not keys:
        raise start_error("a sliding-window query must aggregate: add aggregates (sum, count, avg, max, "
                          "min, ...) and a GROUP BY, or a global aggregate without GROUP BY")
    where = tree.args.get("where")
    query_ = WindowQuery(clause, query, rewritten, tree, alias, items, keys,
                         where.this if where is not None else None, having, aggregates)
    key_forms = {normalized(k) for k in keys}
    for root in items + ([having] if having is not None else []):
        _check_grouped(query_, root, key_forms, set(aliases) if root is having else set())
    return query_


def _ancestors(node: exp.Expr, root: exp.Expr):
    parent = node.parent
    while parent is not None and parent is not root.parent:
        yield parent
        parent = parent.parent


def _check_grouped(query: WindowQuery, node: exp.Expr, keys: set[str], aliases: set[str]) -> None:
    """Every column outside aggregates must be (part of) a GROUP BY expression."""
    if isinstance(node, exp.AggFunc) or normalized(node) in keys:
        return
    if isinstance(node, exp.Column):
        if not node.table and node.name.lower() in aliases:
            return
        raise query.error(f"'{node.sql(dialect='spark')}' must be in GROUP BY or inside an aggregate", node)
    for child in node.iter_expressions():
        _check_grouped(query, child, keys, aliases)
