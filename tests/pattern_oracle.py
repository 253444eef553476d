"""An independent oracle for pattern views (no ViewDF logic): brute-force backtracking over assignments.

A pattern is a small Python structure (``Pattern`` of ``Ref``/``Agg``/``Const``/``Arith``/``Cmp`` nodes).
``sql`` renders it as a CREATE VIEW statement for the warehouse; ``expected`` evaluates it directly:
for each group's event sequence and each part, the longest suffix ending at the group's last event
in the part that matches, with the greedy assignment (earlier Kleene variables longest).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from oracles import _nulls_first, _plain as _scalar


# -- pattern structures ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ref:
    """``v.col`` (cur), ``v[i].col`` (i), ``v[1].col`` (first), ``v[i-1].col`` (prev), ``last(v.col)``
    (last); ``var`` None is an unqualified column of the event (input filter)."""

    var: str | None
    kind: str
    col: str


@dataclass(frozen=True)
class Agg:
    """``fn(col)`` over all matched events (var None), ``fn(v.col)`` over v's events, or
    ``fn(v[..i-1].col)`` (earlier) over the owner's occurrences before the current one; fn ``count*``
    is count(*)."""

    fn: str
    var: str | None
    col: str
    earlier: bool = False


@dataclass(frozen=True)
class Const:
    value: int | str


@dataclass(frozen=True)
class Arith:
    op: str
    left: object
    right: object


@dataclass(frozen=True)
class Cmp:
    op: str
    left: object
    right: object


@dataclass(frozen=True)
class Pattern:
    variables: tuple[tuple[str, bool], ...]        # (name, kleene)
    where: tuple[Cmp, ...]
    select: tuple[tuple[str, object], ...]          # (alias, expression)
    keys: tuple[str, ...]
    contiguity: str | None = None                  # PARTS (the default when None) or EVENTS
    filter: Cmp | None = None

    def kleene(self, var: str) -> bool:
        return dict(self.variables)[var]

    def sql(self, name: str, stream: str = "M") -> str:
        items = ", ".join(f"{render(e, self)} AS {alias}" for alias, e in self.select)
        where = " AND ".join(render(c, self) for c in self.where)
        source = stream + (f" WHERE {render(self.filter, self)}" if self.filter is not None else "")
        variables = ", ".join(v + ("+" if k else "") for v, k in self.variables)
        return (f"CREATE VIEW {name} AS SELECT {items} FROM {source} PATTERN [{variables}]"
                + (f" WHERE {where}" if where else "") + f" GROUP BY {', '.join(self.keys)}"
                + (f" CONTIGUITY {self.contiguity}" if self.contiguity else ""))


def render(node, pattern: Pattern) -> str:
    """SQL text of a node."""
    if isinstance(node, Const):
        return f"'{node.value}'" if isinstance(node.value, str) else str(node.value)
    if isinstance(node, Ref):
        if node.var is None:
            return node.col
        return {"cur": f"{node.var}.{node.col}", "i": f"{node.var}[i].{node.col}",
                "first": f"{node.var}[1].{node.col}", "prev": f"{node.var}[i-1].{node.col}",
                "last": f"last({node.var}.{node.col})"}[node.kind]
    if isinstance(node, Agg):
        if node.fn == "count*":
            return "count(*)"
        inner = node.col if node.var is None else f"{node.var}[..i-1].{node.col}" if node.earlier \
            else f"{node.var}.{node.col}"
        return f"{node.fn}({inner})"
    if isinstance(node, (Arith, Cmp)):
        text = f"{render(node.left, pattern)} {node.op} {render(node.right, pattern)}"
        return f"({text})" if isinstance(node, Arith) else text
    raise TypeError(node)


def variables_in(node) -> set[str]:
    if isinstance(node, (Ref, Agg)):
        return {node.var} if node.var is not None else set()
    if isinstance(node, (Arith, Cmp)):
        return variables_in(node.left) | variables_in(node.right)
    return set()


def nodes_in(node) -> list:
    if isinstance(node, (Arith, Cmp)):
        return [node, *nodes_in(node.left), *nodes_in(node.right)]
    return [node]


def owner(condition: Cmp, pattern: Pattern) -> str:
    """The latest variable a conjunct mentions (the first variable when it mentions none)."""
    order = [v for v, _ in pattern.variables]
    mentioned = variables_in(condition)
    return max(mentioned, key=order.index) if mentioned else order[0]


def from_second(condition: Cmp, var: str) -> bool:
    """A conjunct on Kleene ``var`` that reads v[i-1], an aggregate over v[..i-1], or compares the
    current occurrence with v[1], applies from the second occurrence on."""
    mine = [n for n in nodes_in(condition) if isinstance(n, (Ref, Agg)) and n.var == var]
    if any(isinstance(n, Ref) and n.kind == "prev" or isinstance(n, Agg) and n.earlier for n in mine):
        return True
    kinds = {n.kind for n in mine if isinstance(n, Ref)}
    return "first" in kinds and bool(kinds & {"cur", "i"})


# -- evaluation -------------------------------------------------------------------------------------
ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
COMPARE = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b,
           "<=": lambda a, b: a <= b, "=": lambda a, b: a == b, "<>": lambda a, b: a != b}


def aggregate(fn: str, values: list):
    """SQL aggregate: NULLs ignored, count counts non-NULL, avg as a double."""
    present = [v for v in values if v is not None]
    if fn == "count":
        return len(present)
    if not present:
        return None
    return {"sum": sum, "min": min, "max": max, "avg": lambda vs: sum(vs) / len(vs)}[fn](present)


def evaluate(node, bound: dict[str, list[dict]], event: dict | None = None, matched: list[dict] = ()):
    """``node`` with each variable's events so far in ``bound`` (the owner's list ends at its current
    occurrence); ``event`` for unqualified columns (group keys), ``matched`` for aggregates over all events."""
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Ref):
        if node.var is None:
            return event[node.col]
        events = bound[node.var]
        return events[{"first": 0, "prev": -2}.get(node.kind, -1)][node.col]
    if isinstance(node, Agg):
        if node.fn == "count*":
            return len(matched)
        events = matched if node.var is None else bound[node.var][:-1] if node.earlier else bound[node.var]
        return aggregate(node.fn, [e[node.col] for e in events])
    left, right = evaluate(node.left, bound, event, matched), evaluate(node.right, bound, event, matched)
    if left is None or right is None:
        return None
    return (ARITH if isinstance(node, Arith) else COMPARE)[node.op](left, right)


class Matcher:
    """Backtracking search for the greedy assignment of a run of events to the pattern's variables."""

    def __init__(self, pattern: Pattern):
        self.pattern = pattern
        self.owned = {v: [(c, from_second(c, v)) for c in pattern.where if owner(c, pattern) == v]
                      for v, _ in pattern.variables}

    def holds(self, var: str, bound: dict[str, list[dict]]) -> bool:
        """The conjuncts of ``var`` at its latest occurrence in ``bound``."""
        second = len(bound[var]) >= 2
        return all(evaluate(c, bound) is True for c, later in self.owned[var] if second or not later)

    def assign(self, events: list[dict], at: int = 0, index: int = 0, bound: dict | None = None) -> dict | None:
        """The first assignment of ``events[at:]`` to variables ``index..``, longer Kleene runs first.
        An occurrence's conjuncts read only earlier ones, so the valid lengths of a variable are 1..n."""
        bound = bound or {}
        variables = self.pattern.variables
        if index == len(variables):
            return bound if at == len(events) else None
        var, kleene = variables[index]
        limit = len(events) - at - (len(variables) - index - 1)       # leave one event for each later variable
        limit = limit if kleene else min(limit, 1)
        valid = 0
        while valid < limit and self.holds(var, {**bound, var: events[at:at + valid + 1]}):
            valid += 1
        for length in range(valid, 0, -1):
            found = self.assign(events, at + length, index + 1, {**bound, var: events[at:at + length]})
            if found is not None:
                return found
        return None


