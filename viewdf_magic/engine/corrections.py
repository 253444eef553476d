"""Changing the past: DELETE and UPDATE of a stream's stored rows (and of a table no view reads).

A change reads only the parts its condition's timestamp bounds allow (``language/time_bounds.py``), finds
the parts that hold matching rows in one Spark job, and rewrites those parts (and, for an UPDATE that moves
rows in time, the parts they move to) into one new folder. The new parts are published in one catalog
entry with a late-data repair request, so the views' parts that read them are recomputed, with early
cutoff, exactly as after late rows; an interrupted or killed change leaves the old state or the new one.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable, ContextManager

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from ..catalog.actions import Action, Advance, Part, TableData
from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP, ObjectDef, Slice
from ..errors import ViewDFError
from ..language import statements as st
from ..language.source import Fragment, Replacement, RewrittenText
from ..language.time_bounds import Bound, time_bounds
from ..language.tokens import backquote, quote_name
from ..maintainer.maintainer import StepReport
from ..maintainer.repair import RepairReport
from ..storage.parts import PartStore
from ..storage.slices import Wanted
from ..storage.spark_errors import SPARK_ERRORS, spark_error, summary
from ..timeparts import format_part
from ..wording import plural
from .ingest import Ingester, arrived

ROWS = "__vdf_rows"          # the read rows, as the change's SQL names them
HIT = "__vdf_hit"            # whether the condition holds for a row
NUMBER = "__vdf_number"      # a row's part number
Named = Callable[[dict[str, DataFrame]], ContextManager[Callable[[str], DataFrame]]]


def _set_column(k: int) -> str:
    return f"__vdf_set{k}"


@dataclass
class ChangePlan:
    """Which parts a change reads: the stored parts with rows within its condition's timestamp bounds."""

    definition: ObjectDef
    read: list[int]
    stored: int                  # the stream's stored parts with rows
    bounded_by: str | None       # the timestamp column when the condition bounds the parts read

    @property
    def reading(self) -> str:
        """``2 of M's 6 stored parts (10:02:00 to 10:03:00), chosen by the condition on ts``, or ``all 6 of
        M's stored parts (..), as the condition does not bound its timestamp``."""
        d = self.definition
        if d.kind == "table":
            return f"table {d.name}"
        if not self.read:
            text = f"none of {d.name}'s {plural(self.stored, 'stored part')}"
        elif self.bounded_by is None:
            text = f"all {plural(self.stored, 'stored part')} of {d.name}"
        else:
            text = f"{len(self.read)} of {d.name}'s {plural(self.stored, 'stored part')}"
        if self.read:
            first, last = format_part(self.read[0], d.length), format_part(self.read[-1], d.length)
            text += f" ({first})" if first == last else f" ({first} to {last})"
        return text + (f", chosen by the condition on {self.bounded_by}" if self.bounded_by else
                       ", as the condition does not bound the timestamp")


@dataclass
class ChangeReport:
    """What a DELETE or UPDATE did."""

    plan: ChangePlan
    verb: str                                 # deleted or updated
    rows: int = 0                             # rows deleted or updated
    touched: list[int] = field(default_factory=list)     # parts that held such rows
    moved_into: list[int] = field(default_factory=list)  # other parts that updated rows moved to
    repair: RepairReport | None = None
    steps: list[StepReport] = field(default_factory=list)

    def __str__(self) -> str:
        name = self.plan.definition.name
        text = f"{self.verb.capitalize()} {plural(self.rows, 'row')} of {name}"
        if self.rows and self.plan.definition.partitioned:
            text += f" in {plural(len(self.touched), 'part')}"
        if self.moved_into:
            text += f" (moved into {plural(len(self.moved_into), 'other part')})"
        text += f"; read {self.plan.reading}"
        if self.repair is not None:
            text += f"; views: {self.repair}"
        return text


