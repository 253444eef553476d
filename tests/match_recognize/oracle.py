"""A plain-Python oracle of SQL:2016 row pattern recognition (MATCH_RECOGNIZE).

Written from the standard's definition (ISO/IEC 9075-2:2016 and TR 19075-5), not from any engine:

* Rows are partitioned by PARTITION BY and sorted by all ORDER BY keys (ascending); rows whose keys tie
  keep their input order (a stable sort).
* From each candidate start row, in order, a backtracking search tries the pattern's alternatives in
  preference order (greedy quantifiers prefer more iterations, reluctant ones fewer; alternation
  prefers its left branch). A row may be mapped to a variable only if that variable's DEFINE
  condition is true with RUNNING semantics: the partial match plus the current row, tentatively mapped.
  The first (most preferred) match found from a start row is that row's match; none means the next row
  is tried.
* An empty match (the pattern matches zero rows) is a match: ONE ROW PER MATCH gives it a row; ALL
  ROWS PER MATCH shows it (SHOW EMPTY MATCHES, the default) as the start row with no classifier. A
  quantified iteration that consumes no row ends the loop once its minimum is reached.
* AFTER MATCH SKIP: PAST LAST ROW (the default; after an empty match, the row after its start), TO NEXT
  ROW, TO FIRST v, TO LAST v; skipping to a variable with no row in the match, or to the match's
  first row, is an error (MatchRecognizeError), as the standard says.
* WITHIN INTERVAL is Flink's extension, not the standard's: a match's last row must be strictly less
  than the interval after its first row (Flink's CEP times a partial match out when ts - start >= window);
  applied while searching, so a less preferred match inside the window can still be found.

``closed_only=True`` keeps a partition's matches only up to the first search that needed a row past the
end of input: such a match (or non-match) could change if the stream went on, e.g. a greedy last
variable that may still grow. This is what a streaming engine has emitted when the input stops.

The SQL is parsed with sqlglot's Snowflake dialect (which parses exp.MatchRecognize); sqlglot does not
know WITHIN, so that clause is cut out with a regular expression first. PATTERN is parsed here.
"""

from __future__ import annotations

import datetime
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

Row = Mapping[str, object]
Path = list[tuple[int, str]]


class MatchRecognizeError(Exception):
    """A runtime error the standard requires (e.g. AFTER MATCH SKIP to the match's first row)."""


# ---------------------------------------------------------------------------------------------------
# Pattern AST


@dataclass(frozen=True)
class Var:
    """A pattern variable: one row satisfying its DEFINE condition."""

    name: str


@dataclass(frozen=True)
class Seq:
    """Concatenation."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    """Alternation; earlier branches are preferred."""

    options: tuple[Node, ...]


@dataclass(frozen=True)
class Quant:
    """A quantified pattern; ``high`` None means unbounded."""

    node: Node
    low: int
    high: int | None
    reluctant: bool


Node = Var | Seq | Alt | Quant

_PATTERN_TOKEN = re.compile(r"\s*(\{\s*\d*\s*(?:,\s*\d*\s*)?\}|[A-Za-z_][A-Za-z0-9_]*|[()|*+?])")


def parse_pattern(text: str) -> Node:
    """Parse a PATTERN body such as ``A B+? (C | D){2,3}``."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text.rstrip()):
        found = _PATTERN_TOKEN.match(text, pos)
        if not found:
            raise ValueError(f"cannot parse pattern at {text[pos:]!r}")
        tokens.append(found.group(1))
        pos = found.end()
    node, rest = _parse_alt(tokens)
    if rest:
        raise ValueError(f"unexpected {rest[0]!r} in pattern {text!r}")
    return node


def _parse_alt(tokens: list[str]) -> tuple[Node, list[str]]:
    options = []
    node, tokens = _parse_seq(tokens)
    options.append(node)
    while tokens and tokens[0] == "|":
        node, tokens = _parse_seq(tokens[1:])
        options.append(node)
    return (options[0] if len(options) == 1 else Alt(tuple(options))), tokens


def _parse_seq(tokens: list[str]) -> tuple[Node, list[str]]:
    items: list[Node] = []
    while tokens and tokens[0] not in ("|", ")"):
        if tokens[0] == "(":
            node, tokens = _parse_alt(tokens[1:])
            if not tokens or tokens[0] != ")":
                raise ValueError("unbalanced parentheses in pattern")
            tokens = tokens[1:]
        elif re.fullmatch(r"[A-Za-z_]\w*", tokens[0]):
            node, tokens = Var(tokens[0].upper()), tokens[1:]
        else:
            raise ValueError(f"unexpected {tokens[0]!r} in pattern")
        node, tokens = _parse_quantifier(node, tokens)
        items.append(node)
    return (items[0] if len(items) == 1 else Seq(tuple(items))), tokens


