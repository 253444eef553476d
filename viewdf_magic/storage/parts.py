"""Part data as Parquet folders, written and read by Spark.

Every stored row of a stream or view carries its part's ``PART_TIMESTAMP`` as a physical column and,
since slices (storage/slices.py), its part number in ``__part``: one write stores a run of parts (a
stream batch, a range step) as one folder sorted by part, and a part is a slice of it. A folder is
written under a fresh unique name and only becomes part of the warehouse when the catalog entry that
names it is committed. Row counts and content hashes are observed inside the writing job.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, Observation, SparkSession, Window, WindowSpec
from pyspark.sql import functions as F
from pyspark.sql.column import Column
from pyspark.sql.types import LongType, MapType, StructField, StructType, TimestampType

from ..catalog.filesystem import FileSystem
from ..catalog.model import PART_TIMESTAMP, ObjectDef, ObjectState, Slice
from ..language.tokens import quote_name
from ..timeparts import subscript_sql
from .slices import PART_COLUMN, Scan, Wanted, plan_scans

def row_hash(columns: list[Column], schema: StructType) -> Column:
    """A row's hash over ``columns`` (typed by ``schema``); NULL flags keep (NULL, 1) apart from (1, NULL)."""
    values = [F.to_json(c) if isinstance(f.dataType, MapType) else c for c, f in zip(columns, schema.fields)]
    return F.xxhash64(*values, F.array(*[c.isNull() for c in values]))


def hash_sum(hashes: Column, where: Column | None = None, over: WindowSpec | None = None) -> Column:
    """The exact sum of 64-bit ``hashes`` (of the rows ``where`` holds; per ``over`` window) as a decimal.

    Summed as two longs, the high (signed) and low (unsigned) 32 bits, which is exact below 2**31 rows
    and much cheaper than a decimal sum per row (docs/benchmarks.md); NULL without rows."""
    halves = [F.shiftright(hashes, 32), hashes.bitwiseAND(F.lit(0xFFFFFFFF))]
    sums = [F.sum(h if where is None else F.when(where, h)) for h in halves]
    high, low = [(s if over is None else s.over(over)).cast("decimal(38,0)") for s in sums]
    return high * F.lit(1 << 32).cast("decimal(38,0)") + low


def content_checksum(schema: StructType) -> Column:
    """An order-independent hash of a part's rows (a sum of row hashes), so a recomputed part can be
    compared with the stored one without reading it back."""
    hashed = row_hash([F.col(quote_name(f.name)) for f in schema.fields], schema)
    return F.coalesce(hash_sum(hashed), F.lit(0).cast("decimal(38,0)"))


def checksum_text(rows: int, content: object) -> str:
    """A part's recorded checksum: its row count and ``content_checksum``."""
    return f"{rows}:{content if content is not None else 0}"


EMPTY_CHECKSUM = checksum_text(0, 0)


def _constant(value: int) -> Column:
    """``value`` as a column whose value does not enter generated code.

    Spark inlines a primitive literal into the Java it generates, so a plain ``lit`` would give every
    part new code and a stage compile (about 0.1-0.2 s per step at 1M rows; docs/benchmarks.md). An
    array literal is passed to the code as an object instead, and the non-foldable index keeps constant
    folding from turning it back into a primitive."""
    index = F.lit(1) + F.lit(0) * F.spark_partition_id()
    return F.element_at(F.array(F.lit(value)), index)


def part_stamp(seconds: int) -> Column:
    """A part's PART_TIMESTAMP (its start, epoch ``seconds``) as a column that does not enter generated code."""
    return F.timestamp_seconds(_constant(seconds))


def stored_schema(definition: ObjectDef) -> StructType:
    """The physical schema: the logical one plus PART_TIMESTAMP for partitioned objects."""
    schema = definition.schema
    if definition.partitioned:
        schema = StructType(schema.fields + [StructField(PART_TIMESTAMP, TimestampType(), True)])
    return schema


@dataclass(frozen=True)
class Counted:
    """What one write stored of one part: its rows and checksum (0 rows: nothing of it was stored)."""

    rows: int
    checksum: str


Embedded = tuple[tuple[str, StructType], ...]      # (struct column, the embedded view's schema)


