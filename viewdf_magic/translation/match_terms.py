"""The expressions of MEASURES and DEFINE, split into *terms* over a (partial) match and what combines them.

A term is what an expression reads of the rows mapped so far: a navigation (``A.price`` is the last
row of A, ``FIRST(A.price, 1)``, ``LAST(price, 2)``, ``PREV(A.price, 2)``, ``PREV(LAST(A.price), 1)``),
an aggregate over one variable's rows (``AVG(B.price)``, ``COUNT(B.*)``, ``COUNT(*)``), CLASSIFIER() or
MATCH_NUMBER(). ``read_expression`` replaces each term by a placeholder; the Helper (``match_state``)
and RECOMPUTE (``match_recompute``) each evaluate terms their own way. Arguments of terms are templates
over one row, whose columns are qualified by ``ROW``. NEXT() reads rows after the current one, which
a stream has not seen yet: it is refused, as are other constructs the view cannot evaluate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from .match_query import MatchQuery

ROW = "__row"          # qualifier of a term argument's columns
TERM = "__term"        # placeholder names: __term0, __term1, ...
_SPECIALS = ("PREV", "NEXT", "CLASSIFIER", "MATCH_NUMBER")
AGGREGATES: dict[type[exp.Expr], str] = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min",
                                        exp.Max: "max"}


@dataclass(frozen=True)
class Nav:
    """FIRST/LAST(argument, offset) over ``variable``'s rows (None: all rows), then ``back`` rows back in the
    partition (PREV)."""

    kind: str                                   # first or last
    variable: str | None
    key: str                                    # the argument's SQL, identifying it
    offset: int
    back: int
    argument: exp.Expr = field(compare=False, hash=False)


@dataclass(frozen=True)
class Agg:
    """An aggregate over ``variable``'s rows (None: all rows); ``argument`` None counts rows."""

    function: str
    variable: str | None
    key: str | None
    argument: exp.Expr | None = field(compare=False, hash=False)


@dataclass(frozen=True)
class Special:
    """CLASSIFIER() or MATCH_NUMBER()."""

    name: str


Term = Nav | Agg | Special


@dataclass(frozen=True)
class Template:
    """An expression with its terms replaced by placeholders ``__term<k>`` (k indexes ``terms``)."""

    tree: exp.Expr
    terms: tuple[Term, ...]

    def term_at(self, node: exp.Expr) -> Term | None:
        """The term ``node`` stands for, when it is a placeholder."""
        if isinstance(node, exp.Column) and not node.table and node.name.startswith(TERM):
            return self.terms[int(node.name[len(TERM):])]
        return None

    def render(self, value: Callable[[Term], str]) -> str:
        """Spark SQL with each term given by ``value``."""
        def swap(node: exp.Expr) -> exp.Expr:
            term = self.term_at(node)
            return node if term is None else exp.Var(this=f"({value(term)})")
        return self.tree.transform(swap).sql(dialect="spark")


@dataclass(frozen=True)
class Output:
    """A column of the view after the partition keys: a measure (``template``, FINAL or RUNNING) or, for ALL ROWS
    PER MATCH, a column of the stream (``template`` None)."""

    name: str
    type: str
    template: Template | None = None
    final: bool = False


def numbered(outputs: list[Output]) -> bool:
    """Whether an output reads MATCH_NUMBER(): every partition's count of matches is kept."""
    return any(o.template is not None and Special("MATCH_NUMBER") in o.template.terms for o in outputs)


def render_row(argument: exp.Expr, row: str) -> str:
    """A term argument's SQL over the row struct ``row``."""
    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table == ROW:
            return exp.Var(this=f"{row}.{exp.to_identifier(node.name).sql(dialect='spark')}")
        return node
    return argument.transform(swap).sql(dialect="spark")


