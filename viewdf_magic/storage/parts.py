"""Part data as Parquet folders, written and read by Spark.

Every stored row of a stream or view carries its part's ``PART_TIMESTAMP`` as a
physical column (a constant per file, so Parquet stores it in a few bytes); a
read of many parts is then one plain scan. A folder is written under a fresh
unique name and only becomes part of the warehouse when the catalog entry that
names it is committed.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.column import Column
from pyspark.sql.types import LongType, MapType, StructField, StructType, TimestampType

from ..catalog.filesystem import FileSystem
from ..catalog.model import PART_TIMESTAMP, ObjectDef, ObjectState
from ..language.tokens import quote_name
from ..timeparts import subscript_sql

PART_COLUMN = "__part"


def content_checksum(schema: StructType) -> Column:
    """An order-independent hash of a part's rows (a sum of row hashes), so a recomputed part can be
    compared with the stored one without reading it back. NULL flags keep (NULL, 1) apart from (1, NULL)."""
    columns = [F.to_json(F.col(quote_name(f.name))) if isinstance(f.dataType, MapType) else F.col(quote_name(f.name))
               for f in schema.fields]
    row_hash = F.xxhash64(*columns, F.array(*[c.isNull() for c in columns]))
    return F.coalesce(F.sum(row_hash.cast("decimal(38,0)")), F.lit(0).cast("decimal(38,0)"))


def checksum_text(rows: int, content: object) -> str:
    """A part's recorded checksum: its row count and ``content_checksum``."""
    return f"{rows}:{content}"


EMPTY_CHECKSUM = checksum_text(0, 0)


def part_stamp(seconds: int) -> Column:
    """The part's PART_TIMESTAMP as a column whose value does not enter generated code.

    Spark inlines a primitive literal (a timestamp is a long) into the Java it generates, so a
    plain ``lit`` would give every part new code and a stage compile (about 0.1-0.2 s per step
    at 1M rows; docs/benchmarks.md). An array literal is passed to the code as an object instead,
    and the non-foldable index keeps constant folding from turning it back into a primitive."""
    index = F.lit(1) + F.lit(0) * F.spark_partition_id()
    return F.timestamp_seconds(F.element_at(F.array(F.lit(seconds)), index))


def part_fingerprint(subscript: Column) -> list[Column]:
    """Aggregates whose values (row count, sums of the halves of each row's part hash) match between
    two reads of a batch only if both put the same number of rows in every part."""
    hashed = F.xxhash64(subscript)
    return [F.count(F.lit(1)).alias("rows"), F.sum(F.shiftright(hashed, 32)).alias("hi"),
            F.sum(hashed.bitwiseAND(F.lit(0xFFFFFFFF))).alias("lo")]


