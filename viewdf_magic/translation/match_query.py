"""Find and read a MATCH_RECOGNIZE query: ``SELECT ... FROM S MATCH_RECOGNIZE (...) [AS] alias [WHERE ...]``.

The clause is found on tokens. Its PATTERN is read by ``match_pattern`` and Flink's ``WITHIN INTERVAL``
(which sqlglot does not know) is cut out; the rest of the clause is parsed by sqlglot's Snowflake dialect
(Spark's has no MATCH_RECOGNIZE), and the query around it, with the clause replaced by a placeholder
table, by the Spark dialect. Every cut is recorded in a ``RewrittenText``, so errors point at the
user's own text.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from ..language.queries import parse_query, written_span
from ..language.source import Fragment, Replacement, RewrittenText
from ..language.statements import Name
from ..language.tokens import IDENTIFIER_TYPES, fragment_tokens, quote_name
from .match_pattern import Node, read_pattern, variables

PLACEHOLDER = "__match_rows"      # the clause's rows, in the query around it
UNIT_MICROS = {"SECOND": 10**6, "MINUTE": 60 * 10**6, "HOUR": 3600 * 10**6, "DAY": 86400 * 10**6}
SKIPS = ("PAST LAST ROW", "TO NEXT ROW", "TO FIRST", "TO LAST")


@dataclass(frozen=True)
class Measure:
    """``[RUNNING|FINAL] expression AS name``; ``semantics`` is the keyword written, or "" (RUNNING)."""

    name: str
    expression: exp.Expr
    semantics: str = ""


@dataclass(frozen=True)
class Skip:
    """AFTER MATCH SKIP: one of SKIPS, with the variable of TO FIRST / TO LAST."""

    kind: str
    variable: str | None = None


@dataclass
class MatchQuery:
    """A read MATCH_RECOGNIZE query; expressions are sqlglot trees positioned through ``rewritten``."""

    fragment: Fragment                  # the view's query
    source: Name                        # the stream read
    span: tuple[int, int]               # ``S MATCH_RECOGNIZE (...) [AS alias]`` in the query
    alias: str | None
    outer: exp.Select                   # the query around the clause (FROM the placeholder)
    outer_text: RewrittenText
    rewritten: RewrittenText            # the clause, as sqlglot read it
    partition: list[exp.Column]
    order: list[exp.Ordered]
    measures: list[Measure]
    all_rows: bool
    skip: Skip
    pattern: Node
    defines: dict[str, exp.Expr]        # upper-case variable -> condition
    within: int | None                  # WITHIN, in microseconds
    within_text: str | None

    @property
    def names(self) -> list[str]:
        """The pattern's variables, in order of first appearance."""
        return list(dict.fromkeys(v.name for v in variables(self.pattern)))

    def position(self, node: exp.Expr) -> tuple[int, int | None]:
        """Where ``node`` (a piece of the clause) is written in the user's text."""
        return written_span(self.rewritten, node) or (self.source.start, None)

    def error(self, message: str, node: exp.Expr):
        start, end = self.position(node)
        return self.fragment.error(message, start, end)

    def around(self, rows: str) -> str:
        """The query around the MATCH_RECOGNIZE clause, over ``rows`` (a parenthesized query) instead."""
        start, end = self.span
        alias = quote_name(self.alias or self.source.text)
        return f"{self.fragment.source[self.fragment.start:start]}{rows} AS {alias}{self.fragment.source[end:self.fragment.end]}"

    def text(self, node: exp.Expr) -> str:
        """``node`` as the user wrote it."""
        start, end = self.position(node)
        return self.fragment.source[start:end] if end is not None else node.sql(dialect="spark")


def _closing(tokens: list[Token], opening: int) -> int | None:
    """The index of the parenthesis closing the one at ``opening``."""
    depth = 0
    for index in range(opening, len(tokens)):
        kind = tokens[index].token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        if depth == 0:
            return index
    return None