class PartStore:
    """Reads and writes part folders; can keep the most recently written parts in memory
    (``cache_size``, off by default: see docs/benchmarks.md)."""

    def __init__(self, spark: SparkSession, fs: FileSystem, cache_size: int = 0) -> None:
        self.spark = spark
        self.fs = fs
        self.cache: OrderedDict[tuple[str, int], DataFrame] = OrderedDict()
        self.cache_size = cache_size
        # Built once per schema: each costs dozens of py4j calls, which add up to 20-30 ms per step
        self._checksums: dict[str, Column] = {}
        self._empties: dict[str, DataFrame] = {}

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
        return self.read_slices(definition, [Wanted(Slice.parse(text), s) for s in wanted
                                             for text in state.parts[s].folders])

    def read_slices(self, definition: ObjectDef, wanted: list[Wanted]) -> DataFrame:
        """The rows of the given slices, each stamped as the part it is read for."""
        if not wanted:
            return self.empty(definition)
        return reduce(DataFrame.union, [self._scan(definition, scan) for scan in plan_scans(wanted)])

    def _scan(self, definition: ObjectDef, scan: Scan) -> DataFrame:
        """One scan's rows with the stored columns, each stamped as the part it is read for."""
        stored = stored_schema(definition)
        part = [StructField(PART_COLUMN, LongType(), True)] if scan.targets is not None else []
        if scan.column is None:
            schema = StructType(stored.fields + part)
        else:
            timestamp = stored.fields[-1]
            schema = StructType([StructField(scan.column, definition.schema, True), timestamp] + part)
        frame = self.spark.read.schema(schema).parquet(*[self.fs.uri(f) for f in scan.folders])
        if scan.column is not None:
            embedded = F.col(quote_name(scan.column))
            frame = frame.where(embedded.isNotNull()).select(
                *[embedded.getField(f.name).alias(f.name) for f in definition.schema.fields],
                PART_TIMESTAMP, *[f.name for f in part])
        if scan.targets is None:
            return frame
        if scan.whole and not scan.restamped:
            # no filter: a filter's part numbers are literals in the code Spark generates, so every step
            # would compile new code (50-100 ms at 1M rows; docs/benchmarks.md)
            return frame.drop(PART_COLUMN)
        sources = sorted(scan.targets)
        number = F.col(PART_COLUMN)
        contiguous = sources[-1] - sources[0] + 1 == len(sources)
        # one SQL expression each, not a Column per part: thousands of parts would be thousands of JVM calls
        frame = frame.where(number.between(sources[0], sources[-1]) if contiguous
                            else F.expr(f"{PART_COLUMN} IN ({', '.join(map(str, sources))})"))
        if scan.restamped:
            targets = F.expr(f"CAST(map_from_arrays(array({', '.join(map(str, sources))}), array("
                             + ", ".join(f"array({', '.join(map(str, scan.targets[s]))})" for s in sources)
                             + ")) AS MAP<BIGINT, ARRAY<BIGINT>>)")
            frame = frame.withColumn(PART_COLUMN, F.explode(F.element_at(targets, number))).withColumn(
                PART_TIMESTAMP, F.timestamp_seconds(F.col(PART_COLUMN) * F.lit(definition.length)))
        return frame.drop(PART_COLUMN)

    def read_table(self, definition: ObjectDef, state: ObjectState) -> DataFrame:
        if not state.table_folders:
            return self.empty(definition)
        return self.spark.read.schema(stored_schema(definition)).parquet(
            *[self.fs.uri(f) for f in state.table_folders])

    # -- writing -------------------------------------------------------------------------
    def new_folder(self, definition: ObjectDef) -> str:
        return f"data/{definition.id}/{uuid.uuid4().hex}"

    def discard(self, folder: str) -> None:
        """Delete a folder that nothing names, and its object's folder when that holds nothing else (the
        write of a refused first batch leaves no trace)."""
        self.fs.delete(folder)
        owner = folder.rsplit("/", 1)[0]
        if not self.fs.list(owner):
            self.fs.delete(owner)

    def stamp(self, definition: ObjectDef, subscript: int, frame: DataFrame) -> DataFrame:
        """``frame`` (the view's columns) with its part's PART_TIMESTAMP and part number."""
        return frame.withColumns({PART_TIMESTAMP: part_stamp(subscript * definition.length),     # one analysis
                                  PART_COLUMN: _constant(subscript).cast("bigint")})

    @staticmethod
    def stamp_run(definition: ObjectDef, frame: DataFrame) -> DataFrame:
        """``frame`` (the view's columns and each row's part in ``__part``) with PART_TIMESTAMP."""
        return frame.withColumn(PART_TIMESTAMP, F.timestamp_seconds(F.col(PART_COLUMN) * F.lit(definition.length)))

    def _checksum(self, schema: StructType) -> Column:
        key = schema.json()
        if key not in self._checksums:
            self._checksums[key] = content_checksum(schema)
        return self._checksums[key]

    @staticmethod
    def _embedded_hash(column: str, schema: StructType) -> tuple[Column, Column]:
        """Whether a row holds the embedded view's row, and that row's hash (as ``content_checksum`` hashes it)."""
        struct = F.col(quote_name(column))
        return struct.isNotNull(), row_hash([struct.getField(f.name) for f in schema.fields], schema)

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
        metrics = [F.count(F.lit(1)).alias("rows"), self._checksum(definition.schema).alias("checksum")]
        for n, (column, schema) in enumerate(embedded):
            present, hashed = self._embedded_hash(column, schema)
            metrics += [F.count(F.when(present, 1)).alias(f"rows{n}"),
                        hash_sum(hashed, present).alias(f"checksum{n}")]
        observed = Observation()
        stamped.observe(observed, *metrics).write.parquet(self.fs.uri(folder))
        got = observed.get
        counted: dict[str | None, Counted] = {None: Counted(int(got["rows"]), checksum_text(got["rows"], got["checksum"]))}
        for n, (column, _) in enumerate(embedded):
            counted[column] = Counted(int(got[f"rows{n}"]), checksum_text(got[f"rows{n}"], got[f"checksum{n}"]))
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
        ``stamp_run``ed, then any ``embedded`` struct columns) into one folder sorted by part, in one Spark
        job that also counts and
        hashes every part. Returns the folder ("" when no part has rows) and, for each part with rows,
        what it holds of the part itself (key None) and of each embedded view."""
        folder = self.new_folder(definition)
        by_part = Window.partitionBy(PART_COLUMN)
        stats = [F.count(F.lit(1)).over(by_part),
                 hash_sum(row_hash([F.col(quote_name(f.name)) for f in definition.schema.fields], definition.schema),
                          over=by_part)]
        for column, schema in embedded:
            present, hashed = self._embedded_hash(column, schema)
            stats += [F.count(F.when(present, 1)).over(by_part), hash_sum(hashed, present, by_part)]
        names = [f"__vdf_stat{n}" for n in range(len(stats))]
        observed = Observation()
        stamped.select("*", *[s.alias(n) for s, n in zip(stats, names)]) \
            .observe(observed, F.collect_set(F.struct(PART_COLUMN, *names)).alias("parts")) \
            .drop(*names).write.parquet(self.fs.uri(folder))
        parts: dict[int, dict[str | None, Counted]] = {}
        for row in observed.get["parts"]:
            values = list(row)
            keys = [None] + [column for column, _ in embedded]
            parts[int(values[0])] = {key: Counted(int(values[1 + 2 * k] or 0),
                                                  checksum_text(int(values[1 + 2 * k] or 0), values[2 + 2 * k]))
                                     for k, key in enumerate(keys)}
        if not parts:
            self.fs.delete(folder)
            return "", {}
        return folder, parts

    def forget(self, definition: ObjectDef) -> None:
        for key in [k for k in self.cache if k[0] == definition.id]:
            del self.cache[key]

    def write_batch(self, definition: ObjectDef, frame: DataFrame, folder: str) -> "Batch":
        """Write a stream batch into ``folder`` sorted by part, in one Spark job; returns its row count, the
        rows without a timestamp, and its first and last part (the counting of each part is left to
        ``part_counts``, needed only when it spans several)."""
        length = definition.length
        assert definition.timestamp_column is not None      # every stream has one
        number = F.expr(subscript_sql(quote_name(definition.timestamp_column), length))
        out = frame.withColumns({PART_TIMESTAMP: F.timestamp_seconds(number * F.lit(length)),
                                 PART_COLUMN: number}).sortWithinPartitions(PART_COLUMN)
        observed = Observation()
        out.observe(observed, F.count(F.lit(1)).alias("rows"), F.count(F.when(number.isNull(), 1)).alias("nulls"),
                    F.min(number).alias("first"), F.max(number).alias("last")).write.parquet(self.fs.uri(folder))
        got = observed.get
        return Batch(int(got["rows"]), int(got["nulls"]), got["first"], got["last"])

    def batch_columns(self, definition: ObjectDef, folder: str, columns: list[str]) -> DataFrame:
        """Some columns of a written stream batch with each row's part number (PART_COLUMN), read directly."""
        fields = {f.name: f for f in stored_schema(definition).fields}
        schema = StructType([fields[c] for c in columns] + [StructField(PART_COLUMN, LongType(), True)])
        return self.spark.read.schema(schema).parquet(self.fs.uri(folder))

    def part_counts(self, folder: str) -> dict[int, int]:
        """Rows per part of a written stream batch (one Spark job reading only the part numbers)."""
        counted = self.spark.read.schema(StructType([StructField(PART_COLUMN, LongType(), True)])) \
            .parquet(self.fs.uri(folder)).groupBy(PART_COLUMN).count().collect()
        return {int(row[PART_COLUMN]): int(row["count"]) for row in counted}

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
