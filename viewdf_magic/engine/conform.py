"""Making a batch fit a schema: a pandas or Spark frame, a CSV, Parquet or JSON file, cast to the
target's columns by name or by position; the column names the warehouse reserves."""

from __future__ import annotations

import functools
import json
import operator
import os
from typing import Callable
from urllib.parse import unquote

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.utils import is_remote
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from ..catalog.filesystem import qualify
from ..catalog.model import PART_TIMESTAMP
from ..errors import ViewDFError
from ..language.tokens import quote_name
from ..storage.slices import PART_COLUMN
from ..storage.spark_errors import SPARK_ERRORS, spark_error
from ..wording import agreeing

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json", ".jsonl": "json",
           ".ndjson": "json"}
ErrorAt = Callable[[str], ViewDFError]


def conform_by_name(frame: DataFrame, schema: StructType, error: ErrorAt) -> DataFrame:
    """Select and cast the schema's columns from ``frame``, matching names case-insensitively."""
    available = {name.lower(): name for name in frame.columns}
    wanted = {f.name.lower() for f in schema.fields}
    missing = [f.name for f in schema.fields if f.name.lower() not in available]
    extra = [name for name in frame.columns if name.lower() not in wanted]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {agreeing(len(missing), 'column', 'columns')} {', '.join(missing)}")
        if extra:
            parts.append(f"unexpected {agreeing(len(extra), 'column', 'columns')} {', '.join(extra)}")
        raise error(f"schema mismatch: {'; '.join(parts)} (expected {', '.join(schema.fieldNames())})")
    return _cast(frame, [(available[f.name.lower()], f) for f in schema.fields], error)


def target_fields(schema: StructType, columns: list[str] | None, error: ErrorAt) -> list[StructField]:
    """The fields a batch's columns fill, in order: the schema's, or the named ``columns``'."""
    if columns is None:
        return list(schema.fields)
    by_name = {f.name.lower(): f for f in schema.fields}
    unknown = [c for c in columns if c.lower() not in by_name]
    if unknown:
        raise error(f"schema mismatch: no {agreeing(len(unknown), 'column', 'columns')} {', '.join(unknown)} "
                    f"(columns are {', '.join(schema.fieldNames())})")
    return [by_name[c.lower()] for c in columns]


def conform_by_position(frame: DataFrame, schema: StructType, columns: list[str] | None,
                        error: ErrorAt) -> DataFrame:
    """Cast ``frame``'s columns, in order, to the schema's (or to the named ``columns``)."""
    fields = target_fields(schema, columns, error)
    if len(frame.columns) != len(fields):
        raise error(f"schema mismatch: {len(frame.columns)} values per row but {len(fields)} columns "
                    f"({', '.join(f.name for f in fields)})")
    renamed = frame.toDF(*[f"_c{k}" for k in range(len(fields))])
    cast = _cast(renamed, [(f"_c{k}", f) for k, f in enumerate(fields)], error)
    if columns is not None:   # columns not named are NULL
        cast = cast.select([F.col(f.name) if f.name in cast.columns else F.lit(None).cast(f.dataType).alias(f.name)
                            for f in schema.fields])
    return cast


def uncastable(frame: DataFrame, fields: list[StructField]) -> tuple[int, int] | None:
    """The row and column of ``frame``'s first value that its field's type rejects, or None; ``frame`` is a few
    rows (a VALUES list's) whose columns fill ``fields`` in order."""
    positional = frame.toDF(*[f"_c{k}" for k in range(len(fields))])
    flags = positional.select([_rejected(F.col(f"_c{k}"), f) for k, f in enumerate(fields)]).collect()
    return next(((r, k) for r, row in enumerate(flags) for k, bad in enumerate(row) if bad), None)


def _rejected(value: Column, target: StructField) -> Column:
    """Whether ``value`` is one that casting to ``target``'s type fails on (NULL casts to NULL)."""
    return value.isNotNull() & value.try_cast(target.dataType).isNull()


def _cast(frame: DataFrame, pairs: list, error: ErrorAt) -> DataFrame:
    try:
        return frame.select(_casts(is_remote(), tuple((source, target.json()) for source, target in pairs)))
    except SPARK_ERRORS as exc:
        raise error(f"schema mismatch: {spark_error(exc).message}") from None


@functools.lru_cache(maxsize=64)
def _casts(remote: bool, pairs: tuple[tuple[str, str], ...]) -> list[Column]:
    """The columns that cast each source column to its target field (JSON), built once: each Column call is a
    round trip to the JVM, a batch of many columns made hundreds (``remote``: Connect's Columns differ)."""
    return [F.col(quote_name(source)).cast((target := StructField.fromJson(json.loads(field))).dataType)
            .alias(target.name) for source, field in pairs]


def to_frame(spark: SparkSession, data: pd.DataFrame | DataFrame) -> DataFrame:
    """A pandas or Spark DataFrame as a Spark DataFrame."""
    if isinstance(data, pd.DataFrame):
        if data.empty:
            return spark.createDataFrame([], StructType([]))
        stamps = data.select_dtypes(include=["datetime", "datetimetz"]).columns
        # Spark keeps microseconds; truncating first keeps Arrow's safe conversion happy.
        return spark.createDataFrame(data.assign(**{c: data[c].dt.floor("us") for c in stamps}))
    if isinstance(data, DataFrame):
        return data
    raise ViewDFError(f"expected a pandas or Spark DataFrame, got {type(data).__name__}")


