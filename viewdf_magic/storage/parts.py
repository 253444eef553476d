"""Part data as Parquet folders, written and read by Spark.

Every stored row of a stream or view carries its part's ``PART_TIMESTAMP`` as a physical column and,
since slices (storage/slices.py), its part number in ``__part``: one write stores a run of parts (a
stream batch, a range step) as one folder sorted by part, and a part is a slice of it. A folder is
written under a fresh unique name and only becomes part of the warehouse when the catalog entry that
names it is committed. Row counts and content hashes are observed inside the writing job.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import reduce
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

from pyspark.sql import DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.column import Column
from pyspark.sql.types import LongType, MapType, StructField, StructType, TimestampType

from ..catalog.filesystem import FileSystem
from ..catalog.model import PART_TIMESTAMP, ObjectDef, ObjectState, Slice
from ..language.tokens import backquote
from ..timeparts import subscript_sql
from .counting import DRIVER_COUNT_ROWS, counted_here
from .slices import PART_COLUMN, Scan, Wanted, plan_scans

# A read of at most this many rows runs as one Spark task. A step's aggregation, join or window then needs no
# shuffle, whose map stage adaptive execution runs as a Spark job of its own (at 1,000-row parts a step took two
# jobs). At 100,000, a Nexmark q4 step's join over an 18,000-row part ran on one core and took longer
# (docs/benchmarks.md, "Small reads as one task").
SINGLE_TASK_ROWS = 10_000
FILTER_LIST_PARTS = 64       # a read of more scattered parts than this filters them by a bit mask (part_filter)
MASK_BITS = 63               # parts per BIGINT word of that mask (its sign bit unused)
# Read plans kept by PartStore.read_parts (DataFrames, not data). Building one costs several JVM round trips
# and analyses (a folder listing, a filter, a projection: 60-90 ms on these machines), and a part stepped part
# by part is read by every view over it; a part's folders never change once written, so a plan stays right.
READ_PLANS = 256


def one_task_if_small(frame: DataFrame, rows: int) -> DataFrame:
    """``frame`` (``rows`` rows) as one partition when it holds at most SINGLE_TASK_ROWS rows."""
    return frame.coalesce(1) if rows <= SINGLE_TASK_ROWS else frame


def row_hash(values: list[str], schema: StructType) -> str:
    """SQL for a row's hash over ``values`` (SQL expressions typed by ``schema``); NULL flags keep (NULL, 1)
    apart from (1, NULL).

    The storage layer builds its expressions as SQL text: each Column call is a round trip to the JVM (about
    0.3 ms on these machines), and a step's write built from Columns made hundreds of them."""
    hashed = [f"to_json({v})" if isinstance(f.dataType, MapType) else v for v, f in zip(values, schema.fields)]
    return f"xxhash64({', '.join([*hashed, 'array(' + ', '.join(f'({v}) IS NULL' for v in hashed) + ')'])})"


def hash_sum(hashes: str, where: str | None = None) -> str:
    """SQL for the exact sum of 64-bit ``hashes`` (of the rows ``where`` holds) as a decimal, an aggregate.

    Summed as two longs, the high (signed) and low (unsigned) 32 bits, which is exact below 2**31 rows
    and much cheaper than a decimal sum per row (docs/benchmarks.md); NULL without rows."""
    halves = [f"shiftright({hashes}, 32)", f"(({hashes}) & {0xFFFFFFFF})"]
    high, low = [f"CAST(sum({h if where is None else f'CASE WHEN {where} THEN {h} END'}) AS DECIMAL(38,0))"
                 for h in halves]
    return f"({high} * CAST({1 << 32} AS DECIMAL(38,0)) + {low})"


def content_checksum(schema: StructType) -> Column:
    """An order-independent hash of a part's rows (a sum of row hashes), so a recomputed part can be
    compared with the stored one without reading it back."""
    hashed = row_hash([backquote(f.name) for f in schema.fields], schema)
    return F.expr(f"coalesce({hash_sum(hashed)}, CAST(0 AS DECIMAL(38,0)))")


def checksum_text(rows: int, content: object) -> str:
    """A part's recorded checksum: its row count and ``content_checksum``."""
    return f"{rows}:{content if content is not None else 0}"


EMPTY_CHECKSUM = checksum_text(0, 0)


