"""Compile an embedded SQL query: partition references become placeholder tables.

``M[j]`` is array indexing in Spark SQL, so references are found on tokens and
rewritten into placeholder names first; the rewritten text is then parsed with
sqlglot, which validates it and finds unsubscripted references to streams, views
and tables. Every rewrite remembers where it came from, so errors point at the
user's own text.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, TypeVar

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from ..errors import ViewDFError
from .source import Fragment, Replacement, RewrittenText
from .subscripts import Subscript, parse_subscript
from .tokens import IDENTIFIER_TYPES, ViewDFSpark, backquote, fragment_tokens, tokenize


class ObjectKind(Enum):
    STREAM = "stream"
    VIEW = "view"
    TABLE = "table"
    CATALOG = "catalog"


class Scope(Enum):
    """What a query computes, which decides what references may mean."""

    DELTA = "delta"        # INITIALIZE / UPDATE: one part, variable bound to its subscript
    RECOMPUTE = "recompute"
    ADHOC = "adhoc"        # a user query; LATEST is each object's newest part


class RefKind(Enum):
    PARTS = "parts"        # X[a], X[a .. b], X[.. b]
    AS_OF = "as_of"        # unsubscripted X inside a ViewDF: parts up to the computed part
    ALL = "all"            # unsubscripted X in an ad hoc query
    TABLE = "table"        # an unpartitioned dimension table
    CATALOG = "catalog"    # the part metadata catalog view


LATEST = "LATEST"
T = TypeVar("T")
Lookup = Callable[[str], "tuple[str, ObjectKind] | None"]
_placeholder_ids = itertools.count()


@dataclass(frozen=True)
class Binding:
    """One placeholder table of a compiled query and what it stands for."""

    placeholder: str
    name: str                     # canonical object name
    kind: RefKind
    lower: Subscript | None       # None: from the first part
    upper: Subscript | None       # None only for unsubscripted references
    start: int                    # where the reference is written in the source
    end: int

    @property
    def text(self) -> str:
        if self.kind is not RefKind.PARTS:
            return self.name
        assert self.upper is not None
        if self.lower is self.upper:
            return f"{self.name}[{self.upper.text}]"
        lower = self.lower.text + " " if self.lower is not None else ""
        return f"{self.name}[{lower}.. {self.upper.text}]"


@dataclass(frozen=True)
class CompiledQuery:
    """A query ready for Spark: ``sql`` reads placeholder tables named in ``bindings``."""

    rewritten: RewrittenText
    bindings: tuple[Binding, ...]
    variable: str | None
    scope: Scope
    tree: exp.Expr | None = field(default=None, compare=False, repr=False)   # ``sql`` parsed; None: not a query
    _analyses: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def sql(self) -> str:
        return self.rewritten.text

    def analysed(self, key: tuple, analyse: Callable[[exp.Expr | str], T]) -> T:
        """``analyse`` of this query's tree (its text when it has none), computed once per ``key``: the query
        is parsed once, when it is compiled, however many analyses and steps read it."""
        if key not in self._analyses:
            self._analyses[key] = analyse(self.tree if self.tree is not None else self.sql)
        return self._analyses[key]

    @property
    def fragment(self) -> Fragment:
        return self.rewritten.fragment


def compile_query(fragment: Fragment, lookup: Lookup, scope: Scope, variable: str | None = None,
                  defining: str | None = None) -> CompiledQuery:
    """Rewrite and validate ``fragment``.

    ``lookup`` maps a name to its canonical name and kind (None if unknown);
    ``defining`` is the name of the view being defined, which may reference
    its own earlier parts.
    """
    prefix = f"__vdf{next(_placeholder_ids)}_"
    allowed = {variable} if scope is not Scope.ADHOC and variable else {LATEST}
    tokens = fragment_tokens(fragment)
    part_refs, replacements = _partition_references(fragment, tokens, lookup, allowed, scope,
                                                    defining, prefix)
    first_pass = RewrittenText(fragment, replacements)
    tree = parse_query(first_pass)
    bare_refs, bare_replacements = _bare_references(first_pass, tree, lookup, scope, defining,
                                                    prefix, len(part_refs))
    rewritten = RewrittenText(fragment, replacements + bare_replacements)
    return CompiledQuery(rewritten, tuple(part_refs + bare_refs), variable, scope, tree)


def same_query(first: CompiledQuery, second: CompiledQuery) -> bool:
    """Whether two clauses are one query for every part: the same text once their placeholders are matched,
    and references to the same objects by the same subscripts in their variables (``INITIALIZE V[i] AS
    SELECT .. FROM S[i]`` and ``UPDATE V[j] AS SELECT .. FROM S[j]``)."""
    if first.variable is None or second.variable is None or len(first.bindings) != len(second.bindings):
        return False
    texts = [first.sql, second.sql]
    for n, pair in enumerate(zip(first.bindings, second.bindings)):
        a, b = pair
        if (a.name, a.kind) != (b.name, b.kind) or any(
                _in_terms(x, first.variable) != _in_terms(y, second.variable)
                for x, y in ((a.lower, b.lower), (a.upper, b.upper))):
            return False
        texts = [re.sub(rf"\b{re.escape(binding.placeholder)}\b", f"__same_{n}", text)
                 for text, binding in zip(texts, pair)]
    return texts[0] == texts[1]


def _in_terms(subscript: Subscript | None, variable: str) -> str | None:
    """A subscript's text with its variable written as ``_``."""
    return None if subscript is None else re.sub(rf"\b{re.escape(variable)}\b", "_", subscript.text)


