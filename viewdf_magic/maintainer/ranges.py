"""Range steps: a run of consecutive ready parts of one view computed in one Spark job (issue 17).

Which views get them (``plan_range``):

* a view whose UPDATE reads no earlier part of itself, when its query can be lifted
  (language/lifting.py): each reference is ``X[k*j+a .. k*j+b]`` (``X[j+c]``, ``X[j-4 .. j]``, a
  window of a view with longer parts ``X[5*j .. 5*j+4]``) or ``X[.. k*j+b]`` (every part so far), and
  the query's shape keeps its meaning over many parts;
* a translated helper whose UPDATE reads its own previous part but whose RECOMPUTE computes the
  same part from other views' parts alone (a window's running sum): the run is computed with the
  lifted RECOMPUTE, and its parts are recorded as RECOMPUTE parts, as REFRESH EVERY records them;
* a view with a RANGE clause (a pattern's Helper has one): the clause is the run's query as written.
  Its references to other objects hold the parts of every step of the run, each row with the part
  it counts for in ``__vdf_j``; its own ``V[j-1]`` is the part before the run; ``__vdf_first`` and
  ``__vdf_last`` are the run's first and last part; it returns the view's columns and each row's part.

Every other view steps one part at a time; ``RangePlan.reason`` says why.

A run's parts are written as one folder with a sub-folder per part (``__part=<subscript>``, the
layout of a stream batch) and published in one catalog entry; each part keeps its own row count,
content hash and lineage, so reading, lineage, VERIFY, retention and repair see ordinary parts.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP, ObjectDef
from ..language.lifting import INPUT_PART, lift
from ..language.queries import CompiledQuery, RefKind, same_query
from ..language.statements import ClauseKind
from ..storage.parts import Counted, PartStore
from ..storage.slices import PART_COLUMN
from ..timeparts import subscript_sql
from .execute import QueryRunner, conform_prefix
from .fusion import Fusion, embed
from ..storage.spark_errors import SPARK_ERRORS
from .timeline import ResolvedRef, existing
from .views import CompiledView

RANGE_ROWS = 2_000_000      # input rows (counted once per part that reads them) one range step may read
RANGE_PARTS = 10_000        # parts one range step may write (one catalog entry; a year of hourly parts)
# A RANGE clause as written may fold each group's events over the run's parts in order, building the
# group's state after every part (the pattern helper's does): a group's cost grows with the square of
# the run's parts it has rows in, which input rows x parts bounds. Each step also has a fixed cost of
# seconds, so runs should not be short either (measurements in docs/benchmarks.md, parts overhead).
RANGE_CLAUSE_WORK = 20_000_000    # input rows x parts of one RANGE clause step
# A run's parts are published when its job ends, so an interrupted STEP ALL loses the run being computed.
# Outside a transaction (which publishes nothing before it ends anyway), a view's first run in a session
# reads at most RANGE_FIRST_ROWS input rows in at most RANGE_FIRST_PARTS parts (seconds of work at the paces
# measured in docs/benchmarks.md), and each later run is sized from the pace of the view's previous run to
# take about RANGE_SECONDS: an interrupt loses at most that much work, and long backfills still take runs of
# thousands of parts once the pace is known.
RANGE_FIRST_ROWS = 1_000_000
RANGE_FIRST_PARTS = 1_000
RANGE_SECONDS = 5.0
MAX_OFFSET = 2 ** 53        # |c| of X[j+c] a range step handles (part numbers stay exact 64-bit integers)


@dataclass(frozen=True)
class Reach:
    """The parts a reference reads for part j: ``X[scale*j + low .. scale*j + high]``; ``low`` None: from
    X's first part."""

    scale: int
    low: int | None
    high: int

    def parts(self, first: int, last: int, held: Mapping[int, object]) -> list[int]:
        """The parts of ``held`` that the steps ``first .. last`` read, in order."""
        top = self.scale * last + self.high
        if self.low is None:
            return sorted(s for s in held if s <= top)
        if self.high - self.low + 1 >= self.scale:        # the steps' reaches touch or overlap
            return existing(range(self.scale * first + self.low, top + 1), held)
        return sorted({s for j in range(first, last + 1)
                       for s in range(self.scale * j + self.low, self.scale * j + self.high + 1) if s in held})

    @property
    def single(self) -> bool:
        """Whether a part counts for one step at most (the steps' reaches do not overlap)."""
        return self.low is not None and self.high - self.low < self.scale

    def earliest(self, part: Column) -> Column:
        """The first step a row of ``part`` counts for (it counts for every later one too when ``low`` is None)."""
        return -_floor_div(F.lit(self.high) - part, self.scale)

    def steps(self, part: Column, first: int, last: int) -> Column:
        """The step (``__vdf_j``) a row of ``part`` counts for, or an array of the steps when it can count for
        several (the caller explodes it)."""
        if self.single:
            return _floor_div(part - F.lit(self.low), self.scale)
        earliest = F.greatest(self.earliest(part), F.lit(first))
        latest = F.lit(last) if self.low is None else F.least(_floor_div(part - F.lit(self.low), self.scale),
                                                               F.lit(last))
        return F.sequence(earliest, latest)