def find_match_recognize(query: Fragment) -> int | None:
    """The index, among the query's tokens, of its MATCH_RECOGNIZE keyword (None: it has none)."""
    tokens = fragment_tokens(query)
    found = [i for i, t in enumerate(tokens) if t.text.upper() == "MATCH_RECOGNIZE"
             and t.token_type != TokenType.STRING]
    if len(found) > 1:
        second = tokens[found[1]]
        raise query.error("a query can have only one MATCH_RECOGNIZE clause", second.start, second.end + 1)
    return found[0] if found else None


def read_match_query(query: Fragment, at: int) -> MatchQuery:
    """Read the query whose MATCH_RECOGNIZE keyword is token ``at`` (positioned errors)."""
    tokens = fragment_tokens(query)
    keyword = tokens[at]
    if at < 2 or tokens[at - 2].token_type != TokenType.FROM or not (
            tokens[at - 1].token_type in IDENTIFIER_TYPES or tokens[at - 1].text.isidentifier()):
        raise query.error("MATCH_RECOGNIZE must follow FROM stream", keyword.start, keyword.end + 1)
    name = tokens[at - 1]
    source = Name(name.text, name.start, name.end + 1)
    if at + 1 >= len(tokens) or tokens[at + 1].token_type != TokenType.L_PAREN:
        raise query.error("expected '(' after MATCH_RECOGNIZE", keyword.start, keyword.end + 1)
    close = _closing(tokens, at + 1)
    if close is None:
        raise query.error("expected ')' closing MATCH_RECOGNIZE (", tokens[at + 1].start, tokens[at + 1].end + 1)
    alias, after = _alias(tokens, close + 1)
    span = (name.start, tokens[after - 1].end + 1)
    clause = tokens[at + 1:close + 1]
    pattern, pattern_cut = _pattern(query, clause, keyword)
    within, within_text, within_cut = _within(query, clause)
    opening = tokens[at + 1]
    cuts = [Replacement(opening.start, opening.start, f"SELECT * FROM {PLACEHOLDER} MATCH_RECOGNIZE "), pattern_cut]
    if within_cut is not None:
        cuts.append(within_cut)
    rewritten = RewrittenText(Fragment(query.source, opening.start, tokens[close].end + 1), cuts)
    tree = parse_query(rewritten, dialect="snowflake").find(exp.MatchRecognize)
    assert tree is not None     # the text is SELECT * FROM x MATCH_RECOGNIZE (...)
    outer_text = RewrittenText(query, [Replacement(span[0], span[1], PLACEHOLDER + (f" AS {alias}" if alias else ""))])
    outer = _outer(query, outer_text)
    partial = MatchQuery(query, source, span, alias, outer, outer_text, rewritten, [], [], [], False,
                         Skip("PAST LAST ROW"), pattern, {}, within, within_text)
    return _clause(partial, tree, keyword)


def _outer(query: Fragment, text: RewrittenText) -> exp.Select:
    """The query around the clause: a SELECT of its rows, optionally filtered (WHERE)."""
    tree = parse_query(text)
    if not isinstance(tree, exp.Select):
        raise query.error("the query around MATCH_RECOGNIZE must be one SELECT ... FROM stream MATCH_RECOGNIZE (...)",
                          query.start)
    for key, what in (("joins", "a JOIN"), ("laterals", "LATERAL VIEW"), ("group", "GROUP BY"), ("having", "HAVING"),
                      ("order", "ORDER BY"), ("limit", "LIMIT"), ("qualify", "QUALIFY"), ("with_", "WITH"),
                      ("windows", "a WINDOW clause"), ("distinct", "SELECT DISTINCT")):
        if tree.args.get(key):
            raise query.error(f"{what} around MATCH_RECOGNIZE is not supported: the view holds each part's matches; "
                              f"query the view for more", query.start)
    return tree


def _alias(tokens: list[Token], at: int) -> tuple[str | None, int]:
    """The alias after the clause (``AS M`` or ``M``) and the index of the token after it."""
    if at < len(tokens) and tokens[at].token_type == TokenType.ALIAS and at + 1 < len(tokens):
        return tokens[at + 1].text, at + 2
    if at < len(tokens) and tokens[at].token_type in IDENTIFIER_TYPES:
        return tokens[at].text, at + 1
    return None, at


