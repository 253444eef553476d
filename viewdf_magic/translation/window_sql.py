"""Generate the ViewDF text of a translated sliding-window query: helper views and the final view.

Every generated statement is an ordinary ``CREATE VIEW ... INITIALIZE ... UPDATE ...`` that the
warehouse parses and defines like a hand-written one. Generated column names start with ``__``:

* ``<view>__pre`` (PARTITION LENGTH L): per source part and group, ``__n`` = count(*), and per
  aggregate argument ``__s`` = sum, ``__c`` = count of non-NULL values, ``__mx`` = max, ``__mn`` = min.
* ``<view>__chunks`` (PARTITION LENGTH L, for max/min when W > 3): per group, the max/min over j's
  chunk of C = W // 2 parts up to j (``__p`` = 1 when the group is there, ``__p_mx<n>``,
  ``__p_mn<n>``) and over a suffix of the previous chunk that grows backwards by one part per
  step (``__s``, ``__s_mx<n>``, ``__s_mn<n>``; see window_plan). One helper step per part.
* ``<view>__sum`` (PARTITION LENGTH s): the window's running count(*) and sums and counts
  (ViewDF_Sum); a group leaves when its count(*) reaches 0.
* ``<view>`` (PARTITION LENGTH s): combines them per group, computes AVG = sum / count and applies
  HAVING; holistic aggregates mixed with others (``__h<n>``) are recomputed over the window's source
  parts in a subquery joined on the group keys. Its RECOMPUTE clause is the user's query over the
  window's source parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import sqlglot
from sqlglot import exp

from .window_plan import (Aggregate, ExtremeRef, affine, chunk_length, chunk_previous, classify, extreme_cover,
                          suffix_source)
from .window_query import WindowQuery, normalized
from ..language.tokens import quote_name

REFRESH_MIN_PARTS = 16



@dataclass(frozen=True)
class Column:
    """An output column: its name and its Spark SQL type (``bigint``, ``double``, ``decimal(20,2)``)."""

    name: str
    sql_type: str

    @property
    def floating(self) -> bool:
        return self.sql_type in ("double", "float")


@dataclass(frozen=True)
class WindowSource:
    """The stream (or view) a window query reads."""

    name: str
    partition_length: int


@dataclass(frozen=True)
class GeneratedView:
    name: str
    role: str                 # pre, chunks, sum or final
    partition_length: int
    summary: str              # one line for EXPLAIN notes


@dataclass
class WindowTranslation:
    """The plan for one window query; ``text`` generates each view's statement in definition order."""

    name: str
    query: WindowQuery
    source: WindowSource
    output: tuple[Column, ...]             # the user's query's columns and types
    width: int                             # W: source parts per window
    slide: int                             # r: source parts per view part
    aggregates: list[Aggregate]
    mode: str                              # incremental, tumbling or holistic (every aggregate holistic)
    arguments: dict[str, int] = field(default_factory=dict)   # argument SQL -> index
    needs: dict[int, set[str]] = field(default_factory=dict)  # index -> {sum, count, max, min}
    refresh_every: int | None = None

    # -- shape ---------------------------------------------------------------------------------
    @property
    def length(self) -> int:
        return self.source.partition_length

    @property
    def subtractable(self) -> bool:
        return self.mode == "incremental" and (any(a.strategy == "subtractable" for a in self.aggregates)
                                               or not any(a.strategy == "distributive" for a in self.aggregates))

    @property
    def distributive(self) -> bool:
        return self.mode == "incremental" and any(a.strategy == "distributive" for a in self.aggregates)

    @property
    def holistic(self) -> list[Aggregate]:
        """The holistic aggregates an incremental view recomputes over the window (``__h<n>``)."""
        return [a for a in self.aggregates if a.strategy == "holistic"] if self.mode == "incremental" else []

    @property
    def chunked(self) -> bool:
        """Max/min read the chunks helper (windows of more than 3 parts)."""
        return self.distributive and self.width > 3

    def helper(self, role: str) -> str:
        return f"{self.name}__{role}"

    def views(self) -> list[GeneratedView]:
        L, r, W = self.length, self.slide, self.width
        found = []
        if self.mode == "incremental":
            found.append(GeneratedView(self.helper("pre"), "pre", L,
                                       f"per part of {self.source.name} and group: count(*) and the sums, "
                                       f"non-NULL counts, maxima and minima the aggregates need"))
            if self.chunked:
                chunk, pre, chunks = chunk_length(W), self.helper("pre"), self.helper("chunks")
                found.append(GeneratedView(chunks, "chunks", L,
                                           f"per group, the max/min over j's chunk of {chunk} parts up to j "
                                           f"(prefix: __p...) and over a suffix of the previous chunk, one part "
                                           f"longer each step (suffix: __s...); from {chunks}[{chunk_previous(chunk)}] "
                                           f"(nothing at a chunk's first part), {pre}[j] and "
                                           f"{pre}[{suffix_source(chunk)}]"))
            if self.subtractable:
                new = f"{self.helper('pre')}[{self._range(0, r - 1)}]"
                old = f"{self.helper('pre')}[{self._range(-W, r - 1 - W)}]"
                refresh = f"; recomputed from {self.helper('pre')} every {self.refresh_every} parts " \
                          f"(REFRESH EVERY) to bound floating-point drift" if self.refresh_every else ""
                found.append(GeneratedView(self.helper("sum"), "sum", r * L,
                                           f"running window state (ViewDF_Sum): {self.helper('sum')}[j] = "
                                           f"{self.helper('sum')}[j-1] + {new} - {old}; a group leaves the "
                                           f"window when its count(*) reaches 0{refresh}"))
        found.append(GeneratedView(self.name, "final", r * L, "the view"))
        return found

    def _range(self, low: int, high: int, var: str = "j") -> str:
        first, last = affine(self.slide, low, var), affine(self.slide, high, var)
        return first if first == last else f"{first} .. {last}"

    def window_range(self, var: str = "j") -> str:
        return self._range(self.slide - self.width, self.slide - 1, var)

    # -- the user's query over the window's parts (RECOMPUTE, naive baseline) ----------------------
    def window_query(self) -> str:
        fragment, clause = self.query.fragment, self.query.clause
        source = fragment.source
        return (source[fragment.start:clause.start] + f"[{self.window_range()}]" +
                source[clause.end:fragment.end])

    # -- statements ----------------------------------------------------------------------------
    def text(self, view: GeneratedView, schema_of: Callable[[str], tuple[Column, ...]]) -> str:
        return getattr(self, f"_{view.role}_text")(view, schema_of)

    def _keys(self, prefix: str = "") -> list[str]:
        return [f"{prefix}__k{n}" for n in range(len(self.query.keys))]

    def _group_by(self, keys: list[str], having: str) -> str:
        return f"\nGROUP BY {', '.join(keys)}" if keys else f"\nHAVING {having}"

    def _pre_text(self, view: GeneratedView, schema_of) -> str:
        q = self.query
        columns = [f"{k.sql(dialect='spark')} AS __k{n}" for n, k in enumerate(q.keys)] + ["count(*) AS __n"]
        for argument, index in self.arguments.items():
            needs = self.needs[index]
            if "sum" in needs:
                columns.append(f"sum({argument}) AS __s{index}")
            if "sum" in needs or "count" in needs:
                columns.append(f"count({argument}) AS __c{index}")
            if "max" in needs:
                columns.append(f"max({argument}) AS __mx{index}")
            if "min" in needs:
                columns.append(f"min({argument}) AS __mn{index}")
        group = self._source_group() if q.keys else "\nHAVING count(*) > 0"
        body = f"SELECT {', '.join(columns)}\nFROM {self._source_rows('i')}{group}"
        return self._statement(view, body, body, None)

    def _source_rows(self, subscript: str) -> str:
        """The source's parts ``subscript`` under the query's alias, filtered by its WHERE."""
        q = self.query
        source = f"{quote_name(self.source.name)}[{subscript}]" + (f" AS {quote_name(q.alias)}" if q.alias else "")
        return source + (f"\nWHERE {q.where.sql(dialect='spark')}" if q.where is not None else "")

    def _source_group(self) -> str:
        return f"\nGROUP BY {', '.join(k.sql(dialect='spark') for k in self.query.keys)}" if self.query.keys else ""

    def _extremes(self) -> list[tuple[str, str]]:
        """(aggregate function, column) of the max/min state."""
        found = []
        for index in self.needs:
            for kind, prefix in (("max", "__mx"), ("min", "__mn")):
                if kind in self.needs[index]:
                    found.append((kind, f"{prefix}{index}"))
        return found

    def _side(self, side: str) -> list[str]:
        """The chunks helper's columns for ``side`` (prefix or suffix): its presence flag, then its
        max/min columns in ``_extremes`` order."""
        flag = f"__{side[0]}"
        return [flag] + [f"{flag}_{column[2:]}" for _, column in self._extremes()]

    def _chunks_text(self, view: GeneratedView, schema_of) -> str:
        """Prefix and suffix of one part in one step: the previous part (an empty range when part j starts
        a chunk, so nothing is read there), ``__pre[j]`` for the prefix and one older part for the suffix."""
        keys, extremes = self._keys(), self._extremes()
        prefix, suffix = self._side("prefix"), self._side("suffix")
        pre, chunk = quote_name(self.helper("pre")), chunk_length(self.width)

        def from_pre(mine: list[str], subscript: str) -> str:
            """A pre-aggregate part as ``mine``'s side; UNION ALL matches columns by position, so both
            sides are listed, always prefix first."""
            values = dict(zip(mine, ["1"] + [column for _, column in extremes]))
            columns = [f"{values[c]} AS {c}" if c in values else f"NULL AS {c}" for c in prefix + suffix]
            return f"SELECT {', '.join(keys + columns)} FROM {pre}[{subscript}]"

        kinds = ["max"] + [kind for kind, _ in extremes]
        combined = ", ".join(keys + [f"{kind}({c}) AS {c}" for side in (prefix, suffix) for kind, c in zip(kinds, side)])
        group = self._group_by(keys, "count(*) > 0")

        def body(branches: list[str]) -> str:
            union = "\n".join(branches)
            return f"SELECT {combined}\nFROM ({union}) AS __chunk{group}"

        added = [from_pre(prefix, "j"), "      UNION ALL " + from_pre(suffix, suffix_source(chunk))]
        previous = (f"SELECT {', '.join(keys + prefix + suffix)} FROM {quote_name(view.name)}"
                    f"[{chunk_previous(chunk)}]")
        update = [previous] + ["      UNION ALL " + added[0]] + added[1:]
        return self._statement(view, body(added), body(update), None)

    def _sums(self) -> list[str]:
        """The running-state columns besides keys and __n."""
        found = []
        for index in self.needs:
            if "sum" in self.needs[index]:
                found.append(f"__s{index}")
            if "sum" in self.needs[index] or "count" in self.needs[index]:
                found.append(f"__c{index}")
        return found

    def _sum_aggregates(self) -> list[str]:
        found = ["sum(__n) AS __n"]
        for column in self._sums():
            if column.startswith("__s"):
                count = "__c" + column[3:]
                found.append(f"CASE WHEN sum({count}) > 0 THEN sum({column}) END AS {column}")
            else:
                found.append(f"sum({column}) AS {column}")
        return found

    def _sum_text(self, view: GeneratedView, schema_of) -> str:
        keys, state = self._keys(), ["__n"] + self._sums()
        pre = quote_name(self.helper("pre"))
        group = self._group_by(keys, "sum(__n) > 0") + ("\nHAVING sum(__n) > 0" if keys else "")
        select = f"SELECT {', '.join(keys + self._sum_aggregates())}"
        window = f"{select}\nFROM {pre}[{self.window_range()}]{group}"
        plain = ", ".join(keys + state)
        negated = ", ".join(keys + [f"-{c} AS {c}" for c in state])
        r, W = self.slide, self.width
        update = (f"{select}\nFROM (SELECT {plain} FROM {quote_name(view.name)}[j-1]\n"
                  f"      UNION ALL SELECT {plain} FROM {pre}[{self._range(0, r - 1)}]\n"
                  f"      UNION ALL SELECT {negated} FROM {pre}[{self._range(-W, r - 1 - W)}]) AS __delta"
                  f"{group}")
        pre_schema = schema_of(self.helper("pre"))
        floating = any(column.floating for column in pre_schema if column.name.startswith("__s"))
        if floating:
            self.refresh_every = max(REFRESH_MIN_PARTS, 4 * -(-W // r))
        return self._statement(view, window, update, window, self.refresh_every, self._unchanged(self.helper("pre")))

    def _unchanged(self, source: str) -> str:
        """With a slide of one part, part j's window differs from part j-1's only by ``source``'s parts j and
        j-W: when both are empty, the part is the one before (declared, so no Spark job computes it)."""
        if self.slide != 1:
            return ""
        name = quote_name(source)
        return f"UNCHANGED WHEN {name}[j] IS EMPTY AND {name}[j-{self.width}] IS EMPTY\n"

    def _final_text(self, view: GeneratedView, schema_of) -> str:
        window = self.window_query()
        if self.mode == "holistic":
            return self._statement(view, window, window, window, declared=self._unchanged(self.source.name))
        if self.mode != "incremental":
            return self._statement(view, window, window, window)
        keys = self._keys()
        state = (["__n"] + self._sums() if self.subtractable else []) + [c for _, c in self._extremes()]
        branches = []
        if self.subtractable:
            mine = set(["__n"] + self._sums())
            columns = keys + [c if c in mine else f"NULL AS {c}" for c in state]
            branches.append(f"SELECT {', '.join(columns)} FROM {quote_name(self.helper('sum'))}[j]")
        if self.distributive:
            extremes = [c for _, c in self._extremes()]
            for ref in self.cover():
                if ref.side == "pre":
                    source, read, where = dict(zip(extremes, extremes)), self.helper("pre"), ""
                else:
                    flag, *values = self._side(ref.side)
                    source, read, where = dict(zip(extremes, values)), self.helper("chunks"), f" WHERE {flag} = 1"
                picked = keys + [f"{source[c]} AS {c}" if c in source else f"NULL AS {c}" for c in state]
                branches.append(f"SELECT {', '.join(picked)} FROM {quote_name(read)}[{ref.subscript}]{where}")
        if len(branches) == 1 and not self.distributive:
            # the running sums alone: the view is a projection of the sum helper's part (no job of its own)
            inner = f"{quote_name(self.helper('sum'))}[j]"
        else:
            kinds = dict((c, kind) for kind, c in self._extremes())
            combined = keys + [f"{kinds.get(c, 'max')}({c}) AS {c}" for c in state]
            union = "\n      UNION ALL ".join(branches)
            inner = (f"(SELECT {', '.join(combined)}\n  FROM ({union}) AS __u"
                     + (f"\n  GROUP BY {', '.join(keys)}" if keys else "") + ")")
        items = [f"CAST({self._rewrite(item)} AS {column.sql_type}) AS {quote_name(column.name)}"
                 for item, column in zip(self.query.items, self.output)]
        having = self.query.having
        where = f"\nWHERE {self._rewrite(having, having=True)}" if having is not None else ""
        body = f"SELECT {', '.join(items)}\nFROM {inner} AS __w{self._holistic_join()}{where}"
        return self._statement(view, body, body, window, declared=self._unchanged(self.helper("pre")))

    def _holistic_join(self) -> str:
        """The holistic aggregates over the window's source parts, per group, joined NULL-safely on the
        keys (a group is in the window exactly when it has rows there, so every group finds its row)."""
        if not self.holistic:
            return ""
        keys = [f"{k.sql(dialect='spark')} AS __hk{n}" for n, k in enumerate(self.query.keys)]
        columns = keys + [f"{a.node.sql(dialect='spark')} AS __h{n}" for n, a in enumerate(self.holistic)]
        on = " AND ".join(f"__w.__k{n} <=> __x.__hk{n}" for n in range(len(keys))) or "TRUE"
        return (f"\nLEFT OUTER JOIN (SELECT {', '.join(columns)}\n  FROM {self._source_rows(self.window_range())}"
                f"{self._source_group()}) AS __x\n  ON {on}")

    def cover(self) -> list[ExtremeRef]:
        return extreme_cover(self.slide, self.width)

    def _replacement(self, aggregate: Aggregate) -> str:
        if aggregate.strategy == "holistic":
            return f"__h{self.holistic.index(aggregate)}"
        index = self.arguments.get(aggregate.argument or "")
        return {"count_star": "coalesce(__n, 0)",
                "count": f"coalesce(__c{index}, 0)",
                "sum": f"__s{index}",
                "avg": f"CASE WHEN __c{index} > 0 THEN __s{index} / __c{index} END",
                "max": f"__mx{index}",
                "min": f"__mn{index}"}[aggregate.kind]

    def _rewrite(self, node: exp.Expr, having: bool = False) -> str:
        """A SELECT or HAVING expression over the combined state columns."""
        aggregates = {normalized(a.node): self._replacement(a) for a in self.aggregates}
        keys = {normalized(k): f"__k{n}" for n, k in enumerate(self.query.keys)}
        aliases = {}
        if having:
            for item, select in zip(self.query.items, self.query.tree.expressions):
                if isinstance(select, exp.Alias):
                    aliases[select.alias.lower()] = item

        def replace(child: exp.Expr) -> exp.Expr:
            form = normalized(child)
            if isinstance(child, exp.AggFunc) and form in aggregates:
                return exp.Paren(this=sqlglot.parse_one(aggregates[form], read="spark"))
            if form in keys:
                return exp.column(keys[form])
            if isinstance(child, exp.Column) and not child.table and child.name.lower() in aliases:
                return exp.Paren(this=sqlglot.parse_one(self._rewrite(aliases[child.name.lower()]), read="spark"))
            return child
        return node.copy().transform(replace).sql(dialect="spark")

    def _statement(self, view: GeneratedView, initialize: str, update: str, recompute: str | None,
                   refresh: int | None = None, declared: str = "") -> str:
        name = quote_name(view.name)
        text = f"CREATE VIEW {name} AS\nINITIALIZE {name}[{'i' if view.role == 'pre' else 'j'}] AS\n" \
               f"{initialize}\nUPDATE {name}[{'i' if view.role == 'pre' else 'j'}] AS\n{update}\n"
        if recompute is not None:
            text += f"RECOMPUTE {name}[j] AS\n{recompute}\n"
        if refresh:
            text += f"REFRESH EVERY {refresh} PARTS\n"
        return text + declared + f"PARTITION LENGTH {view.partition_length}"

    # -- EXPLAIN -------------------------------------------------------------------------------
    def notes(self) -> str:
        """EXPLAIN VIEW's account of the translation: strategies, helpers, parts read per step."""
        L, r, W = self.length, self.slide, self.width
        source = self.source.name
        lines = [f"Translated from a sliding-window query over {source} (PARTITION LENGTH {L}): "
                 f"WINDOW {W * L} s = {W} part(s), SLIDE {r * L} s = {r} part(s).",
                 f"{self.name}[j] = the query over {source}[{self.window_range()}] "
                 f"(parts that do not exist yet count as empty, so early parts hold partial windows).", ""]
        if self.mode == "tumbling":
            lines.append("Tumbling window (WINDOW = SLIDE): windows do not overlap, so no incremental state "
                         f"is needed; each part reads its own {W} part(s) of {source} directly.")
        elif self.mode == "holistic":
            holistic = ", ".join(a.node.sql(dialect="spark") for a in self.aggregates)
            lines.append(f"Holistic aggregate(s) {holistic}: these cannot be computed from per-part summaries, "
                         f"so {self.name} is NOT maintained incrementally: every part recomputes the whole "
                         f"query over the {W} window part(s) of {source} (fallback to recomputation).")
        else:
            lines += self._column_notes() + ["", "Strategy per aggregate:"] + self._strategy_notes()
            lines += ["", "Helper views (owned by this view, dropped with it):"]
            lines += [f"  {view.name} (PARTITION LENGTH {view.partition_length}): {view.summary}"
                      for view in self.views()[:-1]]
            lines += ["", f"Parts read per step of {self.name}:"] + self._read_notes()
        return "\n".join(lines)

    def column_strategies(self) -> dict[str, str]:
        """Each output column: ``key`` (no aggregate), ``incremental``, or ``recomputed`` over the
        window (it uses a holistic aggregate)."""
        strategy = {normalized(a.node): a.strategy for a in self.aggregates}
        found = {}
        for item, column in zip(self.query.items, self.output):
            used = {strategy.get(normalized(node)) for node in item.find_all(exp.AggFunc)} - {None}
            found[column.name] = "key" if not used else "recomputed" if "holistic" in used else "incremental"
        return found

    def columns(self, strategy: str) -> str:
        """The names of the output columns with ``strategy``, comma-separated."""
        return ", ".join(name for name, found in self.column_strategies().items() if found == strategy)

    def _column_notes(self) -> list[str]:
        lines = [f"Columns maintained incrementally: {self.columns('incremental') or 'none'}."]
        if self.holistic:
            lines.append(f"Columns recomputed over the window ({self.width} part(s) of {self.source.name}) "
                         f"at every step: {self.columns('recomputed') or 'none, only HAVING uses them'}.")
        return lines

    def _strategy_notes(self) -> list[str]:
        lines = []
        for aggregate in self.aggregates:
            call = aggregate.node.sql(dialect="spark")
            if aggregate.strategy == "subtractable":
                what = "sum and count" if aggregate.kind == "avg" else \
                    "count" if aggregate.kind.startswith("count") else "sum"
                lines.append(f"  {call}: subtractable -> running {what} (ViewDF_Sum: add the new part, "
                             f"subtract the expired one) in {self.helper('sum')}")
            elif aggregate.strategy == "distributive":
                how = (f"chunked prefix and suffix maxima/minima (two stacks as a helper view, chunks of "
                       f"{chunk_length(self.width)} parts) in {self.helper('chunks')}"
                       if self.chunked else f"the window's {self.width} part(s) of {self.helper('pre')}")
                lines.append(f"  {call}: distributive, not subtractable -> {how}")
            else:
                lines.append(f"  {call}: holistic -> recomputed over the window's parts "
                             f"{self.source.name}[{self.window_range()}] per group, joined on the group keys")
        if self.refresh_every:
            lines.append(f"  DOUBLE sums drift when values are subtracted: {self.helper('sum')} is "
                         f"recomputed from {self.helper('pre')} every {self.refresh_every} parts, and a sum "
                         f"restarts at exactly 0 when its group's non-NULL count reaches 0.")
        elif self.subtractable:
            lines.append("  Sums are exact (integer or decimal arithmetic).")
        return lines

    def _read_notes(self) -> list[str]:
        r, W = self.slide, self.width
        lines = [f"  {self.helper('sum')}[j]"] if self.subtractable else []
        if self.distributive:
            lines += [f"  {self.helper('pre')}[{ref.subscript}]" if ref.side == "pre" else
                      f"  {self.helper('chunks')}[{ref.subscript}] ({ref.side})" for ref in self.cover()]
            if self.chunked:
                lines.append(f"  = at most 3 parts for max/min whatever W is (W = {W}), not {W}; "
                             f"{self.helper('chunks')} reads at most 3 parts per step")
        if self.holistic:
            lines.append(f"  {self.source.name}[{self.window_range()}] = all {W} window part(s), for the "
                         f"holistic column(s)")
        if self.subtractable:
            lines.append(f"  and {self.helper('sum')} reads {self.helper('sum')}[j-1] plus 2*{r} part(s) of "
                         f"{self.helper('pre')} per step")
        lines.append(f"Naive baseline (RECOMPUTE, VERIFY VIEW): the query over {W} part(s) of {self.source.name}.")
        return lines


def translate_window(name: str, query: WindowQuery, source: WindowSource,
                     output: tuple[Column, ...]) -> WindowTranslation:
    """Plan the translation of a checked window query whose output columns are ``output``."""
    length = source.partition_length
    width, slide = query.clause.width // length, (query.clause.slide or length) // length
    aggregates = [classify(a) for a in query.aggregates]
    unique: dict[str, Aggregate] = {}
    for aggregate in aggregates:
        unique.setdefault(normalized(aggregate.node), aggregate)
    aggregates = list(unique.values())
    if aggregates and all(a.strategy == "holistic" for a in aggregates):
        mode = "holistic"
    elif width == slide:
        mode = "tumbling"
    else:
        mode = "incremental"
    translation = WindowTranslation(name, query, source, output, width, slide, aggregates, mode)
    for aggregate in aggregates:
        if aggregate.argument is None:
            continue
        index = translation.arguments.setdefault(aggregate.argument, len(translation.arguments))
        needs = translation.needs.setdefault(index, set())
        needs.add({"avg": "sum"}.get(aggregate.kind, aggregate.kind))
    return translation