def _floor_div(value: Column, divisor: int) -> Column:
    return value if divisor == 1 else F.floor(value / F.lit(divisor)).cast("long")


@dataclass(frozen=True)
class RangePlan:
    """How a view's runs of parts are computed: ``query`` lifted to ``sql``, each part recorded as
    computed by clause ``how``; or, when ``sql`` is None, ``reason`` says why it steps part by part."""

    how: ClauseKind = ClauseKind.UPDATE
    clause: ClauseKind = ClauseKind.UPDATE   # the clause run: UPDATE or RECOMPUTE (lifted), or RANGE (as written)
    query: CompiledQuery | None = None
    sql: str | None = None
    reaches: dict[str, Reach] = field(default_factory=dict)    # placeholder -> the parts it reads for part j
    reason: str = ""
    joined: frozenset[str] = frozenset()    # prefix placeholders read once per run, joined on their first step
    takes_initialize: bool = False    # INITIALIZE is ``query``: a run may begin at the first part (recorded as it)

    @property
    def lifted(self) -> bool:
        return self.sql is not None

    def describe(self, name: str) -> str:
        """EXPLAIN VIEW's sentence on the plan."""
        if not self.lifted:
            return f"{name} is computed one part per step: {self.reason}."
        clause = {ClauseKind.RECOMPUTE: "lifted from its RECOMPUTE query (the same parts without reading its own "
                                        "earlier parts)",
                  ClauseKind.UPDATE: "lifted from its UPDATE query", ClauseKind.RANGE: "its RANGE clause"}[self.clause]
        once = [b.text for b in self.query.bindings if b.placeholder in self.joined] if self.query else []
        history = (f" {' and '.join(once)} {'is' if len(once) == 1 else 'are'} read once per run, each row joined "
                   f"with the run's parts it counts for." if once else "")
        return (f"Runs of ready parts of {name} are computed in one Spark job each (a range step, {clause}); "
                f"one part at a time when only one is ready.{history}")


class RangeFailed(Exception):
    """Spark could not run a range step; its parts are computed one at a time instead, which
    reports the error where the user wrote it."""


def _reads_itself(query: CompiledQuery, definition: ObjectDef) -> bool:
    return any(b.name.lower() == definition.key for b in query.bindings)


def plan_range(view: CompiledView, catalog: Catalog) -> RangePlan:
    """The range plan of a view (or why it has none)."""
    definition = view.definition
    query, how = view.update, ClauseKind.UPDATE
    if view.range is not None:
        query = view.range
    elif _reads_itself(query, definition):
        own = [b.text for b in query.bindings if b.name.lower() == definition.key]
        if definition.owner is None or view.recompute is None or _reads_itself(view.recompute, definition):
            return RangePlan(reason=f"its UPDATE reads its own earlier parts ({', '.join(own)}), "
                                    f"so each part waits for the one before")
        query, how = view.recompute, ClauseKind.RECOMPUTE
    return plan_query(view, query, how, catalog)