def sequences(stream: pd.DataFrame, pattern: Pattern, length: int):
    """(group key, events in order) for every group; events are dicts with a ``part`` subscript."""
    columns = list(stream.columns)
    events = [{c: _plain(v) for c, v in zip(columns, row)} for row in stream.itertuples(index=False)]
    if pattern.filter is not None:
        events = [e for e in events if evaluate(pattern.filter, {}, e) is True]
    for e in events:
        e["part"] = int(pd.Timestamp(e["ts"]).value // 10**9) // length
    order = ["ts", *[c for c in columns if c != "ts"]]
    events.sort(key=lambda e: tuple((e[c] is not None, e[c] if e[c] is not None else 0) for c in order))
    groups: dict[tuple, list[dict]] = {}
    for e in events:
        groups.setdefault(tuple(e[k] for k in pattern.keys), []).append(e)
    return groups.items()


def _plain(value):
    """A pandas/numpy scalar as a plain Python value, missing values as None."""
    return None if value is None or pd.isna(value) else _scalar(value)


def longest_match(matcher: Matcher, events: list[dict], end: int, contiguity: str) -> dict | None:
    """The greedy assignment of the longest matching suffix of ``events[:end + 1]``, if any."""
    first = 0
    if contiguity != "EVENTS":
        for k in range(end, 0, -1):
            if events[k]["part"] - events[k - 1]["part"] > 1:
                first = k
                break
    for start in range(first, end + 1):
        found = matcher.assign(events[start:end + 1])
        if found is not None:
            return found
    return None


def expected(stream: pd.DataFrame, pattern: Pattern, length: int = 60) -> dict[pd.Timestamp, list[tuple]]:
    """The view's rows (sorted tuples of the SELECT list) for every part that has any."""
    matcher = Matcher(pattern)
    found: dict[pd.Timestamp, list[tuple]] = {}
    for _, events in sequences(stream, pattern, length):
        ends = {e["part"]: i for i, e in enumerate(events)}        # the group's last event of each part
        for part, end in ends.items():
            bound = longest_match(matcher, events, end, pattern.contiguity)
            if bound is None:
                continue
            matched = [e for var, _ in pattern.variables for e in bound[var]]
            row = tuple(_plain(evaluate(e, bound, matched[0], matched)) for _, e in pattern.select)
            found.setdefault(pd.Timestamp(part * length, unit="s"), []).append(row)
    return {stamp: sorted(found[stamp], key=_nulls_first) for stamp in sorted(found)}
