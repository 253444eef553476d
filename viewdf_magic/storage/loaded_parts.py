"""Parquet files that a LOAD takes into a stream as they are: whether a file can be, and its rows per part.

A file whose columns are exactly the stream's, as Spark reads them, and whose rows all have a timestamp is
copied into the warehouse byte for byte instead of being read and written again by Spark
(``catalog.model.Slice``, ``...!``). Its rows' parts are computed from their timestamps when they are read;
here they are counted once: a row group whose timestamp statistics put every row in one part from its
metadata alone, any other from its timestamp column, read with pyarrow. Any other file is
read and written by Spark, as before.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql.types import (BinaryType, BooleanType, ByteType, DataType, DateType, DecimalType, DoubleType,
                               FloatType, IntegerType, LongType, ShortType, StringType, StructType, TimestampType)

LOADED_FILE = "part-00000.parquet"      # a loaded file's name in its folder
# 1900-01-01 in microseconds: how Spark reads older timestamps depends on the session's calendar rebase modes
EARLIEST = -2_208_988_800_000_000

_PLAIN: dict[pa.DataType, DataType] = {
    pa.bool_(): BooleanType(), pa.int8(): ByteType(), pa.int16(): ShortType(), pa.int32(): IntegerType(),
    pa.int64(): LongType(), pa.float32(): FloatType(), pa.float64(): DoubleType(), pa.string(): StringType(),
    pa.large_string(): StringType(), pa.binary(): BinaryType(), pa.large_binary(): BinaryType(),
    pa.date32(): DateType(),
}


def spark_type(column: pa.DataType, int96: bool = False) -> DataType | None:
    """The type Spark reads a flat Parquet column as, given pyarrow's type for it (``int96``: its physical type
    is INT96, Spark's default for timestamps, which pyarrow reads as zone-less nanoseconds); None for the types
    this module does not take as they are (nested, unsigned, nanosecond or zone-less timestamps, ...)."""
    if pa.types.is_decimal(column):
        return DecimalType(column.precision, column.scale)
    if pa.types.is_timestamp(column):        # an instant, in a unit Spark reads exactly
        return TimestampType() if int96 or (column.tz is not None and column.unit in ("ms", "us")) else None
    return _PLAIN.get(column)


def rows_per_part(uri: str, schema: StructType, timestamp: str, length: int) -> dict[int, int] | None:
    """The rows of each part (``length`` seconds, by column ``timestamp``) in the Parquet file at ``uri``, if it
    can be taken as it is: its columns are ``schema``'s, with the same names and the types Spark reads them
    as, and none of its rows lacks a timestamp. None otherwise, or if pyarrow cannot read it."""
    try:
        filesystem, path = pafs.FileSystem.from_uri(uri)
        with filesystem.open_input_file(path) as source:
            parquet = pq.ParquetFile(source)
            if not _same_columns(parquet, schema):
                return None
            column = parquet.schema_arrow.get_field_index(timestamp)
            unit = parquet.schema_arrow.field(column).type.unit
            counts: dict[int, int] = {}
            for group in range(parquet.metadata.num_row_groups):
                metadata = parquet.metadata.row_group(group)
                settled = row_group_part(metadata, column, unit, length)
                if settled is not None:
                    counts[settled] = counts.get(settled, 0) + metadata.num_rows
                    continue
                stamps = parquet.read_row_group(group, columns=[timestamp]).column(0)
                if stamps.null_count:
                    return None
                micros = microseconds(stamps)
                if micros.size and micros.min() < EARLIEST:
                    return None
                parts, rows = np.unique(part_numbers(micros, length), return_counts=True)
                for part, n in zip(parts.tolist(), rows.tolist()):
                    counts[part] = counts.get(part, 0) + n
            return counts
    except (OSError, ValueError, pa.ArrowException):
        return None


def row_group_part(group: pq.RowGroupMetaData, column: int, unit: str, length: int) -> int | None:
    """The part every row of a row group is in, when the timestamp column's statistics say so (no row without
    one, none before 1900, the least and the greatest in one part): its rows are then counted unread. None
    otherwise, or without statistics (INT96 has none)."""
    stats, scale = group.column(column).statistics, {"ms": 1_000, "us": 1}.get(unit)
    if (stats is None or scale is None or group.column(column).physical_type != "INT64" or not stats.has_min_max
            or not stats.has_null_count or stats.null_count):
        return None
    least = stats.min_raw * scale
    first, last = part_numbers(np.array([least, stats.max_raw * scale]), length).tolist()
    return first if least >= EARLIEST and first == last else None


def microseconds(stamps: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Timestamps as microseconds since the epoch, as Spark reads them: INT96's nanoseconds (read by pyarrow as
    nanosecond timestamps) rounded down, as Spark does, also before 1970."""
    if pa.types.is_timestamp(stamps.type) and stamps.type.unit == "ns":
        return np.floor_divide(pc.cast(stamps, pa.int64()).to_numpy(zero_copy_only=False), 1_000)
    return pc.cast(stamps, pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy(zero_copy_only=False)


def part_numbers(micros: np.ndarray, length: int) -> np.ndarray:
    """The part of each timestamp (microseconds since the epoch) in parts of ``length`` seconds."""
    return np.floor_divide(micros, length * 1_000_000)


def _same_columns(parquet: pq.ParquetFile, schema: StructType) -> bool:
    """Whether the file's columns are flat and are ``schema``'s fields: the same names and Spark types."""
    arrow = parquet.schema_arrow
    if len(parquet.schema) != len(arrow) or sorted(arrow.names) != sorted(schema.fieldNames()):
        return False
    wanted = {f.name: f.dataType for f in schema.fields}
    return all(spark_type(field.type, parquet.schema.column(k).physical_type == "INT96") == wanted[field.name]
               for k, field in enumerate(arrow))