def plan_query(view: CompiledView, query: CompiledQuery, how: ClauseKind, catalog: Catalog) -> RangePlan:
    """The range plan that computes runs of ``view``'s parts with ``query`` (its clause ``how``; a RANGE
    clause as written, any other lifted), or why it cannot."""
    definition = view.definition
    reaches: dict[str, Reach] = {}
    variable = query.variable or ""
    for binding in query.bindings:
        if binding.kind is RefKind.TABLE:
            continue
        if binding.name.lower() == definition.key:
            assert binding.upper is not None      # a view reads itself only by part (a bare name is refused)
            if binding.lower is not binding.upper or binding.upper.offset(variable) != -1:
                return RangePlan(reason=f"its RANGE clause reads {binding.text}; it may read only "
                                        f"{definition.name}[{query.variable}-1], the part before the run")
            continue
        if binding.kind is RefKind.CATALOG:
            return RangePlan(reason="it reads the part catalog, which changes from step to step")
        if binding.kind is not RefKind.PARTS or binding.upper is None:
            return RangePlan(reason=f"{binding.text} reads every part up to the computed one")
        upper = binding.upper.linear(variable)
        lower = None if binding.lower is None else binding.lower.linear(variable)
        if upper is None or (binding.lower is not None and (lower is None or lower[0] != upper[0]
                                                             or lower[1] > upper[1])):
            return RangePlan(reason=f"{binding.text} does not move with {variable} by a fixed step (as "
                                    f"X[{variable}-1] or X[5*{variable} .. 5*{variable}+4] do)")
        if max(abs(lower[1] if lower else 0), abs(upper[1]), upper[0]) > MAX_OFFSET:
            return RangePlan(reason=f"{binding.text} reads parts too far from {variable} to number them "
                                    f"in a 64-bit column")
        reaches[binding.placeholder] = Reach(upper[0], lower[1] if lower else None, upper[1])
    if query is view.range:
        return RangePlan(how, ClauseKind.RANGE, query, query.sql, reaches)
    inputs = frozenset(reaches)
    prefixes = frozenset(name for name, reach in reaches.items() if reach.low is None)
    lifted = query.analysed(("lift", inputs, prefixes), lambda tree: lift(tree, inputs, prefixes))
    if lifted.sql is None:
        return RangePlan(reason=f"its {how.label} query cannot be lifted to many parts: {lifted.reason}")
    return RangePlan(how, how, query, lifted.sql, reaches, joined=lifted.joined,
                     takes_initialize=same_query(view.initialize, query))


def paced_parts(seconds_per_part: float | None) -> int:
    """The most parts a run may have to take about RANGE_SECONDS at ``seconds_per_part``, the pace of the
    view's previous run (RANGE_FIRST_PARTS before any); at least two, so that a run is still a run."""
    if seconds_per_part is None:
        return RANGE_FIRST_PARTS
    return max(2, min(RANGE_PARTS, int(RANGE_SECONDS / max(seconds_per_part, 1e-6))))


def input_rows(catalog: Catalog, refs: list[ResolvedRef], joined: frozenset[str] = frozenset(),
               read: set[tuple[str, int]] | None = None) -> int:
    """Rows a step reads from partitioned inputs, from the catalog's counts. The parts of ``joined``
    placeholders (read once per run) count only when not yet in ``read``, which gains them."""
    total = 0
    for ref in refs:
        if ref.first is None or ref.last is None or ref.definition.key not in catalog.states:
            continue
        parts = catalog.state(ref.definition.name).parts
        subscripts = existing(ref.subscripts, parts)
        if read is not None and ref.binding.placeholder in joined:
            subscripts = [s for s in subscripts if (ref.binding.placeholder, s) not in read]
            read.update((ref.binding.placeholder, s) for s in subscripts)
        total += sum(parts[s].rows for s in subscripts)
    return total


