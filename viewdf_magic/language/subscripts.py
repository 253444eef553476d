"""Partition subscripts: integer arithmetic on one part variable, such as ``j-59`` or ``i*60+59``."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .source import Fragment

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

    def shifted_from(self, variable: str) -> int | None:
        """``s(j) - j`` when the subscript is ``j`` plus a constant, else None."""
        if self.variables != {variable}:
            return None
        first, second = self.evaluate({variable: 1000}), self.evaluate({variable: 2000})
        return first - 1000 if second - first == 1000 else None


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
        col = (exc.offset or 1) - 1
        at = fragment.start + lead + min(col, len(stripped) - 1)
        raise fragment.error(f"bad partition subscript '{stripped}': expected integer arithmetic "
                             f"on {_names(allowed)}", at, at + 1) from None
    used: set[str] = set()
    canonical = {name.lower(): name for name in allowed}
    for node in ast.walk(tree):
        at = fragment.start + lead + getattr(node, "col_offset", 0)
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
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise fragment.error("partition subscripts allow + - * / % only", at, at + 1)
        elif not isinstance(node, (ast.operator, ast.unaryop, ast.Load, ast.expr_context)):
            raise fragment.error(f"bad partition subscript '{stripped}': expected integer "
                                 f"arithmetic on {_names(allowed)}", at, at + 1)
    return Subscript(stripped, tree, frozenset(used))


def _names(allowed: set[str]) -> str:
    return " or ".join(sorted(allowed)) if allowed else "integer constants"


def _evaluate(node: ast.expr, env: dict[str, int]) -> int:
    if isinstance(node, ast.Constant):
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