def compile_references(fragment: Fragment, lookup: Lookup, variable: str, defining: str) -> CompiledQuery:
    """The part references of a declaration (``X[j] IS EMPTY AND Y[j-1] IS EMPTY``), each one part, as a
    CompiledQuery whose text is not a query: only its bindings are resolved and read."""
    prefix = f"__vdf{next(_placeholder_ids)}_"
    bindings, replacements = _partition_references(fragment, fragment_tokens(fragment), lookup, {variable},
                                                   Scope.DELTA, defining, prefix)
    for binding in bindings:
        if binding.lower is not binding.upper:
            raise fragment.error(f"{binding.text} is a range; name single parts, e.g. {binding.name}[{variable}]",
                                 binding.start, binding.end)
    return CompiledQuery(RewrittenText(fragment, replacements), tuple(bindings), variable, Scope.DELTA)


def _partition_references(fragment: Fragment, tokens: list[Token], lookup: Lookup, allowed: set[str],
                          scope: Scope, defining: str | None,
                          prefix: str) -> tuple[list[Binding], list[Replacement]]:
    bindings: dict[tuple, Binding] = {}
    replacements: list[Replacement] = []
    index = 0
    while index < len(tokens) - 1:
        token = tokens[index]
        after = tokens[index + 1]
        before = tokens[index - 1] if index else None
        if (token.token_type not in IDENTIFIER_TYPES and not token.text.isidentifier()) or \
                token.token_type == TokenType.STRING or after.token_type != TokenType.L_BRACKET or \
                (before is not None and before.token_type == TokenType.DOT):
            index += 1
            continue
        close = _matching_bracket(tokens, index + 1)
        if close is None:
            raise fragment.error("unclosed '[' in a partition reference", after.start, after.end + 1)
        inner = tokens[index + 2:close]
        found = lookup(token.text)
        is_self = defining is not None and token.text.lower() == defining.lower()
        mentions_variable = any(t.text.upper() in {a.upper() for a in allowed} or t.token_type == TokenType.DOT
                                for t in inner)
        if found is None and not is_self and not mentions_variable:
            index += 1       # ordinary array indexing, e.g. split(s, ',')[0]
            continue
        if found is None and not is_self:
            raise fragment.error(f"unknown stream or view '{token.text}'", token.start, token.end + 1)
        if found is not None and found[1] in (ObjectKind.TABLE, ObjectKind.CATALOG):
            raise fragment.error(f"'{token.text}' is an unpartitioned table: reference it without a "
                                 f"subscript", token.start, close and tokens[close].end + 1)
        if is_self and found is None:
            assert defining is not None      # is_self needs a defining name
            name = defining
        else:
            assert found is not None         # an unknown name that is not the defining one was reported above
            name = found[0]
        lower, upper = _subscripts(fragment, tokens[index + 1], tokens[close], inner, allowed, scope)
        key = (name.lower(), lower.text if lower else None, upper.text, lower is upper)
        if key not in bindings:
            bindings[key] = Binding(f"{prefix}{len(bindings)}", name, RefKind.PARTS, lower, upper,
                                    token.start, tokens[close].end + 1)
        replacements.append(Replacement(token.start, tokens[close].end + 1, bindings[key].placeholder))
        index = close + 1
    return list(bindings.values()), replacements