def _constant(value: int) -> str:
    """SQL for ``value`` as a value that does not enter generated code.

    Spark inlines a primitive literal into the Java it generates, so a plain literal would give every
    part new code and a stage compile (about 0.1-0.2 s per step at 1M rows; docs/benchmarks.md). An
    array literal is passed to the code as an object instead, and the non-foldable index keeps constant
    folding from turning it back into a primitive."""
    return f"element_at(array({value}), 1 + 0 * spark_partition_id())"


def part_stamp_sql(seconds: int) -> str:
    """SQL for a part's PART_TIMESTAMP (its start, epoch ``seconds``) that does not enter generated code."""
    return f"timestamp_seconds({_constant(seconds)})"


def part_stamp(seconds: int) -> Column:
    """``part_stamp_sql`` as a column."""
    return F.expr(part_stamp_sql(seconds))


def stored_schema(definition: ObjectDef) -> StructType:
    """The physical schema: the logical one plus PART_TIMESTAMP for partitioned objects."""
    schema = definition.schema
    if definition.partitioned:
        schema = StructType(schema.fields + [StructField(PART_TIMESTAMP, TimestampType(), True)])
    return schema


def _counted(values: Mapping[str, Any] | Row, embedded: Embedded) -> dict[str | None, Counted]:
    """What ``_part_metrics`` found (``values``: observed, or one part's aggregated row) of the part itself (key
    None) and of each embedded view."""
    counted: dict[str | None, Counted] = {None: Counted(int(values["rows"]), checksum_text(values["rows"], values["checksum"]))}
    counted.update(_embedded_counted(values, embedded))
    return counted


def _embedded_counted(values: Mapping[str, Any] | Row, embedded: Embedded) -> dict[str | None, Counted]:
    """What ``_embedded_metrics`` or ``_stored_hash_metrics`` found of each embedded view."""
    return {column: Counted(int(values[f"rows{n}"]), checksum_text(values[f"rows{n}"], values[f"checksum{n}"]))
            for n, (column, _) in enumerate(embedded)}


def _key(embedded: Embedded) -> tuple:
    return tuple((column, schema.json()) for column, schema in embedded)


@dataclass(frozen=True)
class Counted:
    """What one write stored of one part: its rows and checksum (0 rows: nothing of it was stored)."""

    rows: int
    checksum: str


Embedded = tuple[tuple[str, StructType], ...]      # (struct column, the embedded view's schema)
HASH_COLUMN = "__hash"       # a run's stored row hashes: of the part's own row; ``<struct column>__hash`` of its rows