class _Reader:
    """Reads one expression of the clause (``where`` names it in messages) into a Template."""

    def __init__(self, query: MatchQuery, columns: dict[str, str], where: str) -> None:
        self.query, self.columns, self.where = query, columns, where
        self.terms: list[Term] = []

    def placeholder(self, term: Term) -> exp.Expr:
        if term not in self.terms:
            self.terms.append(term)
        return exp.column(f"{TERM}{self.terms.index(term)}")

    def column(self, node: exp.Column) -> str:
        name = self.columns.get(node.name.lower())
        if name is None:
            raise self.query.error(f"{self.query.source.text} has no column '{node.name}'", node)
        return name

    def variable(self, node: exp.Column) -> str | None:
        if not node.table:
            return None
        name = node.table.upper()
        if name not in self.query.names:
            raise self.query.error(f"'{node.table}' is not a variable of the pattern ({', '.join(self.query.names)})",
                                   node)
        return name

    def row_argument(self, node: exp.Expr, what: str) -> tuple[str | None, exp.Expr]:
        """An expression over one row of one variable (or of the universal variable): its variable and
        its template over ROW."""
        for inner in node.find_all(exp.AggFunc, exp.Anonymous, exp.Subquery, exp.Window):
            if not isinstance(inner, exp.Anonymous) or inner.name.upper() in _SPECIALS:
                raise self.query.error(f"{what} takes an expression over one row, without navigation, aggregates "
                                       f"or subqueries inside", inner)
        columns = list(node.find_all(exp.Column))
        if any(isinstance(c.this, exp.Star) for c in columns):
            raise self.query.error(f"{what} cannot take *", node)
        named = {self.variable(c) for c in columns}
        if len(named) > 1:
            raise self.query.error(f"{what} reads one variable's row; this reads "
                                   f"{', '.join(sorted(v or 'unqualified columns' for v in named))}", node)
        template = node.copy().transform(
            lambda c: exp.column(self.column(c), table=ROW) if isinstance(c, exp.Column) else c)
        return (named.pop() if named else None), template

    def offset(self, node: exp.Expr | None, what: str) -> int:
        if node is None:
            return 0
        if not isinstance(node, exp.Literal) or node.is_string or not node.this.isdigit():
            raise self.query.error(f"the offset of {what} must be a whole number literal (0, 1, 2, ...)", node)
        return int(node.this)

    def navigation(self, node: exp.First | exp.Last, back: int) -> Nav:
        what = type(node).__name__.upper()
        variable, template = self.row_argument(node.this, what)
        offset = self.offset(node.args.get("expression"), what)
        kind = "first" if isinstance(node, exp.First) else "last"
        return Nav(kind, variable, template.sql(dialect="spark"), offset, back, template)

    def visit(self, node: exp.Expr) -> exp.Expr:
        if isinstance(node, (exp.First, exp.Last)):
            return self.placeholder(self.navigation(node, 0))
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                raise self.query.error("* is only allowed in COUNT(*) and COUNT(v.*)", node)
            variable, template = self.row_argument(node, "a column reference")
            return self.placeholder(Nav("last", variable, template.sql(dialect="spark"), 0, 0, template))
        if type(node) in AGGREGATES:
            return self.placeholder(self.aggregate(node))
        if isinstance(node, exp.AggFunc):
            raise self.query.error("only COUNT, SUM, AVG, MIN and MAX aggregate over a match's rows", node)
        if isinstance(node, exp.Anonymous):
            return self.special(node)
        if isinstance(node, (exp.Subquery, exp.Window, exp.Select)):
            raise self.query.error(f"a subquery or window function is not supported in {self.where}", node)
        return node

    def aggregate(self, node: exp.Expr) -> Agg:
        function = AGGREGATES[type(node)]
        argument = node.this
        if isinstance(argument, exp.Distinct):
            raise self.query.error("DISTINCT aggregates are not supported in MATCH_RECOGNIZE", node)
        if isinstance(argument, exp.Star):
            return Agg("count", None, None, None)
        if isinstance(argument, exp.Column) and isinstance(argument.this, exp.Star):
            if function != "count":
                raise self.query.error(f"{function.upper()}(v.*) is not an aggregate; use COUNT(v.*)", node)
            return Agg("count", self.variable(argument), None, None)
        variable, template = self.row_argument(argument, function.upper())
        return Agg(function, variable, template.sql(dialect="spark"), template)

    def special(self, node: exp.Anonymous) -> exp.Expr:
        name = node.name.upper()
        if name == "PREV":
            return self.placeholder(self.previous(node))
        if name == "NEXT":
            raise self.query.error("NEXT() is not supported: it reads rows after the current one, which a stream has "
                                   "not seen yet when the row is matched", node)
        if name in ("CLASSIFIER", "MATCH_NUMBER"):
            if node.expressions:
                raise self.query.error(f"{name}() takes no argument here", node)
            if name == "MATCH_NUMBER" and self.where == "DEFINE":
                raise self.query.error("MATCH_NUMBER() is not supported in DEFINE", node)
            return self.placeholder(Special(name))
        return node

    def previous(self, node: exp.Anonymous) -> Nav:
        if not node.expressions or len(node.expressions) > 2:
            raise self.query.error("PREV takes an expression and an optional offset: PREV(A.price [, 1])", node)
        back = 1 if len(node.expressions) == 1 else self.offset(node.expressions[1], "PREV")
        target = node.expressions[0]
        if isinstance(target, (exp.First, exp.Last)):
            return self.navigation(target, back)
        variable, template = self.row_argument(target, "PREV")
        return Nav("last", variable, template.sql(dialect="spark"), 0, back, template)


def read_expression(query: MatchQuery, node: exp.Expr, columns: dict[str, str], where: str) -> Template:
    """``node`` (a measure or a DEFINE condition) as a Template; ``columns`` maps the stream's lower-case
    column names to their names. Positioned errors for what is not supported."""
    reader = _Reader(query, columns, where)
    tree = node.copy().transform(reader.visit)
    return Template(tree, tuple(reader.terms))


def term_type(term: Term, type_of: Callable[[str], str]) -> str:
    """The SQL type of a term's value; ``type_of`` types Spark SQL over ``__ev`` columns (aggregates allowed)."""
    if isinstance(term, Special):
        return "string" if term.name == "CLASSIFIER" else "bigint"
    if term.argument is None or (isinstance(term, Agg) and term.function == "count"):
        return "bigint"
    argument = render_row(term.argument, "__ev")
    if isinstance(term, Nav) or term.function in ("min", "max"):
        return type_of(argument)
    return type_of(f"{term.function}({argument})")
