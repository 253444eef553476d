"""Find and check a pattern query: ``SELECT ... FROM S [WHERE f] PATTERN [a, b, d+] WHERE ... GROUP BY ...
[CONTIGUITY EVENTS|PARTS]``.

The PATTERN clause, the input filter before it and the CONTIGUITY clause are cut out on tokens,
and occurrence references (``d[1]``, ``d[i]``, ``d[i-1]``, ``d[..i-1]``) are replaced by
placeholder qualifiers, so the rest parses with sqlglot. Every cut is recorded in a
``RewrittenText``, so errors point at the user's own text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from ..language.queries import parse_query, written_span
from ..language.source import Fragment, Replacement, RewrittenText
from ..language.statements import Name
from ..language.tokens import IDENTIFIER_TYPES, fragment_tokens

OCCURRENCE_PREFIX = "__occ"
AGGREGATES: dict[type[exp.Expr], str] = {exp.Sum: "sum", exp.Count: "count", exp.Min: "min", exp.Max: "max", exp.Avg: "avg"}


@dataclass(frozen=True)
class Variable:
    """A pattern variable; ``index`` is its state number (1-based)."""

    name: str
    kleene: bool
    index: int
    start: int
    end: int

    @property
    def key(self) -> str:
        return self.name.lower()

    @property
    def label(self) -> str:
        return self.name + ("+" if self.kleene else "")


@dataclass(frozen=True)
class Occurrence:
    """What an occurrence placeholder stands for: ``first`` d[1], ``current`` d[i],
    ``previous`` d[i-1] or ``earlier`` d[..i-1]."""

    variable: Variable
    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class PatternClause:
    """The token-level pieces around the SQL: source, variables, filter, contiguity."""

    source: Name
    variables: tuple[Variable, ...]
    start: int                    # the PATTERN keyword
    end: int                      # after the closing bracket
    filter_span: tuple[int, int] | None   # the input filter's text (after WHERE), if any
    filter_where: int | None      # where that WHERE keyword starts
    contiguity: str               # PARTS or EVENTS
    contiguity_span: tuple[int, int] | None
    occurrences: dict[str, Occurrence] = field(default_factory=dict)   # placeholder -> meaning
    occurrence_cuts: tuple[Replacement, ...] = ()


def find_pattern(query: Fragment) -> PatternClause | None:
    """The query's PATTERN clause and its companions, or None when it has no PATTERN."""
    tokens = fragment_tokens(query)
    found = [i for i, t in enumerate(tokens) if _word(t) == "PATTERN" and i + 1 < len(tokens)
             and tokens[i + 1].token_type in (TokenType.L_BRACKET, TokenType.L_PAREN)]
    if not found:
        return None
    if len(found) > 1:
        raise query.error("a query can have only one PATTERN clause", tokens[found[1]].start, tokens[found[1]].end + 1)
    at = found[0]
    source, filter_where = _source_before(query, tokens, at)
    variables, close = _variables(query, tokens, at + 1)
    filter_span = None
    if filter_where is not None:
        where = tokens[filter_where]
        if filter_where + 1 == at:
            raise query.error("expected a condition after WHERE, before PATTERN", where.start, where.end + 1)
        filter_span = (tokens[filter_where + 1].start, tokens[at - 1].end + 1)
    contiguity, contiguity_span = "PARTS", None
    for index in range(close + 1, len(tokens)):
        if _word(tokens[index]) == "CONTIGUITY":
            mode = tokens[index + 1] if index + 1 < len(tokens) else None
            if mode is None or _word(mode) not in ("EVENTS", "PARTS"):
                where = mode or tokens[index]
                raise query.error("expected EVENTS or PARTS after CONTIGUITY", where.start, where.end + 1)
            if index + 2 < len(tokens):
                extra = tokens[index + 2]
                raise query.error("CONTIGUITY EVENTS|PARTS must end the query", extra.start, extra.end + 1)
            contiguity, contiguity_span = _word(mode), (tokens[index].start, mode.end + 1)
    clause = PatternClause(source, variables, tokens[at].start, tokens[close].end + 1,
                           filter_span, tokens[filter_where].start if filter_where is not None else None,
                           contiguity, contiguity_span)
    _occurrence_references(query, tokens, clause)
    return clause


def _word(token: Token) -> str:
    return token.text.upper() if token.token_type != TokenType.STRING else ""


