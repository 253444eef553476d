"""What each thread of the Helper carries about its partial match, as Spark SQL.

A thread's values (``a``) are slots, each kept up to date as rows are mapped, so evaluating a DEFINE
condition or a measure never walks the match's rows:

* ``last`` the newest value of an argument over a variable's rows (an array of the newest k values when
  an offset ``LAST(x, k - 1)`` is read), ``first`` the oldest k values;
* ``rows`` a variable's row count, ``count``/``sum``/``min``/``max`` its aggregates (AVG is sum / count);
* ``cls`` the variable of the newest row (CLASSIFIER()), ``fpos``/``lpos`` the positions of a variable's
  first and last row (AFTER MATCH SKIP); ``back`` > 0 is the same over the row that many rows earlier in
  the partition (PREV), whose values every row brings along (``pv``).

Inside the DEFINE of the variable taking the row, the row's own values are read from the row itself:
only values that later rows or the measures read become slots.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from .match_terms import Agg, Nav, Special, Template, Term, render_row, term_type

TypeOf = Callable[[str], str]        # Spark SQL over ``__ev`` columns (aggregates allowed) -> its type
EVENT = "__ev"


@dataclass(frozen=True)
class Slot:
    kind: str                        # last, first, rows, count, sum, min, max, cls, fpos, lpos
    variable: str | None
    key: str | None                  # the argument's SQL
    back: int


@dataclass(frozen=True)
class Current:
    """The row being mapped, inside its variable's DEFINE: ``row`` its struct, ``pv`` its PREV values."""

    variable: str
    row: str
    pv: str