# pandas writes nanosecond timestamps to Parquet by default, and Spark reads none
NANOSECOND_HINT = ("; Spark cannot read nanosecond timestamps, which pandas writes by default: write the file "
                   "with DataFrame.to_parquet(path, coerce_timestamps='us'), or as CSV")


def _reading(path: str, fmt: str | None, options: dict[str, str]) -> tuple[str | None, dict[str, str]]:
    """The format of a file LOAD reads (None when it cannot tell) and the options it reads it with (keys in lower
    case): a malformed or ragged row is an error, not NULLs; a CSV file has a header, and all its columns are
    strings."""
    fmt = fmt or FORMATS.get(os.path.splitext(path)[1].lower())
    options = {k.lower(): v for k, v in options.items()}
    if fmt in ("csv", "json"):
        options.setdefault("mode", "FAILFAST")
    if fmt == "csv":
        options.setdefault("header", "true")
        options["inferschema"] = "false"
    return fmt, options


def read_file(spark: SparkSession, path: str, fmt: str | None, options: dict[str, str], schema: StructType,
              error: ErrorAt, files: list[str] | None = None) -> DataFrame:
    """Read a CSV, Parquet or JSON file (or folder; or only ``files``, found under ``path``) and conform it
    to ``schema`` by column name."""
    fmt, options = _reading(path if files is None or fmt or os.path.splitext(path)[1] else files[0], fmt, options)
    if fmt not in ("csv", "parquet", "json"):
        raise error("cannot tell the file's format from its name; add FORMAT csv, parquet or json")
    try:
        frame = spark.read.format(fmt).options(**options).load(files or qualify(path))
        if fmt == "csv" and options["header"].lower() == "false":
            return conform_by_position(frame, schema, None, error)
        if fmt == "csv":   # all CSV columns are strings; ANSI casts reject malformed values
            frame = frame.select([F.col(quote_name(c)).cast(StringType()) for c in frame.columns])
    except SPARK_ERRORS as exc:
        message = spark_error(exc).message
        if "TIMESTAMP(NANOS" in message:
            message += NANOSECOND_HINT
        raise error(f"cannot read '{path}': {message}") from None
    return conform_by_name(frame, schema, error)


def bad_line(spark: SparkSession, path: str, fmt: str | None, options: dict[str, str],
             schema: StructType) -> str | None:
    """Where the first bad row of a CSV file that LOAD read is, as ``line 4 of 'path'`` (the header is line 1):
    a row Spark cannot parse (a field missing or one too many) or one with a value its column's type rejects.

    None for other formats, for a multiLine CSV file (whose rows are not lines), when no row is bad, or when
    Spark fails to tell (the error being reported matters more). Each line is parsed on its own, with the
    file's options; lines are numbered by the block of the file they are in and their order in it."""
    fmt, options = _reading(path, fmt, options)
    if fmt != "csv" or options.get("multiline", "false").lower() == "true":
        return None
    try:
        return _bad_csv_line(spark, path, options, schema)
    except SPARK_ERRORS:
        return None


CORRUPT_COLUMN = "__vdf_corrupt"


def _bad_csv_line(spark: SparkSession, path: str, options: dict[str, str], schema: StructType) -> str | None:
    header = options["header"].lower() != "false"
    if header:   # conform_by_name matched the header's names to the schema's
        by_name = {f.name.lower(): f for f in schema.fields}
        fields = [by_name[c.lower()] for c in spark.read.format("csv").options(**options).load(qualify(path)).columns]
    else:
        fields = list(schema.fields)
    text = spark.read.format("text")
    if "linesep" in options:
        text = text.option("lineSep", options["linesep"])
    lines = text.load(qualify(path)).select(
        F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("id"), "value")
    rows = lines.filter(F.trim("value") != "")       # Spark skips blank lines, and comment lines
    if "comment" in options:
        rows = rows.filter(~F.col("value").startswith(options["comment"]))
    if header:       # the first row of each file
        first = rows.groupBy("file").agg(F.min(F.struct("block", "id")).alias("header"))
        rows = rows.join(first, "file").filter(F.struct("block", "id") > F.col("header"))
    names = [f"_c{k}" for k in range(len(fields))]
    parsed = rows.withColumn("row", F.from_csv(
        "value", ", ".join(f"{name} STRING" for name in [*names, CORRUPT_COLUMN]),
        {**options, "mode": "PERMISSIVE", "columnnameofcorruptrecord": CORRUPT_COLUMN}))
    bad = functools.reduce(operator.or_, [_rejected(F.col(f"row.{name}"), f) for name, f in zip(names, fields)],
                           F.col(f"row.{CORRUPT_COLUMN}").isNotNull())
    [[found]] = parsed.filter(bad).agg(F.min(F.struct("file", "block", "id"))).collect()
    if found is None:
        return None
    earlier = (F.col("block") < found.block) | ((F.col("block") == found.block) & (F.col("id") < found.id))
    line = lines.filter((F.col("file") == found.file) & earlier).count() + 1
    file = unquote(found.file)      # Spark gives a URI, in %-escapes
    return f"line {line} of '{path if file == qualify(path) else file}'"


def stream_schema_check(schema: StructType, error: ErrorAt) -> None:
    """Reject column names the warehouse reserves."""
    for f in schema.fields:
        if f.name.upper() in (PART_TIMESTAMP, PART_COLUMN.upper()):
            raise error(f"the column name {f.name} is reserved")
