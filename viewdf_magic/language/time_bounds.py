"""The timestamp range a row condition keeps: which parts a DELETE or UPDATE has to read."""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from .tokens import ViewDFSpark
from .source import Fragment

_SYMBOLS: dict[type, str] = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=", exp.EQ: "="}
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}     # value <op> column is column <flipped> value


@dataclass(frozen=True)
class Bound:
    """``column <op> value``: ``op`` is one of ``>``, ``>=``, ``<``, ``<=``, ``=``; ``value`` is a constant
    SQL expression (Spark evaluates it, so it means what it means in the condition)."""

    op: str
    value: str


def time_bounds(condition: Fragment, column: str) -> list[Bound]:
    """The bounds on ``column`` that every row the condition keeps satisfies: the comparisons of the
    column with a constant (and BETWEEN) among the condition's top-level AND terms. Other terms, OR and
    NOT add none, so the list may be empty (every part is read); a text sqlglot cannot read gives none
    either (Spark reports its error)."""
    try:
        tree = sqlglot.parse_one(condition.text, read=ViewDFSpark)
    except (ParseError, RecursionError):
        return []
    bounds: list[Bound] = []
    for term in _conjuncts(tree):
        if isinstance(term, exp.Between) and _is_column(term.this, column):
            low, high = term.args.get("low"), term.args.get("high")
            if low is not None and high is not None and _constant(low) and _constant(high):
                bounds += [Bound(">=", low.sql("spark")), Bound("<=", high.sql("spark"))]
        elif type(term) in _SYMBOLS:
            symbol, left, right = _SYMBOLS[type(term)], term.this, term.expression
            if _is_column(left, column) and _constant(right):
                bounds.append(Bound(symbol, right.sql("spark")))
            elif _is_column(right, column) and _constant(left):
                bounds.append(Bound(_FLIPPED[symbol], left.sql("spark")))
    return bounds


def _conjuncts(tree: exp.Expr) -> list[exp.Expr]:
    while isinstance(tree, exp.Paren):
        tree = tree.this
    if isinstance(tree, exp.And):
        return _conjuncts(tree.this) + _conjuncts(tree.expression)
    return [tree]


def _is_column(node: exp.Expr, column: str) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Column) and node.name.lower() == column.lower()


def _constant(node: exp.Expr) -> bool:
    """An expression of literals and functions alone: no column, no subquery, nothing that varies."""
    for item in node.walk():
        if isinstance(item, (exp.Column, exp.Query, exp.Star, exp.Placeholder)):
            return False
        if isinstance(item, exp.Anonymous) or type(item).__name__ in _VARYING:
            return False
    return True


_VARYING = {"Rand", "Randn", "Uuid", "CurrentTimestamp", "CurrentDate", "Now"}