def _matching_bracket(tokens: list[Token], open_index: int) -> int | None:
    depth = 0
    for index in range(open_index, len(tokens)):
        if tokens[index].token_type == TokenType.L_BRACKET:
            depth += 1
        elif tokens[index].token_type == TokenType.R_BRACKET:
            depth -= 1
            if depth == 0:
                return index
    return None


def _subscripts(fragment: Fragment, open_token: Token, close_token: Token, inner: list[Token],
                allowed: set[str], scope: Scope) -> tuple[Subscript | None, Subscript]:
    source = fragment.source
    dots = [k for k in range(len(inner) - 1)
            if inner[k].token_type == TokenType.DOT and inner[k + 1].token_type == TokenType.DOT
            and inner[k].end + 1 == inner[k + 1].start]
    if len(dots) > 1:
        at = inner[dots[1]].start
        raise fragment.error("a partition range has one '..'", at, at + 2)
    if not dots:
        whole = Fragment(source, open_token.end + 1, close_token.start)
        single = parse_subscript(whole, allowed)
        return single, single
    left = Fragment(source, open_token.end + 1, inner[dots[0]].start)
    right = Fragment(source, inner[dots[0] + 1].end + 1, close_token.start)
    lower = parse_subscript(left, allowed) if left.text.strip() else None
    if right.text.strip():
        upper = parse_subscript(right, allowed)
    elif scope is Scope.ADHOC:
        upper = parse_subscript(Fragment(LATEST, 0, len(LATEST)), allowed)
    else:
        raise fragment.error("a partition range needs an upper end, e.g. [j-59 .. j]",
                             close_token.start, close_token.end + 1)
    return lower, upper


def parse_query(rewritten: RewrittenText, dialect: str | type[ViewDFSpark] = ViewDFSpark) -> exp.Expr:
    """Parse a rewritten query with sqlglot (Spark dialect, unless another is named); errors point at the
    user's text."""
    text = rewritten.text
    try:
        trees = [tree for tree in sqlglot.parse(text, read=dialect) if tree is not None]
    except ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        offset = _offset(text, detail.get("line"), detail.get("col"), detail.get("highlight", ""))
        description = str(detail.get("description", exc)).split(". Line")[0]
        description = description.split(" but got <Token")[0]
        if description.startswith("Required keyword"):
            description = "the query is incomplete"
        highlight = detail.get("highlight") or ""
        message = f"SQL syntax error: {description}" + (f" near '{highlight}'" if highlight else "")
        raise rewritten.error(message, offset, None if offset is None else offset + max(1, len(highlight))) \
            from None
    except RecursionError:
        # sqlglot's parser recurses once per nesting level (and Python's stack is small): a few dozen
        # nested parentheses are enough. Point at the deepest nesting.
        offset = _deepest(text)
        raise rewritten.error("the query is nested too deeply to read (too many nested parentheses, "
                              "brackets, subqueries or operators); simplify it", offset,
                              None if offset is None else offset + 1) from None
    if len(trees) != 1 or not isinstance(trees[0], (exp.Query, exp.Values)):
        raise rewritten.error("expected a single query (SELECT, WITH or VALUES)")
    return trees[0]