def _source_before(query: Fragment, tokens: list[Token], at: int) -> tuple[Name, int | None]:
    """The stream named by ``FROM S [WHERE ...] PATTERN``, and the index of that WHERE."""
    froms = [i for i in range(at) if tokens[i].token_type == TokenType.FROM]
    pattern = tokens[at]
    if not froms:
        raise query.error("PATTERN must follow FROM stream", pattern.start, pattern.end + 1)
    index = froms[-1] + 1
    if index >= at or not (tokens[index].token_type in IDENTIFIER_TYPES or tokens[index].text.isidentifier()):
        raise query.error("PATTERN must follow FROM stream", pattern.start, pattern.end + 1)
    name = tokens[index]
    source = Name(name.text, name.start, name.end + 1)
    if index + 1 == at:
        return source, None
    if tokens[index + 1].token_type == TokenType.WHERE:
        return source, index + 1
    extra = tokens[index + 1]
    raise query.error("expected PATTERN (or WHERE filter PATTERN) right after the stream; aliases and joins "
                      "are not supported in a pattern query", extra.start, extra.end + 1)


def _variables(query: Fragment, tokens: list[Token], at: int) -> tuple[tuple[Variable, ...], int]:
    opening = tokens[at]
    closing = TokenType.R_BRACKET if opening.token_type == TokenType.L_BRACKET else TokenType.R_PAREN
    variables: list[Variable] = []
    index = at + 1
    while True:
        token = tokens[index] if index < len(tokens) else None
        if token is None or not (token.token_type in IDENTIFIER_TYPES or token.text.isidentifier()) \
                or token.token_type == TokenType.STRING:
            where = token or tokens[-1]
            raise query.error("expected a pattern variable name, e.g. PATTERN [a, b, c, d+]", where.start,
                              where.end + 1)
        kleene = index + 1 < len(tokens) and tokens[index + 1].token_type == TokenType.PLUS
        end = tokens[index + 1].end + 1 if kleene else token.end + 1
        if any(v.key == token.text.lower() for v in variables):
            raise query.error(f"pattern variable '{token.text}' is listed twice", token.start, end)
        variables.append(Variable(token.text, kleene, len(variables) + 1, token.start, end))
        index += 2 if kleene else 1
        after = tokens[index] if index < len(tokens) else None
        if after is not None and after.token_type == closing:
            return tuple(variables), index
        if after is None or after.token_type != TokenType.COMMA:
            where = after or tokens[-1]
            bracket = "]" if closing == TokenType.R_BRACKET else ")"
            hint = " (only + is supported: a Kleene plus)" if after is not None and \
                after.token_type in (TokenType.STAR, TokenType.PLACEHOLDER) else ""
            raise query.error(f"expected ',' or '{bracket}' in the PATTERN list{hint}", where.start, where.end + 1)
        index += 1


def _occurrence_references(query: Fragment, tokens: list[Token], clause: PatternClause) -> None:
    """Record ``v[1]``, ``v[i]``, ``v[i-1]`` and ``v[..i-1]`` as placeholders (``__occN``)."""
    names = {v.key: v for v in clause.variables}
    cuts: list[Replacement] = []
    for index, token in enumerate(tokens):
        if clause.start <= token.start < clause.end or token.token_type != TokenType.L_BRACKET or index == 0:
            continue
        before = tokens[index - 1]
        variable = names.get(before.text.lower()) if before.token_type in IDENTIFIER_TYPES else None
        if variable is None:
            continue
        close = next((i for i in range(index + 1, len(tokens)) if tokens[i].token_type == TokenType.R_BRACKET), None)
        if close is None:
            raise query.error("expected ']'", token.start, token.end + 1)
        inside = "".join(t.text for t in tokens[index + 1:close]).lower()
        kind = {"1": "first", "i": "current", "i-1": "previous", "..i-1": "earlier"}.get(inside)
        span = (before.start, tokens[close].end + 1)
        if kind is None:
            raise query.error(f"unsupported occurrence '{variable.name}[{inside}]'; use {variable.name}[1], "
                              f"{variable.name}[i], {variable.name}[i-1] or {variable.name}[..i-1]", *span)
        if not variable.kleene:
            raise query.error(f"'{variable.name}' is not a Kleene variable (write {variable.name}+ in PATTERN "
                              f"to index its occurrences)", *span)
        after = tokens[close + 1] if close + 1 < len(tokens) else None
        if after is None or after.token_type != TokenType.DOT:
            raise query.error(f"expected a column after {query.source[span[0]:span[1]]}, e.g. "
                              f"{variable.name}[i].price", *span)
        placeholder = f"{OCCURRENCE_PREFIX}{len(clause.occurrences)}"
        clause.occurrences[placeholder] = Occurrence(variable, kind, *span)
        cuts.append(Replacement(span[0], span[1], placeholder))
    object.__setattr__(clause, "occurrence_cuts", tuple(cuts))


