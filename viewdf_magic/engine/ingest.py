"""Getting rows in: INSERT, LOAD and ``Warehouse.ingest`` routed to stream parts by timestamp, checked
(lateness, UNIQUE .. PER PART), written and published; appends to dimension tables."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable, cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ..catalog.actions import Action, Advance, Create, Part, TableData, TooLate
from ..catalog.catalog import Catalog
from ..catalog.model import LoadedFile, ObjectDef, PartMeta, Slice
from ..errors import RowsRefused
from ..language.statements import ClauseKind
from ..language.tokens import quote_name
from ..maintainer.fusion import Fusion, embed
from ..maintainer.maintainer import Maintainer, StepReport
from ..maintainer.repair import RepairReport, request_repair
from ..maintainer.retention import Retention
from ..storage.spark_errors import SPARK_ERRORS, summary
from ..storage.parts import Batch, PartStore, one_task_if_small
from ..storage.file_threads import each_file
from ..storage.loaded_parts import LOADED_FILE, rows_per_part
from ..storage.repeats import key_hash
from ..storage.slices import PART_COLUMN, Wanted
from ..timeparts import format_part, subscript_sql
from ..wording import agreeing, plural
from .conform import ErrorAt

MAX_NEW_PARTS = 100_000


@dataclass
class IngestReport:
    """What one batch did: the stream parts it filled, the gaps it sealed, the view parts it caused."""

    stream: str
    rows: int = 0
    parts: list[int] = field(default_factory=list)
    sealed: int = 0
    late: list[int] = field(default_factory=list)          # earlier parts that received rows
    late_rows: int = 0
    repair: RepairReport | None = None                     # view parts recomputed because of them
    steps: list[StepReport] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)     # views that could not be maintained
    diverted: int = 0          # rows later than ALLOWED LATENESS that went to the stream's divert table
    diverted_into: str = ""
    source: str = ""           # where the rows came from, said after where they went (" from 1 new file")
    maintenance_seconds: float = 0.0     # the maintenance after the batch (the views written with it: none)

    def __str__(self) -> str:
        text = f"{plural(self.rows, 'row')} into {plural(len(self.parts), 'part')} of {self.stream}{self.source}"
        if self.late:
            text += f" ({plural(self.late_rows, 'late row')} into {plural(len(self.late), 'earlier part')})"
        if self.sealed:
            text += f", {plural(self.sealed, 'empty part')} sealed"
        if self.diverted:
            text += f"; {plural(self.diverted, 'row')} later than ALLOWED LATENESS diverted into {self.diverted_into}"
        if self.repair is not None:
            text += f"; late data: {self.repair}"
        computed = sum(1 for step in self.steps if not step.repair)
        if computed:
            text += f"; {plural(computed, 'view part')} computed"
        for failure in self.failures:
            text += f"; {failure}"
        return text

    def counted(self, parts: dict[int, int], newest: int | None) -> "IngestReport":
        """This report with the batch's ``parts`` (rows of each) counted in, the stream's newest part before it
        being ``newest``: which were late, and how many empty parts the batch sealed."""
        self.rows = sum(parts.values())
        self.parts = sorted(parts)
        self.late = [s for s in self.parts if newest is not None and s <= newest]
        self.late_rows = sum(parts[s] for s in self.late)
        begin = min(parts) if newest is None else newest + 1
        self.sealed = max(0, max(parts) - begin + 1 - (len(parts) - len(self.late)))
        return self


class Ingester:
    """Writes batches into stream parts and dimension tables."""

    def __init__(self, spark: SparkSession, catalog: Catalog, store: PartStore, retention: Retention,
                 maintainer: Maintainer, fusing: Callable[[], bool]) -> None:
        self.spark = spark
        self.catalog = catalog
        self.store = store
        self.retention = retention
        self.maintainer = maintainer      # the views written with a batch, and repairs
        self.fusing = fusing              # whether views are written with a batch (AUTO maintenance)

    def append_stream(self, definition: ObjectDef, frame: DataFrame, error: ErrorAt) -> IngestReport:
        """Route rows to parts by timestamp and publish the parts; nothing is published on error.

        One Spark job writes the batch (one folder, sorted by part) and observes its row count, its rows
        without a timestamp and its first and last part; the checks run on what was written, and a
        refused batch's folder is deleted before anything names it. Only a batch spanning several parts
        counts them in a second job (reading the written part numbers); a UNIQUE stream's declaration is
        checked in one job over the written keys' hashes. (Whether other columns repeat in a part, which
        ``UPDATE .. WHEN X[j] IS UNIQUE`` asks, the view's step finds in its own job.)

        Under AUTO maintenance, the views whose next part is a projection of the stream's part (q1's
        ``SELECT .. FROM bid[j]``) are written by the same job, as struct columns of the batch
        (maintainer/fusion.py), and their new parts committed with the stream's."""
        report = IngestReport(definition.name)
        if not frame.columns:
            return report
        started = time.perf_counter()
        folder = self.store.new_folder(definition)
        try:
            try:
                batch, fusions = self._write(definition, frame, folder)
                self._validate_nulls(definition, batch.nulls, error)
                if batch.rows == 0:
                    self.store.discard(folder)
                    return report
                assert batch.first is not None and batch.last is not None     # it has rows
                if batch.first == batch.last:
                    parts, fused = {batch.first: batch.rows}, {batch.first: batch.counted}
                else:
                    parts, fused = self.store.part_counts(folder, batch.rows, batch.embedded)
                state = self.catalog.state(definition.name)
                newest = state.newest           # before this batch
                too_late = self.too_late(definition, parts)
                late = {s: parts.pop(s) for s in too_late} if state.late_into is not None else {}
                if parts:
                    self.validate(definition, parts, error)
                written = [Wanted(Slice(folder, s, batch.first, batch.last), s) for s in parts]
                if parts:
                    self.check_keys(definition, folder, written, parts, error)
                with self.catalog.transaction():
                    if late:
                        report.diverted = self._divert(definition, folder, batch.first, batch.last, late, error)
                        report.diverted_into = state.late_into or ""
                    if parts:
                        self._publish(definition, [(Slice(folder, s, batch.first, batch.last), n)
                                                   for s, n in parts.items()], time.perf_counter() - started)
                        report.steps = self.maintainer.record_batch(definition, fusions, newest, folder,
                                                                    (batch.first, batch.last), fused)
            except SPARK_ERRORS as exc:
                raise error(f"cannot store the batch for {definition.name}: {_reason(exc)}; nothing was written") \
                    from None
        except BaseException:
            self.store.discard(folder)
            raise
        if not parts:       # every row was diverted: the table holds a copy of them
            self.store.discard(folder)
            return report
        return report.counted(parts, newest)

    def load_as_is(self, definition: ObjectDef, files: list[LoadedFile], error: ErrorAt, link: bool = False
                   ) -> IngestReport | None:
        """LOAD's Parquet ``files`` taken into the stream as they are (storage/loaded_parts.py): each copied into a
        folder of its own (hard-linked where it can be, when ``link``: LOAD .. MOVE removes the files after the
        commit) and published with its rows per part, without a Spark job (large files counted and copied several
        at once, storage/file_threads.py). None, with nothing written, when a file cannot be
        taken so, or when its rows need what ``append_stream`` does besides writing (a declared UNIQUE (..)
        PER PART to check, rows later than ALLOWED LATENESS to divert): Spark then reads and writes them. The
        views that project the stream's part are computed by their own steps."""
        assert definition.timestamp_column is not None        # every stream has one
        if definition.unique:
            return None
        started = time.perf_counter()
        timestamp = definition.timestamp_column
        every = each_file(lambda file: rows_per_part(file.path, definition.schema, timestamp, definition.length),
                          files, [file.size for file in files])
        if any(counts is None for counts in every):
            return None
        counted = [(file, counts) for file, counts in zip(files, every) if counts]
        parts: dict[int, int] = {}
        for _, counts in counted:
            for subscript, rows in counts.items():
                parts[subscript] = parts.get(subscript, 0) + rows
        report = IngestReport(definition.name)
        if not parts:
            return report
        state = self.catalog.state(definition.name)
        newest = state.newest
        if state.late_into is not None and self.too_late(definition, parts):
            return None
        self.validate(definition, parts, error)
        folders = [self.store.new_folder(definition) for _ in counted]

        def copied(at: int) -> bool:
            return self.store.fs.copy_file(counted[at][0].path, f"{folders[at]}/{LOADED_FILE}", link)

        try:
            if not all(each_file(copied, range(len(counted)), [file.size for file, _ in counted])):
                for folder in folders:
                    self.store.discard(folder)
                return None
            self._publish(definition, [(Slice(folder, s, min(counts), max(counts), loaded=True), n)
                                       for folder, (_, counts) in zip(folders, counted) for s, n in counts.items()],
                          time.perf_counter() - started)
        except BaseException:
            for folder in folders:
                self.store.discard(folder)
            raise
        return report.counted(parts, newest)

    def _write(self, definition: ObjectDef, frame: DataFrame, folder: str) -> tuple[Batch, list[Fusion]]:
        """Write a batch into ``folder`` with the views to write with it; when Spark cannot compute one of
        them, the batch again without (each view then fails, or not, in its own step)."""
        fusions = self.maintainer.batch_fusions(definition) if self.fusing() else []
        if fusions:
            try:
                return self.store.write_batch(definition, frame, folder,
                                              lambda rows: embed(fusions, self.maintainer.runner, rows)), fusions
            except SPARK_ERRORS:
                self.store.fs.delete(folder)
        return self.store.write_batch(definition, frame, folder), []

    def _publish(self, definition: ObjectDef, slices: list[tuple[Slice, int]], seconds: float) -> None:
        """Publish the stream parts a batch wrote (``slices``: where each part's rows are, and how many), advance
        the stream, and ask for a repair of the view parts that read late ones."""
        now = time.time()
        state = self.catalog.state(definition.name)
        metas: dict[int, PartMeta] = {}
        for piece, rows in sorted(slices, key=lambda item: (item[0].part, item[0].folder)):
            s = cast(int, piece.part)
            metas[s] = arrived(metas.get(s, state.parts.get(s)), s, rows, piece.text, state.newest, seconds, now)
        actions: list[Action] = [Part(definition.key, meta) for meta in metas.values()]
        actions.append(Advance(definition.key, max(metas), now))
        actions += self.repair_from(definition, min(metas))
        self.catalog.commit(actions)

    def _divert(self, definition: ObjectDef, folder: str, first: int, last: int, late: dict[int, int],
                error: ErrorAt) -> int:
        """Append a batch's rows later than ALLOWED LATENESS (``late``: rows per part) to the stream's divert table,
        with their arrival time and why; the number of rows."""
        state = self.catalog.state(definition.name)
        assert state.late_into is not None and state.newest is not None and state.lateness is not None
        table = self.catalog.get(state.late_into)
        if table is None or table.kind != "table":
            raise error(f"{plural(sum(late.values()), 'row')} {agreeing(sum(late.values()), 'is', 'are')} more than "
                        f"ALLOWED LATENESS behind, and {definition.name} diverts such rows into {state.late_into}, "
                        f"which no longer exists; nothing was written")
        rows = self.store.read_slices(definition, [Wanted(Slice(folder, s, first, last), s) for s in sorted(late)])
        reason = (f"more than ALLOWED LATENESS {state.lateness} PARTS behind the newest part "
                  f"({format_part(state.newest, definition.length)})")
        frame = rows.select(*[F.col(quote_name(f.name)) for f in definition.schema.fields],
                            F.current_timestamp().alias("arrived"), F.lit(reason).alias("reason"))
        diverted = self.append_table(table, frame, error)
        self.catalog.commit([TooLate(definition.key, diverted, diverted=True)])
        return diverted

    def repair_from(self, definition: ObjectDef, subscript: int) -> list[Action]:
        """The action asking for a late-data repair after a change to ``definition``'s parts from ``subscript``
        on, when a computed view part may read them (none otherwise)."""
        ends = [(newest + 1) * d.length for d in self.catalog.views()
                for newest in [self.catalog.state(d.name).newest_part()] if newest is not None]
        since = subscript * definition.length
        if since >= max(ends, default=-(2 ** 62)):
            return []
        return [request_repair(self.catalog.settings, since, self.catalog.version + 1)]

    @staticmethod
    def _validate_nulls(definition: ObjectDef, nulls: int, error: ErrorAt) -> None:
        if nulls:
            raise error(f"{plural(nulls, 'row')} {agreeing(nulls, 'has', 'have')} a NULL timestamp in column "
                        f"{definition.timestamp_column}; nothing was written")

    def too_late(self, definition: ObjectDef, parts: dict[int, int]) -> list[int]:
        """The parts among ``parts`` more than ALLOWED LATENESS behind the stream's newest part."""
        state = self.catalog.state(definition.name)
        if state.lateness is None or state.newest is None:
            return []
        newest, lateness = state.newest, state.lateness
        return sorted(s for s in parts if newest - s > lateness)

    def validate(self, definition: ObjectDef, parts: dict[int, int], error: ErrorAt) -> None:
        """Refuse rows (``parts``: how many for each part) that lateness, retention or the part limit forbid."""
        length = definition.length
        state = self.catalog.state(definition.name)
        newest, first = state.newest, state.first
        if newest is not None:    # late: for a part already sealed
            too_late = self.too_late(definition, parts)
            if too_late:
                late_rows = sum(parts[s] for s in too_late)
                message = (f"{plural(late_rows, 'row')} {agreeing(late_rows, 'is', 'are')} more than ALLOWED LATENESS "
                           f"{state.lateness} PARTS behind the newest part of {definition.name} "
                           f"({format_part(newest, length)}); the oldest is for {format_part(too_late[0], length)}. "
                           f"Nothing was written")
                raise RowsRefused(error(message), definition.key, late_rows)
        if state.dropped_before is not None and min(parts) < state.dropped_before:
            dropped_rows = sum(n for s, n in parts.items() if s < state.dropped_before)
            raise error(f"{plural(dropped_rows, 'row')} {agreeing(dropped_rows, 'belongs', 'belong')} to parts "
                        f"of {definition.name} before {format_part(state.dropped_before, length)}, which retention "
                        f"dropped; nothing was written")
        if newest is not None and min(parts) <= newest:
            reason = self.retention.unrepairable(definition, min(parts))
            if reason is not None:
                raise error(f"late rows for {format_part(min(parts), length)} cannot be repaired: {reason}; "
                            f"nothing was written")
        low = min(parts) if first is None else min(min(parts), first)
        high = max(parts) if newest is None else max(max(parts), newest)
        new_parts = (high - low + 1) - (0 if first is None or newest is None else newest - first + 1)
        if new_parts > MAX_NEW_PARTS:
            raise error(f"this batch would create {new_parts:,} parts of {definition.name} "
                        f"({format_part(low, length)} to {format_part(high, length)}); the limit is "
                        f"{MAX_NEW_PARTS:,}. Are the timestamps in the right unit? Nothing was written")

    def check_keys(self, definition: ObjectDef, folder: str, written: list[Wanted], counts: dict[int, int],
                   error: ErrorAt, replaced: frozenset[int] = frozenset()) -> None:
        """Check the stream's UNIQUE (..) PER PART, if it declares one, for each written part. The stored rows
        of the written parts count too, except in ``replaced`` parts (whose rows the written ones replace).
        (What views' ``WHEN X[j] IS UNIQUE`` ask of undeclared columns, their steps find: storage/repeats.py.)"""
        if not definition.unique:
            return
        kept = [s for s in counts if s in self.catalog.state(definition.name).parts and s not in replaced]
        if self._repeats(definition, folder, counts, kept):
            self._check_unique(definition, written, kept, error)      # the values, unless two hashes collided

    def _repeats(self, definition: ObjectDef, folder: str, counts: dict[int, int], late: list[int]) -> bool:
        """Whether a part the batch in ``folder`` wrote (``counts``: its rows there) has two rows (the stored
        ones of ``late`` parts included) with the same 64-bit hash of the declared UNIQUE columns, from one
        Spark job: a collision can only report a repeat that is not there, never miss one. Parts of one new
        row need no job."""
        if all(n <= 1 and s not in late for s, n in counts.items()):
            return False
        columns = list(definition.unique)
        rows = self.store.batch_columns(definition, folder, columns)
        state = self.catalog.state(definition.name)
        if late:
            old = self.store.read_parts(definition, state, late)
            rows = rows.unionByName(old.select(*[quote_name(c) for c in columns],
                                               _subscript(definition).alias(PART_COLUMN)))
        rows = one_task_if_small(rows, sum(counts.values()) + sum(state.parts[s].rows for s in late))
        hashed = rows.select(PART_COLUMN, key_hash(columns).alias("h"))
        return bool(hashed.groupBy(PART_COLUMN, "h").count().where("count > 1").limit(1).collect())

    def _check_unique(self, definition: ObjectDef, written: list[Wanted], late: list[int], error: ErrorAt) -> None:
        """UNIQUE (..) PER PART, exactly: no two rows of one part, in the batch or stored in a ``late`` part,
        share the columns; the error names the part and the values."""
        keys = [F.col(quote_name(c)) for c in definition.unique]
        rows = self.store.read_slices(definition, written)
        if late:
            rows = rows.unionByName(self.store.read_parts(definition, self.catalog.state(definition.name), late))
        twice = rows.groupBy(_subscript(definition).alias("s"), *keys).count() \
            .where("count > 1").limit(1).collect()
        if twice:
            row = twice[0]
            columns = ", ".join(definition.unique)
            values = ", ".join("NULL" if row[c] is None else repr(row[c]) for c in definition.unique)
            raise error(f"{row['count']} rows of part {format_part(row['s'], definition.length)} have "
                        f"({columns}) = ({values}), but {definition.name} is {definition.unique_clause}; "
                        f"nothing was written")

    def append_table(self, definition: ObjectDef, frame: DataFrame, error: ErrorAt,
                     create: bool = False) -> int:
        """Append rows to a dimension table (``create``: publish the table with them); returns the row count."""
        folder = self.store.new_folder(definition)
        try:
            rows = self.store.write_table(definition, frame, folder)
        except SPARK_ERRORS as exc:
            self.store.fs.delete(folder)
            raise error(f"cannot write to {definition.name}: {summary(exc)}; nothing was written") from None
        if not rows:
            self.store.fs.delete(folder)
        actions: list[Action] = [Create(definition)] if create else []
        actions.append(TableData(definition.key, (folder,) if rows else (), rows, time.time()))
        self.catalog.commit(actions)
        return rows