class Values:
    """Slots, their SQL types, and the SQL that updates and reads them."""

    def __init__(self, names: list[str], type_of: TypeOf) -> None:
        self.names = names                      # the pattern's variables; CLASSIFIER() is an index into them
        self.type_of = type_of
        self.sizes: dict[Slot, int] = {}        # slot -> values kept (1 for a scalar)
        self.arguments: dict[str, exp.Expr] = {}
        self.previous: list[tuple[str, int]] = []   # (argument key, rows back) brought along by every row
        self.future: list[Slot] = []            # slots DEFINE conditions read: a thread's future depends on them

    # -- what is kept ---------------------------------------------------------------------------------------
    def need(self, slot: Slot, size: int = 1, define: bool = False) -> None:
        """Keep ``slot`` (its newest or oldest ``size`` values); ``define``: a DEFINE condition reads it."""
        self.sizes[slot] = max(size, self.sizes.get(slot, 0))
        if define and slot not in self.future:
            self.future.append(slot)

    def reads(self, template: Template, current: str | None = None) -> None:
        """Make ``template`` readable: a measure's, or (``current`` given) that variable's DEFINE."""
        for term in template.terms:
            self._term(term, current)

    def _term(self, term: Term, current: str | None) -> None:
        define = current is not None
        if isinstance(term, Nav):
            self.arguments[term.key] = term.argument
            if term.back and (term.key, term.back) not in self.previous:
                self.previous.append((term.key, term.back))
            if not self._from_row(term, current):
                self.need(Slot(term.kind, term.variable, term.key, term.back), term.offset + 1, define)
        elif isinstance(term, Agg):
            if term.key is None:
                self.need(Slot("rows", term.variable, None, 0), define=define)
                return
            assert term.argument is not None      # an aggregate with a key has an argument
            self.arguments[term.key] = term.argument
            for kind in {"avg": ("sum", "count")}.get(term.function, (term.function,)):
                self.need(Slot(kind, term.variable, term.key, 0), define=define)
        elif term.name == "CLASSIFIER" and current is None:
            self.need(Slot("cls", None, None, 0))

    @staticmethod
    def _from_row(term: Nav, current: str | None) -> bool:
        """Whether ``term`` is the row being mapped (or its PREV) inside ``current``'s DEFINE."""
        return current is not None and term.kind == "last" and term.offset == 0 and term.variable in (None, current)

    # -- types ---------------------------------------------------------------------------------------------
    def argument_type(self, key: str) -> str:
        return self.type_of(render_row(self.arguments[key], EVENT))

    def slot_type(self, slot: Slot) -> str:
        if slot.kind in ("rows", "count", "fpos", "lpos"):
            return "bigint"
        if slot.kind == "cls":
            return "int"
        assert slot.key is not None        # the other kinds are over an argument
        if slot.kind == "sum":
            return self.type_of(f"sum({render_row(self.arguments[slot.key], EVENT)})")
        value = self.argument_type(slot.key)
        return f"array<{value}>" if slot.kind == "first" or self.sizes[slot] > 1 else value

    def field(self, slot: Slot) -> str:
        return f"v{list(self.sizes).index(slot)}"

    def struct_type(self) -> str:
        fields = [f"{self.field(s)}:{self.slot_type(s)}" for s in self.sizes]
        return f"struct<{','.join(fields)}>"

    def term_type(self, term: Term) -> str:
        """The SQL type of a term's value."""
        return term_type(term, self.type_of)

    # -- SQL -------------------------------------------------------------------------------------------------
    def zero(self) -> str:
        """A thread's values before its first row."""
        values = []
        for slot in self.sizes:
            kind = self.slot_type(slot)
            value = "0" if slot.kind in ("rows", "count") else ("array()" if kind.startswith("array") else "NULL")
            values.append(f"'{self.field(slot)}', CAST({value} AS {kind})")
        return f"named_struct({', '.join(values)})"

    def pv_sql(self, recent: str) -> str:
        """The PREV values a row brings along, from the partition's preceding rows ``recent``."""
        values = [f"'p{i}', IF(size({recent}) >= {back}, "
                  f"{render_row(self.arguments[key], f'element_at({recent}, -{back})')}, NULL)"
                  for i, (key, back) in enumerate(self.previous)]
        return f"named_struct({', '.join(values)})"

    def pv_type(self) -> str:
        """The struct type of the PREV values a row brings along (when it brings any)."""
        return "struct<" + ",".join(f"p{i}:{self.argument_type(key)}" for i, (key, _) in enumerate(self.previous)) + ">"

    @property
    def depth(self) -> int:
        """How many preceding rows PREV reads (the partition's ``recent`` rows to keep)."""
        return max((back for _, back in self.previous), default=0)

    def _value(self, key: str, back: int, row: str, pv: str) -> str:
        if back == 0:
            return render_row(self.arguments[key], row)
        return f"{pv}.p{self.previous.index((key, back))}"

    def update(self, values: str, variable: str, row: str, pv: str, position: str) -> str:
        """The values after ``row`` (at ``position``, with PREV values ``pv``) is mapped to ``variable``."""
        fields = []
        for slot in self.sizes:
            old = f"{values}.{self.field(slot)}"
            new = old if slot.variable not in (None, variable) else self._updated(slot, old, variable, row, pv, position)
            fields.append(f"'{self.field(slot)}', {new}")
        return f"named_struct({', '.join(fields)})"

    def _updated(self, slot: Slot, old: str, variable: str, row: str, pv: str, position: str) -> str:
        if slot.kind in ("rows", "cls", "fpos", "lpos"):
            return {"rows": f"{old} + 1", "cls": str(self.names.index(variable) + 1),
                    "fpos": f"coalesce({old}, {position})", "lpos": position}[slot.kind]
        assert slot.key is not None        # the other kinds are over an argument
        value = self._value(slot.key, slot.back, row, pv)
        size = self.sizes[slot]
        if slot.kind == "first":
            return f"IF(size({old}) < {size}, concat({old}, array({value})), {old})"
        if slot.kind == "last":
            return value if size == 1 else f"slice(concat({old}, array({value})), IF(size({old}) >= {size}, 2, 1), {size})"
        if slot.kind == "count":
            return f"{old} + IF(({value}) IS NULL, 0, 1)"
        if slot.kind == "sum":
            kind = self.slot_type(slot)
            return f"coalesce({old} + CAST({value} AS {kind}), {old}, CAST({value} AS {kind}))"
        return f"{'least' if slot.kind == 'min' else 'greatest'}({old}, {value})"

    def read(self, term: Term, values: str, current: Current | None = None, match_number: str = "NULL") -> str:
        """A term's value from a thread's ``values`` (inside ``current``'s DEFINE when given)."""
        if isinstance(term, Special):
            if term.name == "MATCH_NUMBER":
                return match_number
            if current is not None:
                return f"'{current.variable}'"
            names = ", ".join(f"'{name}'" for name in self.names)
            return f"element_at(array({names}), {values}.{self.field(Slot('cls', None, None, 0))})"
        if isinstance(term, Nav):
            if current is not None and self._from_row(term, current.variable):
                return self._value(term.key, term.back, current.row, current.pv)
            slot = Slot(term.kind, term.variable, term.key, term.back)
            stored = f"{values}.{self.field(slot)}"
            if term.kind == "first":
                return f"try_element_at({stored}, {term.offset + 1})"
            return stored if self.sizes[slot] == 1 else f"try_element_at({stored}, -{term.offset + 1})"
        if term.key is None:
            return f"{values}.{self.field(Slot('rows', term.variable, None, 0))}"
        if term.function != "avg":
            return f"{values}.{self.field(Slot(term.function, term.variable, term.key, 0))}"
        total = f"{values}.{self.field(Slot('sum', term.variable, term.key, 0))}"
        count = f"{values}.{self.field(Slot('count', term.variable, term.key, 0))}"
        kind = self.term_type(term)
        numerator = total if kind.startswith("decimal") else f"CAST({total} AS double)"
        return f"CAST(try_divide({numerator}, {count}) AS {kind})"

    def typed_nulls(self, template: Template) -> str:
        """``template`` with every term a NULL of its type: for typing it by Spark analysis."""
        return template.render(lambda term: f"CAST(NULL AS {self.term_type(term)})")