@dataclass
class PatternQuery:
    """A parsed pattern query: the sqlglot pieces, positions through ``rewritten``."""

    clause: PatternClause
    fragment: Fragment
    rewritten: RewrittenText
    tree: exp.Select
    items: list[tuple[str, exp.Expr]]           # (output name, expression)
    keys: list[str]                             # GROUP BY column names
    conditions: list[exp.Expr]                  # WHERE, split on AND
    filter: exp.Expr | None                     # the input filter before PATTERN

    @property
    def filter_sql(self) -> str | None:
        """The input filter as the user wrote it (without WHERE), or None."""
        if self.clause.filter_span is None:
            return None
        start, end = self.clause.filter_span
        return self.fragment.source[start:end]

    @property
    def variables(self) -> tuple[Variable, ...]:
        return self.clause.variables

    def variable(self, name: str) -> Variable | None:
        return next((v for v in self.variables if v.key == name.lower()), None)

    def position(self, node: exp.Expr, rewritten: RewrittenText | None = None) -> tuple[int, int | None]:
        """Where ``node`` is written in the user's text (start, end)."""
        return written_span(rewritten or self.rewritten, node) or (self.fragment.start, None)

    def error(self, message: str, node: exp.Expr, rewritten: RewrittenText | None = None):
        start, end = self.position(node, rewritten)
        return self.fragment.error(message, start, end)


def analyze_pattern(query: Fragment, clause: PatternClause) -> PatternQuery:
    """Parse the query around its PATTERN clause and check the SQL shape (not yet the references)."""
    cuts = [Replacement(clause.start, clause.end, ""), *clause.occurrence_cuts]
    if clause.filter_span is not None:
        assert clause.filter_where is not None      # set together with filter_span
        cuts.append(Replacement(clause.filter_where, clause.filter_span[1], ""))
    if clause.contiguity_span is not None:
        cuts.append(Replacement(*clause.contiguity_span, ""))
    rewritten = RewrittenText(query, cuts)
    tree = parse_query(rewritten)
    if not isinstance(tree, exp.Select):
        raise query.error("a pattern query must be a single SELECT ... FROM stream PATTERN [...] (no UNION, WITH "
                          "or VALUES)", query.start)
    partial = PatternQuery(clause, query, rewritten, tree, [], [], [], None)
    for key, what in (("joins", "a JOIN"), ("laterals", "LATERAL VIEW"), ("order", "ORDER BY"),
                      ("limit", "LIMIT"), ("having", "HAVING"), ("qualify", "QUALIFY"), ("with_", "WITH"),
                      ("windows", "a WINDOW clause"), ("distinct", "SELECT DISTINCT")):
        value = tree.args.get(key)
        if value:
            node = value[0] if isinstance(value, list) else value
            raise partial.error(f"{what} is not supported in a pattern query", node) \
                if isinstance(node, exp.Expression) and node.meta else query.error(
                    f"{what} is not supported in a pattern query", query.start)
    for node in tree.find_all(exp.Subquery, exp.Window):
        what = "a subquery" if isinstance(node, exp.Subquery) else "a window function (OVER)"
        raise partial.error(f"{what} is not supported in a pattern query", node)
    group = tree.args.get("group")
    keys: list[str] = []
    for key in (group.expressions if group else []):
        if not isinstance(key, exp.Column) or key.table:
            raise partial.error("GROUP BY of a pattern query lists stream columns (e.g. GROUP BY src, dest)", key)
        keys.append(key.name)
    items: list[tuple[str, exp.Expr]] = []
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            raise partial.error("SELECT * is not supported in a pattern query; list the group columns, "
                                "variables' attributes and aggregates", item)
        inner = item.this if isinstance(item, exp.Alias) else item
        items.append((_output_name(item, inner, rewritten, partial), inner))
    names = [n.lower() for n, _ in items]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise partial.error(f"two output columns are named '{duplicate}'; give them different aliases",
                            items[len(names) - 1 - names[::-1].index(duplicate)][1])
    where = tree.args.get("where")
    conditions = _conjuncts(where.this) if where is not None else []
    filter_tree = None
    if clause.filter_span is not None:
        filter_text = RewrittenText(query, [Replacement(query.start, clause.filter_span[0],
                                                        f"SELECT 1 FROM {clause.source.text} WHERE "),
                                            Replacement(clause.filter_span[1], query.end, "")])
        filter_tree = parse_query(filter_text).args["where"].this
    source = tree.args.get("from_") or tree.args.get("from")
    assert source is not None       # the PATTERN clause was found after FROM stream
    table = source.this
    if not isinstance(table, exp.Table) or table.name.lower() != clause.source.key or table.alias:
        raise query.error("PATTERN must follow FROM stream", clause.start)
    return PatternQuery(clause, query, rewritten, tree, items, keys, conditions, filter_tree)


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    """The operands of a chain of ANDs, left to right (without recursion: a long chain is deep)."""
    found, pending = [], [node]
    while pending:
        item = pending.pop().unnest()
        if isinstance(item, exp.And):
            pending += [item.expression, item.this]
        else:
            found.append(item)
    return found


def _output_name(item: exp.Expr, inner: exp.Expr, rewritten: RewrittenText,
                 query: PatternQuery) -> str:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(inner, exp.Column):
        return inner.name
    start, end = query.position(inner)
    return query.fragment.source[start:end] if end is not None else inner.sql(dialect="spark")