def _pattern(query: Fragment, clause: list[Token], keyword: Token) -> tuple[Node, Replacement]:
    """The PATTERN's tree, and the cut that leaves sqlglot a pattern it reads (``(__p)``)."""
    found = [i for i, t in enumerate(clause) if t.text.upper() == "PATTERN" and i + 1 < len(clause)
             and clause[i + 1].token_type == TokenType.L_PAREN]
    if not found:
        raise query.error("MATCH_RECOGNIZE needs a PATTERN, e.g. PATTERN (A B+ C)", keyword.start, keyword.end + 1)
    opening = found[0] + 1
    close = _closing(clause, opening)
    assert close is not None        # the clause's own parentheses are balanced
    body = clause[opening + 1:close]
    node = read_pattern(query, body, clause[close].start)
    return node, Replacement(clause[opening].start, clause[close].end + 1, "(__p)")


def _within(query: Fragment, clause: list[Token]) -> tuple[int | None, str | None, Replacement | None]:
    """Flink's ``WITHIN INTERVAL 'n' unit``: microseconds, its text, and its cut."""
    found = [i for i, t in enumerate(clause) if t.text.upper() == "WITHIN" and t.token_type != TokenType.STRING]
    if not found:
        return None, None, None
    at = found[0]
    words = clause[at:at + 4]
    unit = words[3].text.upper().removesuffix("S") if len(words) == 4 else ""
    if len(words) < 4 or words[1].token_type != TokenType.INTERVAL or words[2].token_type != TokenType.STRING \
            or not words[2].text.strip().isdigit() or unit not in UNIT_MICROS or int(words[2].text) <= 0:
        raise query.error("expected WITHIN INTERVAL 'n' SECOND|MINUTE|HOUR|DAY, with n > 0",
                          clause[at].start, words[-1].end + 1)
    text = query.source[clause[at].start:words[3].end + 1]
    return int(words[2].text) * UNIT_MICROS[unit], text, Replacement(clause[at].start, words[3].end + 1, "")


def _clause(query: MatchQuery, tree: exp.MatchRecognize, keyword: Token) -> MatchQuery:
    """Fill in the clause's parts from sqlglot's tree."""
    query.partition = list(tree.args.get("partition_by") or [])
    order = tree.args.get("order")
    if order is None:
        raise query.fragment.error("MATCH_RECOGNIZE needs ORDER BY the stream's timestamp", keyword.start,
                                   keyword.end + 1)
    query.order = list(order.expressions)
    for item in tree.args.get("measures") or []:
        alias = item.this
        if not isinstance(alias, exp.Alias):
            raise query.error("name each measure: MEASURES <expression> AS <name>", alias)
        query.measures.append(Measure(alias.alias, alias.this, str(item.args.get("window_frame") or "").upper()))
    rows = " ".join(str(tree.args.get("rows") or "ONE ROW PER MATCH").upper().split())
    if rows not in ("ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH SHOW EMPTY MATCHES"):
        raise query.fragment.error(f"{rows} is not supported; use ONE ROW PER MATCH or ALL ROWS PER MATCH",
                                   keyword.start, keyword.end + 1)
    query.all_rows = rows.startswith("ALL")
    after = " ".join(str(tree.args.get("after") or "AFTER MATCH SKIP PAST LAST ROW").upper().split())
    skip = after.removeprefix("AFTER MATCH SKIP ")
    if skip in SKIPS[:2]:
        query.skip = Skip(skip)
    else:
        kind, _, variable = skip.rpartition(" ")
        if kind not in SKIPS[2:] or variable not in query.names:
            raise query.fragment.error(f"AFTER MATCH SKIP {skip} is not supported; use PAST LAST ROW, TO NEXT ROW, "
                                       f"TO FIRST v or TO LAST v with a variable v of the pattern",
                                       keyword.start, keyword.end + 1)
        query.skip = Skip(kind, variable)
    for item in tree.args.get("define") or []:
        name = item.alias.upper()
        if name not in query.names:
            raise query.error(f"DEFINE names {item.alias}, which is not a variable of the pattern "
                              f"({', '.join(query.names)})", item.args["alias"])
        if name in query.defines:
            raise query.error(f"{item.alias} is defined twice", item.args["alias"])
        query.defines[name] = item.this
    return query