def _parse_quantifier(node: Node, tokens: list[str]) -> tuple[Node, list[str]]:
    if not tokens:
        return node, tokens
    head = tokens[0]
    if head == "*":
        low, high = 0, None
    elif head == "+":
        low, high = 1, None
    elif head == "?":
        low, high = 0, 1
    elif head.startswith("{"):
        body = head[1:-1].replace(" ", "")
        if "," in body:
            first, last = body.split(",")
            low, high = int(first or 0), (int(last) if last else None)
        else:
            low = high = int(body)
    else:
        return node, tokens
    tokens = tokens[1:]
    reluctant = bool(tokens) and tokens[0] == "?"
    return Quant(node, low, high, reluctant), tokens[1:] if reluctant else tokens


def pattern_variables(node: Node) -> set[str]:
    """The variables a pattern names."""
    if isinstance(node, Var):
        return {node.name}
    if isinstance(node, Quant):
        return pattern_variables(node.node)
    children = node.items if isinstance(node, Seq) else node.options
    return set().union(*(pattern_variables(child) for child in children))


# ---------------------------------------------------------------------------------------------------
# The query model


@dataclass(frozen=True)
class Measure:
    """One MEASURES item; ``final`` is True for FINAL, False for RUNNING, None when unspecified."""

    name: str
    expression: exp.Expression
    final: bool | None


@dataclass(frozen=True)
class Query:
    """The parts of one MATCH_RECOGNIZE clause the oracle evaluates."""

    partition: tuple[str, ...]
    order: tuple[tuple[str, bool], ...]  # (column, descending)
    measures: tuple[Measure, ...]
    all_rows: bool
    skip: tuple[str, str | None]  # ("PAST LAST ROW" | "TO NEXT ROW" | "TO FIRST" | "TO LAST", variable)
    pattern: Node
    defines: Mapping[str, exp.Expression]
    within: datetime.timedelta | None


_WITHIN = re.compile(r"\bWITHIN\s+INTERVAL\s+'(\d+)'\s+(SECOND|MINUTE|HOUR|DAY)S?\b", re.IGNORECASE)


def parse(sql: str) -> Query:
    """Parse one ``SELECT * FROM T MATCH_RECOGNIZE (...)`` statement into a Query."""
    within = None
    found = _WITHIN.search(sql)
    if found:
        within = datetime.timedelta(**{found.group(2).lower() + "s": int(found.group(1))})
        sql = sql[: found.start()] + sql[found.end() :]
    clause = sqlglot.parse_one(sql, read="snowflake").find(exp.MatchRecognize)
    if clause is None:
        raise ValueError("no MATCH_RECOGNIZE clause")
    measures = []
    for item in clause.args.get("measures") or []:
        frame = str(item.args.get("window_frame") or "").upper()
        alias = item.this
        measures.append(Measure(alias.alias, alias.this, {"FINAL": True, "RUNNING": False}.get(frame)))
    rows = str(clause.args.get("rows") or "ONE ROW PER MATCH").upper()
    after = str(clause.args.get("after") or "AFTER MATCH SKIP PAST LAST ROW").upper()
    skip_text = " ".join(after.split()).removeprefix("AFTER MATCH SKIP ")
    skip: tuple[str, str | None]
    if skip_text in ("PAST LAST ROW", "TO NEXT ROW"):
        skip = (skip_text, None)
    else:
        kind, _, variable = skip_text.rpartition(" ")
        skip = (kind, variable)
    order = clause.args["order"].expressions
    return Query(
        partition=tuple(column.name for column in clause.args.get("partition_by") or []),
        order=tuple((item.this.name, bool(item.args.get("desc"))) for item in order),
        measures=tuple(measures),
        all_rows=rows.startswith("ALL ROWS"),
        skip=skip,
        pattern=parse_pattern(clause.args["pattern"].name),
        defines={item.alias.upper(): item.this for item in clause.args.get("define") or []},
        within=within,
    )


# ---------------------------------------------------------------------------------------------------
# Expressions over a (partial) match


