"""Partition subscripts: integer arithmetic on one part variable, such as ``j-59`` or ``i*60+59``."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from .source import Fragment

# At most this many syntax nodes in one subscript (``i*60+59`` has 7): deeper expressions would
# make evaluation recurse too far, and nobody writes them.
MAX_NODES = 200
# Subscripts that repeat over a longer period are not searched for their smallest value (see smallest_from).
MAX_PERIOD = 100_000

_OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a // b,       # integer (floor) division
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


@dataclass(frozen=True)
class Subscript:
    """A parsed subscript expression; ``variables`` are the names it uses."""

    text: str
    tree: ast.expr = field(compare=False, repr=False)
    variables: frozenset[str]

    def evaluate(self, env: dict[str, int]) -> int:
        return _evaluate(self.tree, env)

    def period(self, variable: str) -> int | None:
        """P such that ``s(j + P) - s(j)`` is the same for every j: the lcm of the constant divisors of
        ``/`` and ``%``. None when the subscript is not that regular (a product of two terms in
        ``variable``, or a divisor that uses it)."""
        period = 1
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.BinOp):
                continue
            uses = [_uses(side, variable) for side in (node.left, node.right)]
            if isinstance(node.op, ast.Mult) and all(uses):
                return None
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
                if uses[1]:
                    return None
                period = math.lcm(period, abs(_evaluate(node.right, {})) or 1)
        return period

    def offset(self, variable: str) -> int | None:
        """c when the subscript is ``variable + c`` for every value (``j-1``, ``j``, ``2+j-3``); None for
        anything else (``j/30*60``, ``j*2``, a constant)."""
        line = self.linear(variable)
        return line[1] if line is not None and line[0] == 1 else None

    def linear(self, variable: str) -> tuple[int, int] | None:
        """(k, c) when the subscript is ``k * variable + c`` for every value, k >= 1 (``j-1``, ``5*j+4``);
        None for anything else (``j/30*60``, ``-j``, a constant)."""
        if variable not in self.variables or self.period(variable) != 1:
            return None
        try:
            values = {j: self.evaluate({variable: j}) for j in (-7, 0, 1, 59, 1_000_003)}
        except ZeroDivisionError:
            return None
        scale, constant = values[1] - values[0], values[0]
        if scale < 1 or any(value != scale * j + constant for j, value in values.items()):
            return None
        return scale, constant

    def smallest_from(self, variable: str, start: int) -> int | None:
        """The smallest value for ``variable`` >= ``start`` (subscripts such as ``j-2*((j-59)%30)`` go
        back and forth). None when there is none, or it cannot be found cheaply."""
        period = self.period(variable)
        if period is None or period > MAX_PERIOD:
            return None
        values = [self.evaluate({variable: start + k}) for k in range(period + 1)]
        return None if values[-1] < values[0] else min(values)


def parse_subscript(fragment: Fragment, allowed: set[str]) -> Subscript:
    """Parse ``fragment`` as a subscript over the names in ``allowed`` (matched case-insensitively)."""
    text = fragment.text
    stripped = text.strip()
    lead = len(text) - len(text.lstrip())
    if not stripped:
        raise fragment.error("empty partition subscript", fragment.start, fragment.end + 1)
    try:
        tree = ast.parse(stripped, mode="eval").body
    except SyntaxError as exc:
        col = (exc.offset or 1) - 1 if (exc.lineno or 1) == 1 else 0
        at = fragment.start + lead + max(0, min(col, len(stripped) - 1))
        raise fragment.error(f"bad partition subscript '{_shown(stripped)}': expected integer arithmetic "
                             f"on {_names(allowed)}", at, at + 1) from None
    except (RecursionError, MemoryError, ValueError):
        at = fragment.start + lead
        raise fragment.error(f"partition subscript too long or too deeply nested: '{_shown(stripped)}'",
                             at, at + 1) from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        at = fragment.start + lead
        raise fragment.error(f"partition subscript too long ({len(nodes)} parts, at most {MAX_NODES}): "
                             f"'{_shown(stripped)}'", at, at + len(stripped))
    used: set[str] = set()
    canonical = {name.lower(): name for name in allowed}
    lines = stripped.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(node: ast.AST) -> int:
        """Where ``node`` starts in the source (ast counts UTF-8 bytes within a line)."""
        row = min(max(getattr(node, "lineno", 1), 1), len(lines)) - 1
        column = len(lines[row].encode("utf-8")[:getattr(node, "col_offset", 0)].decode("utf-8", "ignore"))
        return fragment.start + lead + starts[row] + column

    for node in nodes:
        at = offset(node)
        if isinstance(node, ast.Name):
            if node.id.lower() not in canonical:
                raise fragment.error(f"unknown name '{node.id}' in partition subscript; "
                                     f"use {_names(allowed)} and integer constants",
                                     at, at + len(node.id))
            node.id = canonical[node.id.lower()]
            used.add(node.id)
        elif isinstance(node, ast.Constant):
            if type(node.value) is not int:
                raise fragment.error("partition subscripts take integer constants only", at, at + 1)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _OPERATORS:
                raise fragment.error("partition subscripts allow + - * / % only", at, at + 1)
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and _is_zero(node.right):
                right = offset(node.right)
                raise fragment.error("division by zero in a partition subscript", right, right + 1)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise fragment.error("partition subscripts allow + - * / % only", at, at + 1)
        elif not isinstance(node, (ast.operator, ast.unaryop, ast.Load, ast.expr_context)):
            raise fragment.error(f"bad partition subscript '{stripped}': expected integer "
                                 f"arithmetic on {_names(allowed)}", at, at + 1)
    return Subscript(stripped, tree, frozenset(used))


def _uses(node: ast.expr, variable: str) -> bool:
    return any(isinstance(item, ast.Name) and item.id == variable for item in ast.walk(node))


def _is_zero(node: ast.expr) -> bool:
    """Is ``node`` a constant expression (no part variable) that is 0, or that divides by 0 itself?"""
    if any(isinstance(item, ast.Name) for item in ast.walk(node)):
        return False
    if not all(isinstance(item, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
               for item in ast.walk(node)) or \
            not all(type(item.value) is int for item in ast.walk(node) if isinstance(item, ast.Constant)) or \
            not all(type(item.op) in _OPERATORS for item in ast.walk(node) if isinstance(item, ast.BinOp)) or \
            not all(isinstance(item.op, (ast.USub, ast.UAdd)) for item in ast.walk(node)
                    if isinstance(item, ast.UnaryOp)):
        return False      # reported by the checks on its own nodes
    try:
        return _evaluate(node, {}) == 0
    except ZeroDivisionError:
        return True


def _shown(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _names(allowed: set[str]) -> str:
    return " or ".join(sorted(allowed)) if allowed else "integer constants"


def _evaluate(node: ast.expr, env: dict[str, int]) -> int:
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, int)      # only integer constants pass the checks when parsed
        return int(node.value)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, env), _evaluate(node.right, env)
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and right == 0:
            raise ZeroDivisionError("division by zero in a partition subscript")
        return _OPERATORS[type(node.op)](left, right)
    raise TypeError(f"unexpected node {node!r}")