def stored_schema(definition: ObjectDef) -> StructType:
    """The physical schema: the logical one plus PART_TIMESTAMP for partitioned objects."""
    schema = definition.schema
    if definition.partitioned:
        schema = StructType(schema.fields + [StructField(PART_TIMESTAMP, TimestampType(), True)])
    return schema


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
        folders = [f for s in wanted for f in state.parts[s].folders]
        return self.read_folders(definition, folders)

    def read_folders(self, definition: ObjectDef, folders: list[str]) -> DataFrame:
        if not folders:
            return self.empty(definition)
        return self.spark.read.schema(stored_schema(definition)).parquet(*[self.fs.uri(f) for f in folders])

    def read_table(self, definition: ObjectDef, state: ObjectState) -> DataFrame:
        return self.read_folders(definition, state.table_folders)

    # -- writing -------------------------------------------------------------------------
    def new_folder(self, definition: ObjectDef) -> str:
        return f"data/{definition.id}/{uuid.uuid4().hex}"

    def write_part(self, definition: ObjectDef, subscript: int, frame: DataFrame) -> tuple[str, int, str]:
        """Write one view part (``frame`` already has the view's columns); returns (folder, rows,
        checksum). An empty part writes no folder ("").

        With caching on, the part is computed into executor memory (a lazy local
        checkpoint, filled by the write job itself) and kept for the next steps
        that read it, so they neither recompute nor reread it.
        """
        folder = self.new_folder(definition)
        stamped = frame.withColumn(PART_TIMESTAMP, part_stamp(subscript * definition.length))
        if self.cache_size:
            stamped = stamped.localCheckpoint(eager=False)
        key = frame.schema.json()
        if key not in self._checksums:
            self._checksums[key] = content_checksum(frame.schema).alias("checksum")
        counted = Observation()
        stamped.observe(counted, F.count(F.lit(1)).alias("rows"), self._checksums[key]).write.parquet(self.fs.uri(folder))
        rows = int(counted.get["rows"])
        checksum = checksum_text(rows, counted.get["checksum"])
        if rows == 0:
            self.fs.delete(folder)
            return "", 0, checksum
        if self.cache_size:
            self.cache[(definition.id, subscript)] = stamped
            while len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        return folder, rows, checksum

    def write_range(self, definition: ObjectDef, frame: DataFrame) -> tuple[str, dict[int, tuple[int, str]]]:
        """Write a run of view parts (``frame`` has the view's columns and each row's part in ``__part``)
        into one folder, one sub-folder per part, in one job; a second job over the written files counts
        each part's rows and content hash. Returns the folder ("" when no part has rows) and each
        non-empty part's (rows, checksum)."""
        folder = self.new_folder(definition)
        uri = self.fs.uri(folder)
        length = definition.partition_length
        frame.withColumn(PART_TIMESTAMP, F.timestamp_seconds(F.col(PART_COLUMN) * F.lit(length))) \
            .write.partitionBy(PART_COLUMN).parquet(uri)
        schema = StructType(stored_schema(definition).fields + [StructField(PART_COLUMN, LongType(), True)])
        written = self.spark.read.schema(schema).parquet(uri)
        counted = written.groupBy(PART_COLUMN).agg(F.count(F.lit(1)).alias("rows"),
                                                   content_checksum(definition.schema).alias("checksum")).collect()
        parts = {int(row[PART_COLUMN]): (int(row["rows"]), checksum_text(int(row["rows"]), row["checksum"]))
                 for row in counted}
        if not parts:
            self.fs.delete(folder)
            return "", {}
        return folder, parts

    @staticmethod
    def range_folder(folder: str, subscript: int) -> str:
        """The sub-folder of one part written by ``write_range`` (or one part of a stream batch)."""
        return f"{folder}/{PART_COLUMN}={subscript}"

    def forget(self, definition: ObjectDef) -> None:
        for key in [k for k in self.cache if k[0] == definition.id]:
            del self.cache[key]

    def write_batch(self, definition: ObjectDef, frame: DataFrame, folder: str) -> tuple[int, int, int]:
        """Write a stream batch into ``folder``, one sub-folder per part (``__part=<subscript>``), in one job;
        returns the written rows' ``part_fingerprint``."""
        length = definition.length
        assert definition.timestamp_column is not None      # every stream has one
        out = frame.withColumn(PART_COLUMN, F.expr(subscript_sql(quote_name(definition.timestamp_column), length)))
        out = out.withColumn(PART_TIMESTAMP, F.timestamp_seconds(F.col(PART_COLUMN) * F.lit(length)))
        observed = Observation()
        out.observe(observed, *part_fingerprint(F.col(PART_COLUMN))).write.partitionBy(PART_COLUMN) \
            .parquet(self.fs.uri(folder))
        return observed.get["rows"], observed.get["hi"] or 0, observed.get["lo"] or 0

    def write_table(self, definition: ObjectDef, frame: DataFrame, folder: str) -> int:
        """Write dimension-table rows into ``folder``; returns the row count."""
        counted = Observation()
        frame.observe(counted, F.count(F.lit(1)).alias("rows")).write.parquet(self.fs.uri(folder))
        return int(counted.get["rows"])

    def delete_object(self, definition: ObjectDef) -> None:
        self.forget(definition)
        self.fs.delete(f"data/{definition.id}")
