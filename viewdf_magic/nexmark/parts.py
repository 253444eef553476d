"""Generated events laid out one file per time part, so that every system reads the same parts:
``<folder>/<stream>/part-<subscript>.parquet``, one file for every part from the first event's to
the last one's, empty where a stream has no event in a part (a micro-batch per part, an ingest per
part)."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .generator import SCHEMAS, NexmarkConfig, generate_chunks

if TYPE_CHECKING:          # Flink's virtualenv (tools/flink_nexmark.py) writes the parts and has no pyspark
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

STREAMS = tuple(SCHEMAS)


@dataclass(frozen=True)
class PartFiles:
    """Where the parts are: ``subscripts`` in order, each with one file per stream."""

    folder: str
    part_seconds: int
    subscripts: tuple[int, ...]

    def path(self, stream: str, subscript: int) -> str:
        """The Parquet file of ``stream``'s part ``subscript``."""
        return os.path.join(self.folder, stream, f"part-{subscript:012d}.parquet")

    def stream_folder(self, stream: str) -> str:
        """The folder holding every part file of ``stream``."""
        return os.path.join(self.folder, stream)

    def schema(self, spark: SparkSession, stream: str) -> StructType:
        """The schema of ``stream``'s first part's file, found once."""
        return _schema(spark, self.path(stream, self.subscripts[0]))

    def read(self, spark: SparkSession, stream: str, paths: Sequence[str] = ()) -> DataFrame:
        """``stream``'s part files ``paths`` (default: all of them) with ``schema``: like a file source's, it is
        given, not inferred at every read (a job of its own)."""
        return spark.read.schema(self.schema(spark, stream)).parquet(*(paths or [self.stream_folder(stream)]))


@functools.lru_cache(maxsize=64)
def _schema(spark: SparkSession, path: str) -> StructType:
    return spark.read.parquet(path).schema


def _subscripts(table: pa.Table, part_seconds: int) -> np.ndarray:
    micros = table.column("date_time").cast(pa.int64()).to_numpy()
    return micros // (part_seconds * 1_000_000)


def _complete_parts(config: NexmarkConfig, part_seconds: int) -> Iterator[tuple[int, dict[str, pa.Table]]]:
    """Each part's tables in order, cut from the generator's chunks (a part may span chunks)."""
    pending = {name: SCHEMAS[name].empty_table() for name in STREAMS}
    for chunk in generate_chunks(config):
        tables = {name: pa.concat_tables([pending[name], table]) for name, table in chunk.tables().items()}
        # events come in time order, so every part before the chunk's newest one is complete
        newest = max(int(_subscripts(table, part_seconds).max()) for table in tables.values() if table.num_rows)
        by_part = {name: _subscripts(table, part_seconds) for name, table in tables.items()}
        for subscript in sorted({int(s) for parts in by_part.values() for s in parts if s < newest}):
            yield subscript, {name: tables[name].filter(pa.array(by_part[name] == subscript)) for name in STREAMS}
        pending = {name: tables[name].filter(pa.array(by_part[name] == newest)) for name in STREAMS}
    if any(table.num_rows for table in pending.values()):
        newest = max(int(_subscripts(table, part_seconds).max()) for table in pending.values() if table.num_rows)
        yield newest, pending


def write_parts(config: NexmarkConfig, folder: str | os.PathLike[str], part_seconds: int) -> PartFiles:
    """Generate ``config``'s events and write them one Parquet file per stream and part. The files'
    modification times increase a second per part: Structured Streaming's file source takes files in
    that order, and files written within the same clock tick could otherwise come in any order."""
    folder = os.fspath(folder)
    for name in STREAMS:
        os.makedirs(os.path.join(folder, name), exist_ok=True)
    written: list[int] = []
    files = PartFiles(folder, part_seconds, ())
    for subscript, tables in _complete_parts(config, part_seconds):
        gap = range(written[-1] + 1, subscript) if written else range(0)
        for missing in (*gap, subscript):
            for name in STREAMS:
                table = tables[name] if missing == subscript else SCHEMAS[name].empty_table()
                pq.write_table(table, files.path(name, missing))
            written.append(missing)
    first = time.time_ns() - len(written) * 1_000_000_000
    for index, subscript in enumerate(written):
        for name in STREAMS:
            stamp = first + index * 1_000_000_000
            os.utime(files.path(name, subscript), ns=(stamp, stamp))
    return PartFiles(folder, part_seconds, tuple(written))