def written_span(rewritten: RewrittenText, node: exp.Expr) -> tuple[int, int | None] | None:
    """Where ``node``, of a tree parsed from ``rewritten``, is written in the user's text (start, end), or None
    when sqlglot recorded no position under it."""
    spans = [(item.meta["start"], item.meta.get("end")) for item in node.walk()
             if isinstance(item, exp.Expression) and "start" in item.meta]
    if not spans:
        return None
    start = rewritten.source_position(min(s for s, _ in spans))
    ends = [e for _, e in spans if e is not None]
    end = rewritten.source_position(max(ends)) + 1 if ends else None
    return start, end if end is None or end > start else None


def values_rows(rewritten: RewrittenText) -> list[list[exp.Expr]] | None:
    """The values of a query that is a VALUES list, row by row, or None for other queries."""
    tree = parse_query(rewritten)
    if not isinstance(tree, exp.Values):
        return None
    return [list(row.expressions) if isinstance(row, exp.Tuple) else [row] for row in tree.expressions]


def _deepest(text: str) -> int | None:
    """Offset of the first opening parenthesis or bracket at the deepest nesting of ``text``."""
    try:
        tokens = tokenize(text)
    except ViewDFError:
        return None
    depth = deepest = 0
    at = None
    for token in tokens:
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
            if depth > deepest:
                deepest, at = depth, token.start
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
            depth -= 1
    return at


def _offset(text: str, line: int | None, col: int | None, highlight: str) -> int | None:
    if line is None or col is None:
        return None
    lines = text.split("\n")
    start = sum(len(piece) + 1 for piece in lines[:line - 1])
    return max(0, min(len(text) - 1, start + col - len(highlight)))


def _bare_references(first_pass: RewrittenText, tree: exp.Expr, lookup: Lookup, scope: Scope,
                     defining: str | None, prefix: str,
                     numbered_from: int) -> tuple[list[Binding], list[Replacement]]:
    """The unsubscripted references of ``tree``, and the replacements that name their placeholders in the
    text. ``tree`` is changed as the text is, so that it stays the rewritten query's tree."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    bindings: dict[str, Binding] = {}
    replacements: list[Replacement] = []
    for table in list(tree.find_all(exp.Table)):
        identifier = table.this
        if not isinstance(identifier, exp.Identifier) or table.args.get("db") or table.args.get("catalog"):
            continue
        name = identifier.name
        if name.startswith(prefix) or name.lower() in ctes:
            continue
        meta = identifier.meta
        start = first_pass.source_position(meta["start"])
        end = first_pass.source_position(meta["end"]) + 1
        found = lookup(name)
        if found is None:
            if defining is not None and name.lower() == defining.lower():
                raise first_pass.fragment.error(f"'{name}' refers to the view being defined: "
                                                f"use a part reference such as {name}[j-1]", start, end)
            if scope is Scope.ADHOC:
                continue     # a table of the user's own Spark session; Spark resolves it
            raise first_pass.fragment.error(f"unknown stream, view or table '{name}'", start, end)
        canonical, kind = found
        if kind is ObjectKind.TABLE:
            ref_kind = RefKind.TABLE
        elif kind is ObjectKind.CATALOG:
            ref_kind = RefKind.CATALOG
        else:
            ref_kind = RefKind.ALL if scope is Scope.ADHOC else RefKind.AS_OF
        key = canonical.lower()
        if key not in bindings:
            bindings[key] = Binding(f"{prefix}{numbered_from + len(bindings)}", canonical, ref_kind,
                                    None, None, start, end)
        text = bindings[key].placeholder
        if table.args.get("alias") is None:
            text += f" AS {backquote(name)}"
            table.set("alias", exp.TableAlias(this=exp.to_identifier(name, quoted=True)))
        table.set("this", exp.to_identifier(bindings[key].placeholder))
        replacements.append(Replacement(start, end, text))
    return list(bindings.values()), replacements