class Corrector:
    """Deletes and updates stream rows in place (parts are rewritten, never edited)."""

    def __init__(self, spark: SparkSession, catalog: Catalog, store: PartStore, ingester: Ingester,
                 named: Named) -> None:
        self.spark, self.catalog, self.store, self.ingester = spark, catalog, store, ingester
        self.named = named          # runs SQL over named frames (the maintainer's runner)

    # -- planning ---------------------------------------------------------------------------
    def plan(self, definition: ObjectDef, change: st.Delete | st.Update) -> ChangePlan:
        """The parts ``change`` must read; a bound that reaches parts retention dropped is refused."""
        if definition.kind == "table":
            return ChangePlan(definition, [0], 1, None)      # a table is read whole, as one "part"
        state = self.catalog.state(definition.name)
        column = definition.timestamp_column
        assert column is not None        # every stream has one
        bounds = time_bounds(change.condition, column) if change.condition is not None else []
        low, high = self._range(bounds, definition.length)
        if state.dropped_before is not None and low is not None and low < state.dropped_before:
            assert change.condition is not None      # bounds come from the condition
            raise change.condition.error(
                f"the condition reaches parts of {definition.name} before "
                f"{format_part(state.dropped_before, definition.length)}, which retention dropped: they can no "
                f"longer be changed. Bound {column} to later times; nothing was changed")
        with_rows = [s for s, meta in state.parts.items() if meta.rows]
        read = [s for s in with_rows if (low is None or s >= low) and (high is None or s <= high)]
        return ChangePlan(definition, read, len(with_rows), column if bounds else None)

    def _range(self, bounds: list[Bound], length: int) -> tuple[int | None, int | None]:
        """The first and last part the bounds allow (None: unbounded), from one local Spark evaluation of
        their values as timestamps; bounds Spark cannot evaluate are left out (the condition's own error
        is reported when it runs)."""
        if not bounds:
            return None, None
        values = ", ".join(f"unix_micros(CAST(({b.value}) AS TIMESTAMP))" for b in bounds)
        try:
            micros = list(self.spark.sql(f"SELECT {values}").collect()[0])
        except SPARK_ERRORS:
            return None, None
        part = length * 1_000_000
        low = high = None
        for bound, value in zip(bounds, micros):
            if value is None:
                continue
            if bound.op in (">", ">=", "="):
                first = (value + (bound.op == ">")) // part
                low = first if low is None else max(low, first)
            if bound.op in ("<", "<=", "="):
                last = (value - (bound.op == "<")) // part
                high = last if high is None else min(high, last)
        return low, high

    # -- changing ---------------------------------------------------------------------------
    def count(self, plan: ChangePlan, change: st.Delete | st.Update) -> dict[int, int]:
        """The rows the change applies to, per part read (parts without any left out): one Spark job over
        the condition's columns; an UPDATE value that its column's type rejects is refused here."""
        marked = self._marked(plan, change, plan.read)      # analysed even when no part is read
        if not plan.read:
            return {}
        hit = F.col(HIT)
        rejected = [F.sum(F.when(hit & _rejects(F.col(_set_column(k)), plan.definition.schema[a.column.text].dataType),
                                 1)).alias(f"rejected{k}")
                    for k, a in enumerate(change.assignments)] if isinstance(change, st.Update) else []
        rewritten = _statement_sql(plan.definition, change)
        try:
            rows = marked.where(hit).groupBy(NUMBER).agg(F.count(F.lit(1)).alias("n"), *rejected).collect()
        except SPARK_ERRORS as exc:
            raise spark_error(exc, rewritten, context=f"cannot {_verb(change)} rows of {plan.definition.name}") \
                from None
        if isinstance(change, st.Update):
            for k, assignment in enumerate(change.assignments):
                bad = sum(row[f"rejected{k}"] or 0 for row in rows)
                if bad:
                    field = plan.definition.schema[assignment.column.text]
                    raise assignment.value.error(
                        f"the new value of {field.name} cannot be cast to {_type(field.dataType)} for "
                        f"{plural(bad, 'row')}; nothing was changed", assignment.value.start, assignment.value.end)
        return {int(row[NUMBER]): int(row["n"]) for row in rows}

    def change(self, plan: ChangePlan, change: st.Delete | st.Update) -> ChangeReport:
        """Rewrite the parts holding rows the change applies to and publish them in one catalog entry, with
        a late-data repair request for the views that read them (the caller maintains after it).

        A DELETE whose condition leaves one stored part to read is not counted first (one Spark job instead
        of two): the part is rewritten, the rows it lost are the rows deleted, and when it lost none nothing
        is published."""
        definition = plan.definition
        report = ChangeReport(plan, "deleted" if isinstance(change, st.Delete) else "updated")
        uncounted = isinstance(change, st.Delete) and definition.kind != "table" and len(plan.read) == 1
        counts = None if uncounted else self.count(plan, change)
        touched = list(plan.read) if counts is None else sorted(counts)
        if not touched:
            return report
        if definition.kind == "table":
            report.rows = sum((counts or {}).values())
            self._rewrite_table(plan, change)
            return report
        if counts is not None:
            self._check_changeable(definition, touched, change)
        started = time.perf_counter()
        rows = self._new_rows(plan, change, touched)
        folder = self.store.new_folder(definition)
        error = _error_at(change)
        try:
            try:
                batch = self.store.write_batch(definition, rows, folder)
            except SPARK_ERRORS as exc:
                if counts is None:        # the write evaluates the user's condition first
                    raise spark_error(exc, _statement_sql(definition, change),
                                      context=f"cannot {_verb(change)} rows of {definition.name}") from None
                raise error(f"cannot store the changed parts of {definition.name}: {summary(exc)}; nothing was "
                            f"changed") from None
            if counts is None:
                (part,) = touched
                lost = self.catalog.state(definition.name).parts[part].rows - batch.rows
                counts = {part: lost} if lost else {}
                if lost:
                    self._check_changeable(definition, touched, change)
            if batch.nulls:
                raise error(f"{plural(batch.nulls, 'row')} would have a NULL timestamp in column "
                            f"{definition.timestamp_column}; nothing was changed")
            written: dict[int, int] = {}
            if batch.first is not None and batch.first == batch.last:
                written = {batch.first: batch.rows}
            elif batch.rows:
                written, _ = self.store.part_counts(folder, batch.rows)
            arriving = {s: n for s, n in written.items() if s not in touched}
            if arriving:
                self.ingester.validate(definition, arriving, error)
            slices = {s: Slice(folder, s, batch.first or 0, batch.last or 0) for s in written}
            if isinstance(change, st.Update):
                self.ingester.check_keys(definition, folder, [Wanted(slices[s], s) for s in written], written, error,
                                         frozenset(touched))
        except BaseException:
            self.store.discard(folder)
            raise
        if not written or not counts:
            self.store.discard(folder)
        if not counts:          # the one part read lost no row
            return report
        self._publish(definition, touched, written, slices, isinstance(change, st.Delete), time.perf_counter() - started)
        report.rows = sum(counts.values())
        report.touched = touched
        report.moved_into = sorted(arriving)
        return report

    def _rewrite_table(self, plan: ChangePlan, change: st.Delete | st.Update) -> None:
        """Write a dimension table's rows after the change into a new folder and make them its rows (no view
        reads the table: the handler refuses a change to one that views read)."""
        definition = plan.definition
        folder = self.store.new_folder(definition)
        try:
            rows = self.store.write_table(definition, self._new_rows(plan, change, plan.read), folder)
        except SPARK_ERRORS as exc:
            self.store.fs.delete(folder)
            raise _error_at(change)(f"cannot store the changed rows of {definition.name}: {summary(exc)}; nothing "
                                    f"was changed") from None
        if not rows:
            self.store.fs.delete(folder)
        self.catalog.commit([TableData(definition.key, (folder,) if rows else (), rows, time.time(), replace=True)])

    def _publish(self, definition: ObjectDef, touched: list[int], written: dict[int, int], slices: dict[int, Slice],
                 deleted: bool, seconds: float) -> None:
        """Publish the changed parts. What their rows were found to repeat or not (storage/repeats.py) is
        forgotten, except that no column set repeats after a DELETE where none did before."""
        state = self.catalog.state(definition.name)
        now = time.time()
        actions: list[Action] = []
        for s in touched:            # a touched part holds exactly what was written for it
            old = state.parts[s]
            n = written.get(s, 0)
            actions.append(Part(definition.key, dataclasses.replace(
                old, rows=n, folders=(slices[s].text,) if n else (), updated=now,
                unique=old.unique if deleted else (), repeated=())))
        for s, n in sorted(written.items()):      # rows an UPDATE moved into another part arrive there
            if s not in touched:
                actions.append(Part(definition.key, arrived(state.parts.get(s), s, n, slices[s].text, state.newest,
                                                            seconds, now)))
        if state.newest is not None and max(written, default=state.newest) > state.newest:
            actions.append(Advance(definition.key, max(written), now))
        actions += self.ingester.repair_from(definition, min([*touched, *written]))
        self.catalog.commit(actions)

    def _check_changeable(self, definition: ObjectDef, touched: list[int], change: st.Delete | st.Update) -> None:
        """Refuse a change to parts that ALLOWED LATENESS closed, or whose repair would need a part retention
        dropped."""
        state = self.catalog.state(definition.name)
        error = _error_at(change)
        if state.lateness is not None and state.newest is not None:
            closed = [s for s in touched if state.newest - s > state.lateness]
            if closed:
                raise error(f"the change reaches {format_part(closed[0], definition.length)}, more than ALLOWED "
                            f"LATENESS {state.lateness} PARTS behind the newest part of {definition.name} "
                            f"({format_part(state.newest, definition.length)}), which is closed; nothing was changed")
        reason = self.ingester.retention.unrepairable(definition, touched[0])
        if reason is not None:
            raise error(f"changing {format_part(touched[0], definition.length)} cannot be repaired: {reason}; "
                        f"nothing was changed")

    # -- the rows ---------------------------------------------------------------------------
    def _marked(self, plan: ChangePlan, change: st.Delete | st.Update, parts: list[int]) -> DataFrame:
        """The rows of ``parts`` with the condition (HIT), an UPDATE's new values and each row's part number;
        errors in the user's expressions point at them."""
        definition = plan.definition
        state = self.catalog.state(definition.name)
        rows = self.store.read_table(definition, state) if definition.kind == "table" else \
            self.store.read_parts(definition, state, parts)
        rewritten = _statement_sql(definition, change)
        with self.named({ROWS: rows}) as sql:
            try:
                marked = sql(rewritten.text)
                marked.schema        # analysed now (Spark Connect analyses lazily)
            except SPARK_ERRORS as exc:
                raise spark_error(exc, rewritten) from None
        number = F.lit(0) if definition.kind == "table" else F.expr(f"unix_seconds({PART_TIMESTAMP}) div {definition.length}")
        return marked.withColumn(NUMBER, number)

    def _new_rows(self, plan: ChangePlan, change: st.Delete | st.Update, touched: list[int]) -> DataFrame:
        """The rows the touched parts hold after the change (in the stream's columns)."""
        definition = plan.definition
        marked = self._marked(plan, change, touched)
        hit = F.col(HIT)
        if isinstance(change, st.Delete):
            return marked.where(~hit).select(*[F.col(quote_name(f.name)) for f in definition.schema.fields])
        new = {a.column.key: k for k, a in enumerate(change.assignments)}
        return marked.select(*[
            F.when(hit, F.col(_set_column(new[f.name.lower()])).cast(f.dataType)).otherwise(F.col(quote_name(f.name)))
            .alias(f.name) if f.name.lower() in new else F.col(quote_name(f.name)) for f in definition.schema.fields])

    def check_assignments(self, definition: ObjectDef, change: st.Update) -> None:
        """Each SET names a column of the stream (PART_TIMESTAMP follows from the timestamp, so it is not set)."""
        names = {f.name.lower() for f in definition.schema.fields}
        for assignment in change.assignments:
            column = assignment.column
            if column.key == PART_TIMESTAMP.lower():
                raise change.fragment.error(f"{PART_TIMESTAMP} follows from {definition.timestamp_column} and "
                                            f"cannot be set", column.start, column.end)
            if column.key not in names:
                raise change.fragment.error(f"{definition.name} has no column {column.text} (its columns are "
                                            f"{', '.join(definition.schema.fieldNames())})", column.start, column.end)

    def check_types(self, plan: ChangePlan, change: st.Update) -> None:
        """Each new value has a type its column's can be cast to (analysis only, no Spark job)."""
        marked = self._marked(plan, change, plan.read[:1])
        for k, assignment in enumerate(change.assignments):
            target = plan.definition.schema[assignment.column.text]
            found = marked.schema[_set_column(k)].dataType
            if found == target.dataType:
                continue
            try:
                marked.select(F.col(_set_column(k)).cast(target.dataType)).schema
            except SPARK_ERRORS:
                raise assignment.value.error(
                    f"{target.name} is {_type(target.dataType)}; a value of type {_type(found)} cannot be cast to it",
                    assignment.value.start, assignment.value.end) from None


