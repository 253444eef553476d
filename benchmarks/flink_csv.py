"""Parquet parts as the CSV files Flink reads (PyFlink ships no Parquet format). pyarrow only, so that both
tools/flink_nexmark.py (in .venv-flink) and the latency run's feeder (benchmarks/nexmark_latency.py) use it."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq


def text_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its timestamps as strings."""
    return pa.schema([pa.field(f.name, pa.string() if pa.types.is_timestamp(f.type) else f.type) for f in schema])


def as_text_times(table: pa.Table) -> pa.Table:
    """Timestamps as Flink's CSV format reads them: ``2015-07-15 00:00:03.500800`` (UTC)."""
    for index, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            naive = table.column(index).cast(pa.timestamp("us"))
            table = table.set_column(index, field.name, pc.strftime(naive, format="%Y-%m-%d %H:%M:%S"))
    return table


def write_csv(sources: Iterable[str], schema: pa.Schema, target: str) -> None:
    """The rows of the Parquet files ``sources`` (of ``schema``), in order, as one CSV file without a header."""
    with open(target, "wb") as sink:
        writer = pcsv.CSVWriter(sink, text_schema(schema), write_options=pcsv.WriteOptions(include_header=False))
        for path in sources:
            writer.write_table(as_text_times(pq.read_table(path)))
        writer.close()