@dataclass
class _Context:
    """What an expression sees: the partition, the mapped rows considered so far, the match number."""

    rows: Sequence[Row]
    path: Path  # (row index, variable) in row order; RUNNING semantics: up to the current row
    match_number: int
    variables: set[str]

    def indices(self, variable: str | None) -> list[int]:
        """The rows mapped to ``variable`` (None: the universal variable, all rows)."""
        return [index for index, name in self.path if variable is None or name == variable]


def _variable_of(expression: exp.Expression, variables: set[str]) -> str | None:
    """The one pattern variable an expression's column references qualify (None: unqualified)."""
    names = {column.table.upper() for column in expression.find_all(exp.Column) if column.table}
    unknown = names - variables
    if unknown:
        raise ValueError(f"unknown pattern variable(s) {sorted(unknown)}")
    if len(names) > 1:
        raise ValueError(f"an expression here may reference one pattern variable, not {sorted(names)}")
    return names.pop() if names else None


def _evaluate(node: exp.Expression, context: _Context, at: int | None = None) -> object:
    """Evaluate ``node``; ``at`` pins column references to one row (inside FIRST/LAST/PREV, aggregates)."""
    if isinstance(node, exp.Column):
        if at is None:
            variable = node.table.upper() or None
            if variable is not None and variable not in context.variables:
                raise ValueError(f"unknown pattern variable {variable}")
            indices = context.indices(variable)
            if not indices:
                return None
            at = indices[-1]
        return context.rows[at][node.name]
    if isinstance(node, exp.Paren):
        return _evaluate(node.this, context, at)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return float(node.this) if any(mark in node.this for mark in ".eE") else int(node.this)
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Cast):
        return _cast(_evaluate(node.this, context, at), node.to.this)
    if isinstance(node, (exp.First, exp.Last)):
        return _navigate(node, context)
    if isinstance(node, exp.Anonymous):
        return _special(node, context)
    if isinstance(node, (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)):
        return _aggregate(node, context)
    if isinstance(node, exp.Not):
        value = _evaluate(node.this, context, at)
        return None if value is None else not value
    if isinstance(node, exp.And):
        return _and(_evaluate(node.this, context, at), _evaluate(node.expression, context, at))
    if isinstance(node, exp.Or):
        left, right = _evaluate(node.this, context, at), _evaluate(node.expression, context, at)
        return True if left is True or right is True else None if left is None or right is None else False
    if isinstance(node, exp.Is):
        return _evaluate(node.this, context, at) is None
    if isinstance(node, exp.Neg):
        value = _evaluate(node.this, context, at)
        return None if value is None else -value  # type: ignore[operator]
    if isinstance(node, exp.Abs):
        value = _evaluate(node.this, context, at)
        return None if value is None else abs(value)  # type: ignore[arg-type]
    if isinstance(node, exp.Between):
        value = _evaluate(node.this, context, at)
        low, high = _evaluate(node.args["low"], context, at), _evaluate(node.args["high"], context, at)
        return _and(_binary(exp.GTE, value, low), _binary(exp.LTE, value, high))
    if isinstance(node, exp.Binary) and type(node) in _BINARY:
        return _binary(type(node), _evaluate(node.this, context, at), _evaluate(node.expression, context, at))
    raise ValueError(f"the oracle does not evaluate {node.sql()}")


def _and(left: object, right: object) -> bool | None:
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


def _cast(value: object, to: exp.DataType.Type) -> object:
    if value is None:
        return None
    if to == exp.DataType.Type.DOUBLE:
        return float(value)  # type: ignore[arg-type]
    if to == exp.DataType.Type.BIGINT:
        return int(value)  # type: ignore[call-overload]
    if to == exp.DataType.Type.TIMESTAMP:
        return datetime.datetime.fromisoformat(str(value))
    raise ValueError(f"the oracle does not cast to {to}")


def _divide(left: float, right: float) -> float:
    if isinstance(left, int) and isinstance(right, int):
        quotient = abs(left) // abs(right)  # exact numerics: truncation toward zero
        return quotient if (left >= 0) == (right >= 0) else -quotient
    return left / right


_BINARY: dict[type, Callable[[object, object], object]] = {
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
    exp.GT: lambda a, b: a > b,  # type: ignore[operator]
    exp.GTE: lambda a, b: a >= b,  # type: ignore[operator]
    exp.LT: lambda a, b: a < b,  # type: ignore[operator]
    exp.LTE: lambda a, b: a <= b,  # type: ignore[operator]
    exp.Add: lambda a, b: a + b,  # type: ignore[operator]
    exp.Sub: lambda a, b: a - b,  # type: ignore[operator]
    exp.Mul: lambda a, b: a * b,  # type: ignore[operator]
    exp.Div: _divide,  # type: ignore[dict-item]
}


