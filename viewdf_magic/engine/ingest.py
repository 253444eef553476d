"""Getting rows in: INSERT, LOAD and ``Warehouse.ingest`` routed to stream parts by timestamp, checked
(lateness, UNIQUE .. PER PART), written and published; appends to dimension tables."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ..catalog.actions import Action, Advance, Create, Part, TableData
from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef, PartMeta, Slice
from ..language.statements import ClauseKind
from ..language.tokens import quote_name
from ..maintainer.maintainer import StepReport
from ..maintainer.repair import RepairReport, request_repair
from ..maintainer.retention import Retention
from ..storage.spark_errors import SPARK_ERRORS, summary
from ..storage.parts import PartStore
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
    source: str = ""           # where the rows came from, said after where they went (" from 1 new file")

    def __str__(self) -> str:
        text = f"{plural(self.rows, 'row')} into {plural(len(self.parts), 'part')} of {self.stream}{self.source}"
        if self.late:
            text += f" ({plural(self.late_rows, 'late row')} into {plural(len(self.late), 'earlier part')})"
        if self.sealed:
            text += f", {plural(self.sealed, 'empty part')} sealed"
        if self.repair is not None:
            text += f"; late data: {self.repair}"
        computed = sum(1 for step in self.steps if not step.repair)
        if computed:
            text += f"; {plural(computed, 'view part')} computed"
        for failure in self.failures:
            text += f"; {failure}"
        return text


class Ingester:
    """Writes batches into stream parts and dimension tables."""

    def __init__(self, spark: SparkSession, catalog: Catalog, store: PartStore, retention: Retention,
                 key_sets: Callable[[ObjectDef], list[tuple[str, ...]]]) -> None:
        self.spark = spark
        self.catalog = catalog
        self.store = store
        self.retention = retention
        self.key_sets = key_sets          # the column sets whose uniqueness per part views ask of a stream

    def append_stream(self, definition: ObjectDef, frame: DataFrame, error: ErrorAt) -> IngestReport:
        """Route rows to parts by timestamp and publish the parts; nothing is published on error.

        One Spark job writes the batch (one folder, sorted by part) and observes its row count, its rows
        without a timestamp and its first and last part; the checks run on what was written, and a
        refused batch's folder is deleted before anything names it. Only a batch spanning several parts
        counts them in a second job (reading the written part numbers); a UNIQUE stream's declaration
        and the uniqueness facts views ask for (``UPDATE .. WHEN X[j] IS UNIQUE``) are checked in one job
        over the written keys' hashes."""
        report = IngestReport(definition.name)
        if not frame.columns:
            return report
        started = time.perf_counter()
        folder = self.store.new_folder(definition)
        try:
            try:
                batch = self.store.write_batch(definition, frame, folder)
                self._validate_nulls(definition, batch.nulls, error)
                if batch.rows == 0:
                    self.store.discard(folder)
                    return report
                assert batch.first is not None and batch.last is not None     # it has rows
                parts = {batch.first: batch.rows} if batch.first == batch.last else self.store.part_counts(folder)
                self._validate(definition, parts, error)
                written = [Wanted(Slice(folder, s, batch.first, batch.last), s) for s in parts]
                facts = self._check_keys(definition, folder, written, parts, error)
            except SPARK_ERRORS as exc:
                raise error(f"cannot store the batch for {definition.name}: {_reason(exc)}; nothing was written") \
                    from None
        except BaseException:
            self.store.discard(folder)
            raise
        seconds = time.perf_counter() - started
        now = time.time()
        state = self.catalog.state(definition.name)
        newest = state.newest
        actions: list[Action] = []
        for s, n in sorted(parts.items()):
            folders = (Slice(folder, s, batch.first, batch.last).text,)
            old = state.parts.get(s)
            behind = None if newest is None or s > newest else newest - s
            if old is not None:     # late rows for a part that has rows: the part grows
                rows_before, behind_before = old.arrival_counts()
                meta = dataclasses.replace(old, rows=old.rows + n, folders=old.folders + folders,
                                           arrivals=old.arrivals + (now,), arrival_rows=rows_before + (n,),
                                           arrival_behind=behind_before + (behind,), updated=now,
                                           unique=facts.get(s, ()))
            else:
                how = ClauseKind.INGEST if behind is None else ClauseKind.LATE
                meta = PartMeta(s, n, folders, seconds, (), now, how, arrivals=(now,), arrival_rows=(n,),
                                arrival_behind=(behind,), unique=facts.get(s, ()))
            actions.append(Part(definition.key, meta))
        through = max(parts)
        actions.append(Advance(definition.key, through, now))
        begin = min(parts) if newest is None else newest + 1
        if min(parts) * definition.length < self._computed_until():
            actions.append(request_repair(self.catalog.settings, min(parts) * definition.length,
                                          self.catalog.version + 1))
        self.catalog.commit(actions)
        report.rows = sum(parts.values())
        report.parts = sorted(parts)
        report.late = [s for s in report.parts if newest is not None and s <= newest]
        report.late_rows = sum(parts[s] for s in report.late)
        report.sealed = max(0, through - begin + 1 - (len(parts) - len(report.late)))
        return report

    def _computed_until(self) -> int:
        """End (epoch seconds) of the newest view part: rows before it may change computed parts."""
        ends = [(newest + 1) * d.length for d in self.catalog.views()
                for newest in [self.catalog.state(d.name).newest_part()] if newest is not None]
        return max(ends, default=-(2 ** 62))

    @staticmethod
    def _validate_nulls(definition: ObjectDef, nulls: int, error: ErrorAt) -> None:
        if nulls:
            raise error(f"{plural(nulls, 'row')} {agreeing(nulls, 'has', 'have')} a NULL timestamp in column "
                        f"{definition.timestamp_column}; nothing was written")

    def _validate(self, definition: ObjectDef, parts: dict[int, int], error: ErrorAt) -> None:
        length = definition.length
        state = self.catalog.state(definition.name)
        newest, first = state.newest, state.first
        if state.lateness is not None and newest is not None:    # late: for a part already sealed
            too_late = sorted(s for s in parts if newest - s > state.lateness)
            if too_late:
                late_rows = sum(parts[s] for s in too_late)
                raise error(f"{plural(late_rows, 'row')} {agreeing(late_rows, 'is', 'are')} more than ALLOWED LATENESS "
                            f"{state.lateness} PARTS behind the newest part of {definition.name} "
                            f"({format_part(newest, length)}); the oldest is for {format_part(too_late[0], length)}. "
                            f"Nothing was written")
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

    def _check_keys(self, definition: ObjectDef, folder: str, written: list[Wanted], counts: dict[int, int],
                    error: ErrorAt) -> dict[int, tuple[tuple[str, ...], ...]]:
        """Check the stream's UNIQUE (..) PER PART and find, for each written part, the column sets views
        ask of it that no two of its rows share (the part's facts)."""
        declared = (tuple(c.lower() for c in definition.unique),) if definition.unique else ()
        asked = [*declared, *self.key_sets(definition)]
        repeats = self._repeats(definition, folder, counts, asked)
        if declared and any(k == 0 for _, k in repeats):
            self._check_unique(definition, written, error)      # the values, unless two hashes collided
        return {w.target: tuple(keys for k, keys in enumerate(asked) if k >= len(declared) and (w.target, k) not in repeats)
                for w in written}

    def _repeats(self, definition: ObjectDef, folder: str, counts: dict[int, int],
                 key_sets: list[tuple[str, ...]]) -> set[tuple[int, int]]:
        """(part, index into ``key_sets``) for every part the batch in ``folder`` wrote (``counts``: its
        rows there) where two rows (stored ones included) have the same 64-bit hash of the set's columns,
        from one Spark job: a collision can only report a repeat that is not there, never miss one.
        Parts of one new row need no job."""
        stored = self.catalog.state(definition.name).parts
        if not key_sets or all(n <= 1 and s not in stored for s, n in counts.items()):
            return set()
        spelled = {f.name.lower(): f.name for f in definition.schema.fields}
        columns = sorted({spelled[c] for keys in key_sets for c in keys})
        hashes = [F.xxhash64(*[F.col(quote_name(spelled[c])) for c in keys]) for keys in key_sets]
        rows = self.store.batch_columns(definition, folder, columns)
        late = [s for s in counts if s in stored]
        if late:
            old = self.store.read_parts(definition, self.catalog.state(definition.name), late)
            rows = rows.unionByName(old.select(*[quote_name(c) for c in columns],
                                               _subscript(definition).alias(PART_COLUMN)))
        keyed = rows.select(PART_COLUMN, F.lit(0).alias("k"), hashes[0].alias("h")) if len(hashes) == 1 else \
            rows.select(PART_COLUMN, F.posexplode(F.array(*hashes)).alias("k", "h"))
        repeated = keyed.groupBy(PART_COLUMN, "k", "h").count().where("count > 1").select(PART_COLUMN, "k") \
            .distinct().collect()
        return {(int(row[PART_COLUMN]), int(row["k"])) for row in repeated}

    def _check_unique(self, definition: ObjectDef, written: list[Wanted], error: ErrorAt) -> None:
        """UNIQUE (..) PER PART, exactly: no two rows of one part, in the batch or already stored, share the
        columns; the error names the part and the values."""
        keys = [F.col(quote_name(c)) for c in definition.unique]
        twice = self._part_rows(definition, written).groupBy(_subscript(definition).alias("s"), *keys).count() \
            .where("count > 1").limit(1).collect()
        if twice:
            row = twice[0]
            columns = ", ".join(definition.unique)
            values = ", ".join("NULL" if row[c] is None else repr(row[c]) for c in definition.unique)
            raise error(f"{row['count']} rows of part {format_part(row['s'], definition.length)} have "
                        f"({columns}) = ({values}), but {definition.name} is {definition.unique_clause}; "
                        f"nothing was written")

    def _part_rows(self, definition: ObjectDef, written: list[Wanted]) -> DataFrame:
        """The rows of the parts a batch wrote: the batch's, and those stored before (late rows)."""
        state = self.catalog.state(definition.name)
        stored = [s for s in (w.target for w in written) if s in state.parts]   # late rows join a part with rows
        rows = self.store.read_slices(definition, written)
        return rows.unionByName(self.store.read_parts(definition, state, stored)) if stored else rows

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


def _subscript(definition: ObjectDef) -> Column:
    """The part number of a stream row, from its timestamp."""
    assert definition.timestamp_column is not None      # every stream has one
    return F.expr(subscript_sql(quote_name(definition.timestamp_column), definition.length))


def _reason(exc: BaseException) -> str:
    """Why a batch could not be stored: Spark reports a FAILFAST parse failure as a read error."""
    if "Malformed records are detected" in str(exc):
        return "the file has malformed rows (a field missing or one too many, or a value that cannot be parsed)"
    return summary(exc)


