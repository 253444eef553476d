"""Making a batch fit a schema: a pandas or Spark frame, a CSV, Parquet or JSON file, cast to the
target's columns by name or by position; the column names the warehouse reserves."""

from __future__ import annotations

import os
from typing import Callable

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructType

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


def conform_by_position(frame: DataFrame, schema: StructType, columns: list[str] | None,
                        error: ErrorAt) -> DataFrame:
    """Cast ``frame``'s columns, in order, to the schema's (or to the named ``columns``)."""
    fields = schema.fields
    if columns is not None:
        by_name = {f.name.lower(): f for f in fields}
        unknown = [c for c in columns if c.lower() not in by_name]
        if unknown:
            raise error(f"schema mismatch: no {agreeing(len(unknown), 'column', 'columns')} {', '.join(unknown)} "
                        f"(columns are {', '.join(schema.fieldNames())})")
        fields = [by_name[c.lower()] for c in columns]
    if len(frame.columns) != len(fields):
        raise error(f"schema mismatch: {len(frame.columns)} values per row but {len(fields)} columns "
                    f"({', '.join(f.name for f in fields)})")
    renamed = frame.toDF(*[f"_c{k}" for k in range(len(fields))])
    cast = _cast(renamed, [(f"_c{k}", f) for k, f in enumerate(fields)], error)
    if columns is not None:   # columns not named are NULL
        cast = cast.select([F.col(f.name) if f.name in cast.columns else F.lit(None).cast(f.dataType).alias(f.name)
                            for f in schema.fields])
    return cast


def _cast(frame: DataFrame, pairs: list, error: ErrorAt) -> DataFrame:
    try:
        return frame.select([F.col(quote_name(source)).cast(target.dataType).alias(target.name)
                             for source, target in pairs])
    except SPARK_ERRORS as exc:
        raise error(f"schema mismatch: {spark_error(exc).message}") from None


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


def read_file(spark: SparkSession, path: str, fmt: str | None, options: dict[str, str], schema: StructType,
              error: ErrorAt) -> DataFrame:
    """Read a CSV, Parquet or JSON file and conform it to ``schema`` by column name."""
    fmt = fmt or FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt not in ("csv", "parquet", "json"):
        raise error("cannot tell the file's format from its name; add FORMAT csv, parquet or json")
    options = {k.lower(): v for k, v in options.items()}
    reader = spark.read.format(fmt)
    if fmt in ("csv", "json"):
        options.setdefault("mode", "FAILFAST")     # a malformed or ragged row is an error, not NULLs
    if fmt == "csv":
        options.setdefault("header", "true")
        options["inferSchema"] = "false"
    for key, value in options.items():
        reader = reader.option(key, value)
    try:
        frame = reader.load(qualify(path))
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


def stream_schema_check(schema: StructType, error: ErrorAt) -> None:
    """Reject column names the warehouse reserves."""
    for f in schema.fields:
        if f.name.upper() in (PART_TIMESTAMP, PART_COLUMN.upper()):
            raise error(f"the column name {f.name} is reserved")