def _binary(kind: type, left: object, right: object) -> object:
    if left is None or right is None:
        return None
    return _BINARY[kind](left, right)


def _offset(node: exp.Expression, context: _Context) -> int:
    argument = node.args.get("expression") or (node.expressions[1] if len(node.expressions) > 1 else None)
    return 0 if argument is None else int(_evaluate(argument, context))  # type: ignore[call-overload]


def _navigated_row(node: exp.First | exp.Last, context: _Context) -> int | None:
    """The row FIRST(v.x, n) / LAST(v.x, n) selects among v's rows so far."""
    indices = context.indices(_variable_of(node.this, context.variables))
    offset = _offset(node, context)
    if offset >= len(indices):
        return None
    return indices[offset] if isinstance(node, exp.First) else indices[-1 - offset]


def _navigate(node: exp.First | exp.Last, context: _Context) -> object:
    row = _navigated_row(node, context)
    return None if row is None else _evaluate(node.this, context, row)


def _special(node: exp.Anonymous, context: _Context) -> object:
    name = node.name.upper()
    if name == "CLASSIFIER":
        return context.path[-1][1] if context.path else None
    if name == "MATCH_NUMBER":
        return context.match_number
    if name == "PREV":  # NEXT is left out: it would read rows past the end that closed_only cannot see
        target = node.expressions[0]
        if isinstance(target, (exp.First, exp.Last)):
            base, inner = _navigated_row(target, context), target.this
        else:
            indices = context.indices(_variable_of(target, context.variables))
            base, inner = (indices[-1] if indices else None), target
        if base is None:
            return None
        row = base - (_offset(node, context) if len(node.expressions) > 1 else 1)
        return _evaluate(inner, context, row) if row >= 0 else None
    raise ValueError(f"the oracle does not evaluate {node.sql()}")


def _aggregate(node: exp.Expression, context: _Context) -> object:
    argument = node.this
    if isinstance(argument, exp.Star):
        return len(context.path)
    if isinstance(argument, exp.Column) and isinstance(argument.this, exp.Star):    # COUNT(B.*): B's rows
        return len(context.indices(_variable_of(argument, context.variables)))
    values = [
        value
        for index in context.indices(_variable_of(argument, context.variables))
        if (value := _evaluate(argument, context, index)) is not None
    ]
    if isinstance(node, exp.Count):
        return len(values)
    if not values:
        return None
    if isinstance(node, exp.Sum):
        return sum(values)  # type: ignore[arg-type]
    if isinstance(node, exp.Avg):
        return sum(values) / len(values)  # type: ignore[arg-type]
    return min(values) if isinstance(node, exp.Min) else max(values)  # type: ignore[type-var]


# ---------------------------------------------------------------------------------------------------
# Matching


@dataclass
class _Search:
    """The backtracking search of one partition; ``peeked_past_end`` records a need for more input."""

    query: Query
    rows: Sequence[Row]
    match_number: int
    variables: set[str]
    path: Path
    peeked_past_end: bool = False

    def find(self, start: int) -> int | None:
        """The end (exclusive) of the most preferred match starting at ``start``, the match in ``path``."""
        self.path.clear()
        return self._match(self.query.pattern, start, lambda end: end)

    def _match(self, node: Node, pos: int, then: Callable[[int], int | None]) -> int | None:
        if isinstance(node, Var):
            return self._row(node.name, pos, then)
        if isinstance(node, Seq):
            return self._sequence(node.items, pos, then)
        if isinstance(node, Alt):
            for option in node.options:
                end = self._match(option, pos, then)
                if end is not None:
                    return end
            return None
        return self._repeat(node, 0, pos, then)

    def _sequence(self, items: tuple[Node, ...], pos: int, then: Callable[[int], int | None]) -> int | None:
        if not items:
            return then(pos)
        return self._match(items[0], pos, lambda after: self._sequence(items[1:], after, then))

    def _repeat(self, node: Quant, count: int, pos: int, then: Callable[[int], int | None]) -> int | None:
        def more() -> int | None:
            if node.high is not None and count >= node.high:
                return None
            return self._match(
                node.node,
                pos,
                lambda after: None if after == pos and count >= node.low else self._repeat(node, count + 1, after, then),
            )

        def stop() -> int | None:
            return then(pos) if count >= node.low else None

        for attempt in (stop, more) if node.reluctant else (more, stop):
            end = attempt()
            if end is not None:
                return end
        return None

    def _outside_window(self, pos: int) -> bool:
        """Whether row ``pos`` (or, past the end, any later row) is outside the WITHIN window of the match."""
        if self.query.within is None or not self.path:
            return False
        time = self.query.order[0][0]
        first = self.rows[self.path[0][0]][time]
        latest = self.rows[min(pos, len(self.rows) - 1)][time]  # later rows are at least as late
        return latest - first >= self.query.within  # type: ignore[operator]

    def _row(self, variable: str, pos: int, then: Callable[[int], int | None]) -> int | None:
        if self._outside_window(pos):
            return None
        if pos >= len(self.rows):
            self.peeked_past_end = True
            return None
        self.path.append((pos, variable))
        condition = self.query.defines.get(variable)
        context = _Context(self.rows, self.path, self.match_number, self.variables)
        if condition is None or _evaluate(condition, context) is True:
            end = then(pos + 1)
            if end is not None:
                return end
        self.path.pop()
        return None