class RunBudget:
    """What one range step may take on, counted part by part: at most ``most`` parts, about RANGE_ROWS input
    rows (RANGE_FIRST_ROWS for a view's ``first`` run in a session; no bound for a later run of a ``streamed``
    view, a projection of one part, whose job holds no rows in memory; ``input_rows``: parts read once per run
    count once) and, with ``work``, input rows x parts at most ``work``. A run's first part always fits."""

    def __init__(self, catalog: Catalog, plan: RangePlan, most: int = RANGE_PARTS, work: int | None = None,
                 first: bool = False, streamed: bool = False) -> None:
        self.catalog = catalog
        self.plan = plan
        self.most = most
        self.work = work
        self.most_rows = min(RANGE_FIRST_ROWS, RANGE_ROWS) if first else None if streamed else RANGE_ROWS
        self.parts = 0
        self.rows = 0
        self.read: set[tuple[str, int]] = set()

    def admits(self, refs: list[ResolvedRef]) -> bool:
        """Whether the run may take one more part, which reads ``refs``; if so, the part is counted in."""
        if self.parts and self.parts >= self.most:
            return False
        rows = self.rows + input_rows(self.catalog, refs, self.plan.joined, self.read)
        too_many = self.most_rows is not None and rows > self.most_rows
        if self.parts and (too_many or (self.work is not None and rows * (self.parts + 1) > self.work)):
            return False
        self.parts += 1
        self.rows = rows
        return True


class RangeRunner:
    """Computes and writes a run of parts with a range plan."""

    def __init__(self, catalog: Catalog, store: PartStore, runner: QueryRunner) -> None:
        self.catalog = catalog
        self.store = store
        self.runner = runner

    def run(self, definition: ObjectDef, plan: RangePlan, first: int, last: int, fusions: Sequence[Fusion] = ()
            ) -> tuple[str, dict[int, dict[str | None, Counted]]]:
        """Write parts ``first .. last`` (and the ``fusions``' parts, as struct columns); returns the folder
        and what each part with rows holds (``PartStore.write_range``)."""
        with self.frame(definition, plan, first, last) as frame:
            frame, embedded = embed(list(fusions), self.runner, frame)
            return self.store.write_range(definition, frame, embedded)

    @contextmanager
    def frame(self, definition: ObjectDef, plan: RangePlan, first: int, last: int,
              given: Mapping[str, DataFrame] | None = None) -> Iterator[DataFrame]:
        """Parts ``first .. last`` computed by ``plan``: the view's columns, each row's part in ``__part`` and
        PART_TIMESTAMP; usable inside the block (its inputs are named there). ``given`` holds the data of some
        placeholders. Spark's errors, there too, raise RangeFailed."""
        assert plan.query is not None and plan.sql is not None
        frames = dict(given or {})
        for binding in plan.query.bindings:
            source = self.catalog.get(binding.name)
            assert source is not None
            if binding.placeholder in frames:
                continue
            if binding.name.lower() == definition.key:      # a RANGE clause's V[j-1]: the part before the run
                frames[binding.placeholder] = self.store.read_parts(source, self.catalog.state(source.name),
                                                                    [first - 1])
                continue
            if binding.placeholder not in plan.reaches:
                frames[binding.placeholder] = self.runner.frame(ResolvedRef(binding, source))
                continue
            frames[binding.placeholder] = self._input(source, first, last, plan.reaches[binding.placeholder],
                                                      binding.placeholder in plan.joined)
        text = re.sub(r"\b__vdf_first\b", str(first), re.sub(r"\b__vdf_last\b", str(last), plan.sql))
        try:
            with self.runner.named(frames) as sql:
                output = sql(text)
                prefix = conform_prefix(output.schema, definition.schema, plan.query, plan.clause.label,
                                        carried=PART_COLUMN)
                columns = ", ".join(f"_c{k}" for k in range(len(output.columns)))
                frame = self.store.stamp_run(definition, sql(f"{prefix}{text}\n) AS __vdf_output({columns})"))
                yield frame
        except SPARK_ERRORS as exc:
            raise RangeFailed(str(exc)) from None

    def _input(self, source: ObjectDef, first: int, last: int, reach: Reach, once: bool) -> DataFrame:
        """``source``'s parts that steps ``first .. last`` read through ``reach``, each row with the step(s)
        it counts for; ``once``: each row once, with the first step it counts for."""
        state = self.catalog.state(source.name) if source.key in self.catalog.states else None
        if state is None:
            frame = self.store.empty(source)
        else:
            frame = self.store.read_parts(source, state, reach.parts(first, last, state.parts))
        part = F.expr(subscript_sql(PART_TIMESTAMP, source.length))
        if once:
            return frame.withColumn(INPUT_PART, reach.earliest(part))
        steps = reach.steps(part, first, last)
        return frame.withColumn(INPUT_PART, steps if reach.single else F.explode(steps))
