"""Getting rows in: INSERT, LOAD and ``Warehouse.ingest`` routed to stream parts by timestamp, checked
(lateness, UNIQUE .. PER PART), written and published; appends to dimension tables."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ..catalog.actions import Action, Advance, Create, Part, TableData
from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef, PartMeta
from ..language.tokens import quote_name
from ..maintainer.maintainer import StepReport
from ..maintainer.repair import RepairReport, request_repair
from ..maintainer.retention import Retention
from ..storage.spark_errors import SPARK_ERRORS, summary
from ..session import is_connect_session
from ..storage.parts import PART_COLUMN, PartStore, part_fingerprint
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

    def __str__(self) -> str:
        text = f"{plural(self.rows, 'row')} into {plural(len(self.parts), 'part')} of {self.stream}"
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

    def __init__(self, spark: SparkSession, catalog: Catalog, store: PartStore, retention: Retention) -> None:
        self.spark = spark
        self.catalog = catalog
        self.store = store
        self.retention = retention

    def append_stream(self, definition: ObjectDef, frame: DataFrame, error: ErrorAt) -> IngestReport:
        """Route rows to parts by timestamp and publish the parts; nothing is written on error."""
        report = IngestReport(definition.name)
        if not frame.columns:
            return report
        started = time.perf_counter()
        assert definition.timestamp_column is not None      # every stream has one
        subscript = F.expr(subscript_sql(quote_name(definition.timestamp_column), definition.length))
        persisted = None
        folder = None
        try:
            batch = frame
            if definition.unique or not repeatable(frame):      # the UNIQUE check must see the rows written
                batch = persisted = frame.persist()
            while True:
                counts = self._counts(definition, batch, subscript)
                parts = {row["s"]: row["count"] for row in counts if row["s"] is not None}
                self._validate(definition, counts, parts, error)
                if not parts:
                    return report
                self._check_unique(definition, batch, subscript, counts, error)
                folder = self.store.new_folder(definition)
                written = self.store.write_batch(definition, batch, folder)
                if persisted is not None or written == _fingerprint(counts):
                    break
                # The second read put rows in other parts (now(), a source that changed): redo from a cache.
                self.store.fs.delete(folder)
                folder = None
                batch = persisted = frame.persist()
        except SPARK_ERRORS as exc:
            if folder is not None:
                self.store.fs.delete(folder)
            raise error(f"cannot store the batch for {definition.name}: {_reason(exc)}; nothing was written") \
                from None
        finally:
            if persisted is not None:
                persisted.unpersist()
        seconds = time.perf_counter() - started
        now = time.time()
        state = self.catalog.state(definition.name)
        newest = state.newest
        actions: list[Action] = []
        for s, n in sorted(parts.items()):
            folders = (f"{folder}/{PART_COLUMN}={s}",)
            old = state.parts.get(s)
            if old is not None:     # late rows for a part that has rows: the part grows
                meta = dataclasses.replace(old, rows=old.rows + n, folders=old.folders + folders,
                                           arrivals=old.arrivals + (now,), updated=now)
            else:
                how = "ingest" if newest is None or s > newest else "late"
                meta = PartMeta(s, n, folders, seconds, (), now, how, arrivals=(now,))
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
        ends = [(max(state.parts) + 1) * d.length for d in self.catalog.views()
                for state in [self.catalog.state(d.name)] if state.parts]
        return max(ends, default=-(2 ** 62))

    def _validate(self, definition: ObjectDef, counts: list, parts: dict[int, int], error: ErrorAt) -> None:
        nulls = sum(row["count"] for row in counts if row["s"] is None)
        column = definition.timestamp_column
        if nulls:
            raise error(f"{plural(nulls, 'row')} {agreeing(nulls, 'has', 'have')} a NULL timestamp in column {column}; "
                        "nothing was written")
        if not parts:
            return
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

    @staticmethod
    def _counts(definition: ObjectDef, batch: DataFrame, subscript: Column) -> list:
        """Rows per part (``s``, ``count``) with their ``part_fingerprint`` sums (``hi``, ``lo``); for a
        UNIQUE stream instead, in the same job, how often the most repeated hash of the UNIQUE columns
        occurs in the part (``most``)."""
        if not definition.unique:
            return batch.groupBy(subscript.alias("s")).agg(*part_fingerprint(subscript)) \
                .withColumnRenamed("rows", "count").collect()
        hashed = F.xxhash64(*[F.col(quote_name(c)) for c in definition.unique]).alias("k")
        return batch.groupBy(subscript.alias("s"), hashed).count() \
            .groupBy("s").agg(F.sum("count").alias("count"), F.max("count").alias("most")).collect()

    def _check_unique(self, definition: ObjectDef, batch: DataFrame, subscript: Column, counts: list,
                      error: ErrorAt) -> None:
        """UNIQUE (..) PER PART: no two rows of one part, in the batch or already stored, share the columns.
        Only a repeated hash (see ``_counts``) or late rows need the exact check by value."""
        if not definition.unique:
            return
        state = self.catalog.state(definition.name)
        suspect = [row["s"] for row in counts if row["s"] is not None and row["most"] > 1]
        stored = [row["s"] for row in counts if row["s"] in state.parts]     # late rows join a part with rows
        if not suspect and not stored:
            return
        keys = [F.col(quote_name(c)) for c in definition.unique]
        rows = batch.select(subscript.alias("s"), *keys)
        if stored:
            rows = rows.unionByName(self.store.read_parts(definition, state, stored).select(subscript.alias("s"), *keys))
        twice = rows.groupBy("s", *keys).count().where("count > 1").limit(1).collect()
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


def _fingerprint(counts: list) -> tuple[int, int, int]:
    """``part_fingerprint`` of the counted batch, from its per-part counts."""
    return sum(row["count"] for row in counts), sum(row["hi"] for row in counts), sum(row["lo"] for row in counts)


def repeatable(frame: DataFrame) -> bool:
    """Whether two reads of ``frame`` should give the same rows, so a batch can be counted and checked in
    one job and written in another without caching it in between (the cache costs about as much as the
    write: docs/benchmarks.md). Spark flags plans with nondeterministic expressions (``rand()``, a
    nondeterministic UDF); on Spark Connect the plan is not at hand, so the batch is cached. Spark
    does not flag ``now()`` or a source that changes, so the write compares its rows per part with
    the counted ones and redoes the batch from a cache if they differ."""
    if is_connect_session(frame.sparkSession):
        return False
    return bool(frame._jdf.queryExecution().analyzed().deterministic())


def _reason(exc: BaseException) -> str:
    """Why a batch could not be stored: Spark reports a FAILFAST parse failure as a read error."""
    if "Malformed records are detected" in str(exc):
        return "the file has malformed rows (a field missing or one too many, or a value that cannot be parsed)"
    return summary(exc)