def _sort_key(query: Query) -> Callable[[Row], tuple]:
    def key(row: Row) -> tuple:
        return tuple(_Descending(row[name]) if descending else row[name] for name, descending in query.order)

    return key


@dataclass(frozen=True)
class _Descending:
    value: object

    def __lt__(self, other: _Descending) -> bool:
        return other.value < self.value  # type: ignore[operator]


def _next_start(query: Query, start: int, end: int, path: Path) -> int:
    kind, variable = query.skip
    if kind == "PAST LAST ROW":
        return max(end, start + 1)
    if kind == "TO NEXT ROW":
        return start + 1
    indices = [index for index, name in path if name == variable]
    if not indices:
        raise MatchRecognizeError(f"AFTER MATCH SKIP {kind} {variable}: no row of the match is mapped to {variable}")
    target = indices[0] if kind == "TO FIRST" else indices[-1]
    if target == start:
        raise MatchRecognizeError(f"AFTER MATCH SKIP {kind} {variable} would resume at the match's first row")
    return target


def _output(query: Query, rows: Sequence[Row], path: Path, start: int, number: int) -> list[dict[str, object]]:
    variables = pattern_variables(query.pattern)
    whole = _Context(rows, list(path), number, variables)
    if not query.all_rows:
        head: dict[str, object] = {name: rows[start][name] for name in query.partition}
        return [head | {measure.name: _evaluate(measure.expression, whole) for measure in query.measures}]
    order_names = [name for name, _ in query.order]
    leading = [*query.partition, *(name for name in order_names if name not in query.partition)]
    measure_names = {measure.name for measure in query.measures}
    shown = [(index, path[: step + 1]) for step, (index, _) in enumerate(path)] or [(start, [])]
    output = []
    for index, so_far in shown:
        running = _Context(rows, so_far, number, variables)
        values = {
            measure.name: _evaluate(measure.expression, whole if measure.final else running)
            for measure in query.measures
        }
        row = rows[index]
        output.append(
            {name: row[name] for name in leading}
            | values
            | {name: value for name, value in row.items() if name not in leading and name not in measure_names}
        )
    return output


def evaluate(query: Query, rows: Sequence[Row], *, closed_only: bool = False) -> list[dict[str, object]]:
    """The rows MATCH_RECOGNIZE produces over ``rows`` (dicts, in input order), partition by partition."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 50_000))
    partitions: dict[tuple, list[Row]] = {}
    for row in rows:
        partitions.setdefault(tuple(row[name] for name in query.partition), []).append(row)
    variables = pattern_variables(query.pattern)
    output = []
    for partition_key in sorted(partitions, key=lambda key: [(value is None, value) for value in key]):
        ordered = sorted(partitions[partition_key], key=_sort_key(query))
        start, number = 0, 0
        while start < len(ordered):
            search = _Search(query, ordered, number + 1, variables, [])
            end = search.find(start)
            if closed_only and search.peeked_past_end:
                break
            if end is None:
                start += 1
                continue
            number += 1
            output.extend(_output(query, ordered, search.path, start, number))
            start = _next_start(query, start, end, search.path)
    return output


def run(sql: str, rows: Sequence[Row], *, closed_only: bool = False) -> list[dict[str, object]]:
    """Parse ``sql`` and evaluate it over ``rows``."""
    return evaluate(parse(sql), rows, closed_only=closed_only)