def arrived(old: PartMeta | None, subscript: int, rows: int, slice_text: str, newest: int | None, seconds: float,
            now: float) -> PartMeta:
    """Stream part ``subscript`` after ``rows`` rows arrived in ``slice_text`` (``old``: the part before; None
    if it had no rows), with the stream's newest part ``newest`` before they came: later rows are on time.
    A part that grows keeps the column sets its rows were found to repeat, not those found unique."""
    behind = None if newest is None or subscript > newest else newest - subscript
    if old is not None:     # late rows for a part that has rows: the part grows
        rows_before, behind_before = old.arrival_counts()
        return dataclasses.replace(old, rows=old.rows + rows, folders=old.folders + (slice_text,),
                                   arrivals=old.arrivals + (now,), arrival_rows=rows_before + (rows,),
                                   arrival_behind=behind_before + (behind,), updated=now, unique=())
    how = ClauseKind.INGEST if behind is None else ClauseKind.LATE
    return PartMeta(subscript, rows, (slice_text,), seconds, (), now, how, arrivals=(now,), arrival_rows=(rows,),
                    arrival_behind=(behind,))


def _subscript(definition: ObjectDef) -> Column:
    """The part number of a stream row, from its timestamp."""
    assert definition.timestamp_column is not None      # every stream has one
    return F.expr(subscript_sql(quote_name(definition.timestamp_column), definition.length))


def _reason(exc: BaseException) -> str:
    """Why a batch could not be stored: Spark reports a FAILFAST parse failure as a read error."""
    if "Malformed records are detected" in str(exc):
        return "the file has malformed rows (a field missing or one too many, or a value that cannot be parsed)"
    return summary(exc)