def part_filter(parts: list[int]) -> str:
    """A SQL condition true exactly for rows whose PART_COLUMN is one of ``parts`` (sorted): a range when they
    are consecutive, a list when they are few, else a bit mask of the range's parts (a list of thousands of
    literals costs Spark a fifth of a second to parse each time a plan holding it is analysed, and filters
    slower). One SQL expression, not a Column per part: thousands of parts would be thousands of JVM calls."""
    first, last = parts[0], parts[-1]
    within = f"({PART_COLUMN} >= {first}) AND ({PART_COLUMN} <= {last})"
    if last - first + 1 == len(parts):
        return within
    if len(parts) <= FILTER_LIST_PARTS:
        return f"{PART_COLUMN} IN ({', '.join(map(str, parts))})"
    words = [0] * ((last - first) // MASK_BITS + 1)
    for part in parts:
        words[(part - first) // MASK_BITS] |= 1 << ((part - first) % MASK_BITS)
    offset = f"({PART_COLUMN} - {first})"
    return (f"CASE WHEN {within} THEN shiftright(element_at(array({', '.join(map(str, words))}), "       # in range
            f"CAST({offset} DIV {MASK_BITS} AS INT) + 1), CAST({offset} % {MASK_BITS} AS INT)) & 1 = 1 ELSE false END")


class PartStore:
    """Reads and writes part folders; can keep the most recently written parts in memory
    (``cache_size``, off by default: see docs/benchmarks.md)."""

    def __init__(self, spark: SparkSession, fs: FileSystem, cache_size: int = 0) -> None:
        self.spark = spark
        self.fs = fs
        self.cache: OrderedDict[tuple[str, int], DataFrame] = OrderedDict()
        self.cache_size = cache_size
        # Built once per schema: each Column is a py4j call, and they add up to tens of ms per step
        self._metrics: dict[tuple, list[Column]] = {}
        self._empties: dict[str, DataFrame] = {}
        self._plans: OrderedDict[tuple, DataFrame] = OrderedDict()     # read_parts' plans, by folders read
        self._plans_lock = threading.Lock()                            # concurrent steps read in threads

    # -- reading -------------------------------------------------------------------------
    def empty(self, definition: ObjectDef) -> DataFrame:
        """No rows, with the stored columns; Spark plans it as an empty local scan (no RDD)."""
        schema = stored_schema(definition)
        key = schema.json()
        if key not in self._empties:
            self._empties[key] = self.spark.range(0).select(
                [F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields]).where(F.lit(False))
        return self._empties[key]

    @staticmethod
    def with_rows(state: ObjectState, subscripts: list[int]) -> list[int]:
        """The given parts that have rows (missing and empty parts have no folders)."""
        return [s for s in subscripts if s in state.parts and state.parts[s].folders]

    def read_parts(self, definition: ObjectDef, state: ObjectState, subscripts: list[int]) -> DataFrame:
        """The union of the given parts; missing or empty parts contribute nothing."""
        wanted = self.with_rows(state, subscripts)
        if len(wanted) == 1 and (definition.id, wanted[0]) in self.cache:
            self.cache.move_to_end((definition.id, wanted[0]))
            return self.cache[(definition.id, wanted[0])]
        if not wanted:
            return self.empty(definition)
        key = (definition.id, stored_schema(definition).json(), tuple((s, state.parts[s].folders) for s in wanted))
        with self._plans_lock:
            if key in self._plans:
                self._plans.move_to_end(key)
                return self._plans[key]
        frame = one_task_if_small(self.read_slices(definition, [Wanted(Slice.parse(text), s) for s in wanted
                                                                for text in state.parts[s].folders]),
                                  sum(state.parts[s].rows for s in wanted))
        with self._plans_lock:
            self._plans[key] = frame
            while len(self._plans) > READ_PLANS:
                self._plans.popitem(last=False)
        return frame

    def forget_plans(self) -> None:
        """Drop the kept read plans: each holds the file listing it was made with (VERIFY reads the files as they
        are now; another process's commit may have replaced parts)."""
        with self._plans_lock:
            self._plans.clear()

    def read_slices(self, definition: ObjectDef, wanted: list[Wanted]) -> DataFrame:
        """The rows of the given slices, each stamped as the part it is read for."""
        if not wanted:
            return self.empty(definition)
        return reduce(DataFrame.union, [self._scan(definition, scan) for scan in plan_scans(wanted)])

    def _scan(self, definition: ObjectDef, scan: Scan) -> DataFrame:
        """One scan's rows with the stored columns, each stamped as the part it is read for."""
        stored = stored_schema(definition)
        part = [StructField(PART_COLUMN, LongType(), True)] if scan.targets is not None else []
        uris = [self.fs.uri(f) for f in scan.folders]
        if scan.loaded:
            frame = self._loaded(definition, uris)
        else:
            schema = StructType(stored.fields + part if scan.column is None else
                                [StructField(scan.column, definition.schema, True), stored.fields[-1]] + part)
            frame = self.spark.read.schema(schema).parquet(*uris)
        if scan.column is not None:
            embedded = backquote(scan.column)
            frame = frame.where(f"{embedded} IS NOT NULL").selectExpr(
                *[f"{embedded}.{backquote(f.name)} AS {backquote(f.name)}" for f in definition.schema.fields],
                PART_TIMESTAMP, *[f.name for f in part])
        if scan.targets is None:
            return frame
        if scan.whole and not scan.restamped:
            # no filter: a filter's part numbers are literals in the code Spark generates, so every step
            # would compile new code (50-100 ms at 1M rows; docs/benchmarks.md)
            return frame.drop(PART_COLUMN)
        sources = sorted(scan.targets)
        frame = frame.where(part_filter(sources))
        if scan.restamped:
            targets = (f"CAST(map_from_arrays(array({', '.join(map(str, sources))}), array("
                       + ", ".join(f"array({', '.join(map(str, scan.targets[s]))})" for s in sources)
                       + ")) AS MAP<BIGINT, ARRAY<BIGINT>>)")
            frame = self.stamp_run(definition, frame.withColumn(
                PART_COLUMN, F.expr(f"explode(element_at({targets}, {PART_COLUMN}))")))
        return frame.drop(PART_COLUMN)

    def _loaded(self, definition: ObjectDef, uris: list[str]) -> DataFrame:
        """Loaded files' rows (the stream's columns only) with PART_TIMESTAMP and ``__part`` computed from each
        row's timestamp, as a stream batch's write stores them."""
        assert definition.timestamp_column is not None       # only streams load files
        part = subscript_sql(backquote(definition.timestamp_column), definition.length)
        return self.spark.read.schema(definition.schema).parquet(*uris).selectExpr(
            *[backquote(f.name) for f in definition.schema.fields],
            f"timestamp_seconds({part} * {definition.length}) AS {PART_TIMESTAMP}", f"{part} AS {PART_COLUMN}")

    def read_table(self, definition: ObjectDef, state: ObjectState) -> DataFrame:
        if not state.table_folders:
            return self.empty(definition)
        return one_task_if_small(self.spark.read.schema(stored_schema(definition)).parquet(
            *[self.fs.uri(f) for f in state.table_folders]), state.table_rows)

    # -- writing -------------------------------------------------------------------------
    def new_folder(self, definition: ObjectDef) -> str:
        return f"data/{definition.id}/{uuid.uuid4().hex}"

    @contextmanager
    def _deleted_on_failure(self, folder: str) -> Iterator[None]:
        """Delete ``folder`` when the write into it fails or is cancelled (an interrupt): what the write
        left there is named by nothing."""
        try:
            yield
        except BaseException:
            self.fs.delete(folder)
            raise

    def discard(self, folder: str) -> None:
        """Delete a folder that nothing names, and its object's folder when that holds nothing else (the
        write of a refused first batch leaves no trace)."""
        self.fs.delete(folder)
        owner = folder.rsplit("/", 1)[0]
        if not self.fs.list(owner):
            self.fs.delete(owner)

    @staticmethod
    def stamp_columns(definition: ObjectDef, subscript: int) -> str:
        """SQL select items for a part's PART_TIMESTAMP and part number, to add after the view's columns (in the
        query's own SELECT: a DataFrame's withColumns would be one more analysis of the whole query)."""
        return (f"{part_stamp_sql(subscript * definition.length)} AS {backquote(PART_TIMESTAMP)}, "
                f"CAST({_constant(subscript)} AS BIGINT) AS {backquote(PART_COLUMN)}")

    @staticmethod
    def stamp_run(definition: ObjectDef, frame: DataFrame) -> DataFrame:
        """``frame`` (the view's columns and each row's part in ``__part``) with PART_TIMESTAMP."""
        return frame.withColumn(PART_TIMESTAMP, F.expr(f"timestamp_seconds({PART_COLUMN} * {definition.length})"))

    def _built(self, key: tuple, build: Callable[[], list[Column]]) -> list[Column]:
        """``build()``'s columns, built once per ``key`` (a schema's)."""
        if key not in self._metrics:
            self._metrics[key] = build()
        return self._metrics[key]

    @staticmethod
    def _embedded_hash(column: str, schema: StructType) -> tuple[str, str]:
        """SQL for whether a row holds the embedded view's row, and for that row's hash (as ``content_checksum``
        hashes it)."""
        struct = backquote(column)
        return f"{struct} IS NOT NULL", row_hash([f"{struct}.{backquote(f.name)}" for f in schema.fields], schema)

    def _write_metrics(self, definition: ObjectDef, embedded: Embedded) -> list[Column]:
        """``_part_metrics`` of ``definition``'s schema, built once per schema."""
        return self._built(("part", definition.schema.json(), _key(embedded)),
                           lambda: self._part_metrics(definition.schema, embedded))

    def _part_metrics(self, schema: StructType, embedded: Embedded) -> list[Column]:
        """What ``write_part`` observes: rows and checksum of the part and of each embedded view."""
        return [F.expr("count(1) AS rows"), content_checksum(schema).alias("checksum"), *self._embedded_metrics(embedded)]

    def _with_hashes(self, schema: StructType | None, frame: DataFrame, embedded: Embedded) -> DataFrame:
        """``frame`` with each row's hash (as ``content_checksum`` hashes it) of the part's own row (``schema``'s
        columns; none without it) and of each embedded view's row (NULL where the row holds none): a run's
        parts are then counted and hashed from these columns alone, not from every column read back."""
        hashes = {} if schema is None else {HASH_COLUMN: row_hash([backquote(f.name) for f in schema.fields], schema)}
        for column, inner in embedded:
            present, hashed = self._embedded_hash(column, inner)
            hashes[column + HASH_COLUMN] = f"CASE WHEN {present} THEN {hashed} END"
        return frame.withColumns({name: F.expr(sql) for name, sql in hashes.items()})

    def _by_part(self, folder: str, rows: int, own: bool, embedded: Embedded) -> Sequence[Mapping[str, Any] | Row]:
        """Each part of a written run (``rows`` rows): its rows, and from its stored hashes (``_with_hashes``) its
        checksum (``own``) and each embedded view's rows and checksum; one job reading the part numbers and the
        hashes, or none for a small run that this process reads itself (storage/counting.py)."""
        if rows <= DRIVER_COUNT_ROWS:
            found = counted_here(self.fs.uri(folder), HASH_COLUMN if own else None,
                                 [column + HASH_COLUMN for column, _ in embedded])
            if found is not None:
                return found
        names = ([HASH_COLUMN] if own else []) + [column + HASH_COLUMN for column, _ in embedded]
        schema = StructType([StructField(PART_COLUMN, LongType(), True)]
                            + [StructField(name, LongType(), True) for name in names])
        metrics = ["count(1) AS rows"]
        if own:
            metrics.append(f"coalesce({hash_sum(backquote(HASH_COLUMN))}, CAST(0 AS DECIMAL(38,0))) AS checksum")
        metrics += self._stored_hash_metrics(embedded)
        return one_task_if_small(self.spark.read.schema(schema).parquet(self.fs.uri(folder)), rows) \
            .groupBy(PART_COLUMN).agg(*[F.expr(metric) for metric in metrics]).collect()

    @staticmethod
    def _stored_hash_metrics(embedded: Embedded) -> list[str]:
        """SQL for the rows and checksum of each embedded view (``rows0``, ``checksum0``, ...) summed from its
        stored hash column (``_with_hashes``)."""
        metrics = []
        for n, (column, _) in enumerate(embedded):
            hashed = backquote(column + HASH_COLUMN)
            metrics += [f"count({hashed}) AS rows{n}", f"{hash_sum(hashed)} AS checksum{n}"]
        return metrics

    def _embedded_metrics(self, embedded: Embedded) -> list[Column]:
        """Rows and checksum of each embedded view (``rows0``, ``checksum0``, ...)."""
        metrics = []
        for n, (column, inner) in enumerate(embedded):
            present, hashed = self._embedded_hash(column, inner)
            metrics += [F.expr(f"count(CASE WHEN {present} THEN 1 END) AS rows{n}"),
                        F.expr(f"{hash_sum(hashed, present)} AS checksum{n}")]
        return metrics

    def write_part(self, definition: ObjectDef, subscript: int, stamped: DataFrame, embedded: Embedded = ()
                   ) -> tuple[str, dict[str | None, Counted]]:
        """Write one view part (``stamped``: the view's columns, ``stamp``ed, then any ``embedded`` struct
        columns) in one Spark job; returns the folder ("" when nothing has rows) and what it holds of the
        part itself (key None) and of each embedded view.

        With caching on, the part is computed into executor memory (a lazy local checkpoint, filled by
        the write job itself) and kept for the next steps that read it."""
        folder = self.new_folder(definition)
        if self.cache_size:
            stamped = stamped.localCheckpoint(eager=False)
        observed = Observation()
        with self._deleted_on_failure(folder):
            stamped.observe(observed, *self._write_metrics(definition, embedded)).write.parquet(self.fs.uri(folder))
        counted = _counted(observed.get, embedded)
        if counted[None].rows == 0:
            self.fs.delete(folder)
            return "", counted
        if self.cache_size:
            self.cache[(definition.id, subscript)] = stamped.drop(PART_COLUMN, *[c for c, _ in embedded])
            while len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        return folder, counted

    def write_range(self, definition: ObjectDef, stamped: DataFrame, embedded: Embedded = ()
                    ) -> tuple[str, dict[int, dict[str | None, Counted]]]:
        """Write a run of view parts (``stamped``: the view's columns, each row's part in ``__part``,
        ``stamp_run``ed, then any ``embedded`` struct columns) into one folder sorted by part, then count and
        hash every part from what was written. Returns the folder ("" when no part has rows) and, for each
        part with rows, what it holds of the part itself (key None) and of each embedded view.

        Two jobs: the write (no shuffle), which stores each row's hashes and counts the rows, and an aggregation
        per part of the written part numbers and hashes (none when nothing was written). Counting each part in
        the writing job needs the rows grouped by part first, a shuffle of every row that cost more than reading
        the folder back (docs/benchmarks.md, "Range writes")."""
        folder = self.new_folder(definition)
        written = Observation()
        with self._deleted_on_failure(folder):
            self._with_hashes(definition.schema, stamped, embedded).sortWithinPartitions(PART_COLUMN) \
                .observe(written, F.expr("count(1) AS rows")).write.parquet(self.fs.uri(folder))
            rows = int(written.get["rows"])
            if not rows:
                self.fs.delete(folder)
                return "", {}
            return folder, {int(row[PART_COLUMN]): _counted(row, embedded)
                            for row in self._by_part(folder, rows, True, embedded)}

    def forget(self, definition: ObjectDef) -> None:
        for key in [k for k in self.cache if k[0] == definition.id]:
            del self.cache[key]

    def write_batch(self, definition: ObjectDef, frame: DataFrame, folder: str,
                    embed: Callable[[DataFrame], tuple[DataFrame, Embedded]] | None = None) -> "Batch":
        """Write a stream batch into ``folder`` sorted by part, in one Spark job; returns its row count, the
        rows without a timestamp, and its first and last part (the counting of each part is left to
        ``part_counts``, needed only when it spans several). ``embed`` adds struct columns to the rows
        (stamped with their part): views written with the batch, counted and hashed in the same job."""
        length = definition.length
        assert definition.timestamp_column is not None      # every stream has one
        number = subscript_sql(backquote(definition.timestamp_column), length)
        out = frame.withColumns({PART_TIMESTAMP: F.expr(f"timestamp_seconds({number} * {length})"),
                                 PART_COLUMN: F.expr(number)})
        embedded: Embedded = ()
        if embed is not None:
            out, embedded = embed(out)
            out = self._with_hashes(None, out, embedded)
        observed = Observation()
        out.sortWithinPartitions(PART_COLUMN).observe(observed, *[F.expr(metric) for metric in (
            "count(1) AS rows", f"count(CASE WHEN {number} IS NULL THEN 1 END) AS nulls", f"min({number}) AS first",
            f"max({number}) AS last", *self._stored_hash_metrics(embedded))]).write.parquet(self.fs.uri(folder))
        got = observed.get
        return Batch(int(got["rows"]), int(got["nulls"]), got["first"], got["last"], embedded,
                     _embedded_counted(got, embedded))

    def batch_columns(self, definition: ObjectDef, folder: str, columns: list[str]) -> DataFrame:
        """Some columns of a written stream batch with each row's part number (PART_COLUMN), read directly."""
        fields = {f.name: f for f in stored_schema(definition).fields}
        schema = StructType([fields[c] for c in columns] + [StructField(PART_COLUMN, LongType(), True)])
        return self.spark.read.schema(schema).parquet(self.fs.uri(folder))

    def part_counts(self, folder: str, rows: int, embedded: Embedded = ()
                    ) -> tuple[dict[int, int], dict[int, dict[str | None, Counted]]]:
        """Rows per part of a written stream batch (``rows`` rows), and what each part holds of each ``embedded``
        view (one Spark job reading only the part numbers and the views' stored hashes)."""
        counted = self._by_part(folder, rows, False, embedded)
        return ({int(row[PART_COLUMN]): int(row["rows"]) for row in counted},
                {int(row[PART_COLUMN]): _embedded_counted(row, embedded) for row in counted})

    def write_table(self, definition: ObjectDef, frame: DataFrame, folder: str) -> int:
        """Write dimension-table rows into ``folder``; returns the row count."""
        counted = Observation()
        frame.observe(counted, F.count(F.lit(1)).alias("rows")).write.parquet(self.fs.uri(folder))
        return int(counted.get["rows"])

    def delete_object(self, definition: ObjectDef) -> None:
        self.forget(definition)
        self.fs.delete(f"data/{definition.id}")


@dataclass(frozen=True)
class Batch:
    """What the write of a stream batch observed."""

    rows: int
    nulls: int                     # rows whose timestamp is NULL
    first: int | None              # its first and last part (None without rows)
    last: int | None
    embedded: Embedded = ()        # the views written with it (struct columns)
    counted: dict[str | None, Counted] = field(default_factory=dict)     # of each, over the whole batch