def _statement_sql(definition: ObjectDef, change: st.Delete | st.Update) -> RewrittenText:
    """The change as one SELECT over the read rows, built from the user's own text (so Spark's errors point
    into it): ``SELECT *, (value) AS __vdf_set0, .., COALESCE((condition), FALSE) AS __vdf_hit FROM rows``."""
    pieces: list[tuple[Fragment, str, str]] = []      # a piece of the user's text, what opens and closes it
    if isinstance(change, st.Update):
        pieces += [(a.value, ", (", f"\n) AS {_set_column(k)}") for k, a in enumerate(change.assignments)]
    if change.condition is not None:
        pieces.append((change.condition, ", COALESCE((", f"\n), FALSE) AS {HIT}"))
    tail = ("" if change.condition is not None else f", TRUE AS {HIT}") + \
        f" FROM {ROWS} AS {backquote(definition.name)}"
    fragment = change.fragment
    replacements, at, closing = [], fragment.start, "SELECT *"
    for piece, opens, closes in pieces:
        replacements.append(Replacement(at, piece.start, closing + opens))
        at, closing = piece.end, closes
    replacements.append(Replacement(at, fragment.end, closing + tail))
    return RewrittenText(fragment, replacements)


def _rejects(value: Column, target: DataType) -> Column:
    return value.isNotNull() & value.try_cast(target).isNull()


def _type(data_type: DataType) -> str:
    return data_type.simpleString().upper()


def _verb(change: st.Delete | st.Update) -> str:
    return "delete" if isinstance(change, st.Delete) else "update"


def _error_at(change: st.Delete | st.Update) -> Callable[[str], ViewDFError]:
    """Errors about the change as a whole point at its condition (or its target, without one)."""
    if change.condition is not None:
        return lambda message: change.condition.error(message)  # type: ignore[union-attr]
    return lambda message: change.fragment.error(message, change.target.start, change.target.end)

