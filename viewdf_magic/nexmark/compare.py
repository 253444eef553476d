"""Every system's rows keyed by the view part they belong to, and compared as multisets.

The batch queries, Structured Streaming and Flink return the batch query's columns, windows named
by a start or end column; a view's rows carry ``PART_TIMESTAMP`` instead (views.py says which window
a part holds). ``keyed`` turns the former into the latter's shape: a ``part`` column, then the view's
columns. Queries without windows have no part (NULL): q2 and q3 compare as the union of their
parts, and q4, whose part j is the result over every event before the end of part j, as its newest
part. q1's part is that of each bid's ``date_time``.

Not every system has closed every window when the input ends: a view part exists up to the newest
stream part, and Structured Streaming's watermark is the newest event's time. ``closed`` keeps the
windows every system has closed: those ending at or before the start of the newest stream part.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

UNKEYED = ("q2", "q3", "q4")


@dataclass(frozen=True)
class Windows:
    """The queries' window and slide and the streams' part, in seconds."""

    window_seconds: int
    slide_seconds: int
    part_seconds: int

    def view_length(self, query: str) -> int:
        """The partition length of the query's view in seconds: q5's is the slide, q7's and q8's the
        window, the others' the streams' part."""
        return {"q5": self.slide_seconds, "q7": self.window_seconds, "q8": self.window_seconds}.get(
            query, self.part_seconds)

    def window_column(self, query: str) -> str | None:
        """The column naming a row's window in the batch query's rows."""
        return {"q5": "starttime", "q7": "window_end", "q8": "starttime"}.get(query)

    def part_of(self, query: str, frame: DataFrame) -> Column:
        """The view part (its start) of each of the batch query's rows."""
        if query == "q1":
            length = self.part_seconds * 1_000_000
            return F.timestamp_micros(F.floor(F.unix_micros("date_time") / length) * length)
        if query == "q5":
            return frame["starttime"] + F.expr(f"INTERVAL {self.window_seconds - self.slide_seconds} SECONDS")
        column = self.window_column(query)
        return frame[column] if column else F.lit(None).cast("timestamp")

    def closing_offset(self, query: str) -> int:
        """Which stream part of a view part makes it: q7's part j is computed at its first stream part
        (offset 1: the part after the window it holds), every other view's at its last (offset 0)."""
        return 1 if query == "q7" else 0

    def last_closed_part(self, query: str, last_part_start: int) -> int:
        """The newest part (its start in epoch seconds) of ``query`` whose window every system has
        closed: the window ending at the start of the newest stream part."""
        return last_part_start - {"q5": self.slide_seconds, "q8": self.window_seconds}.get(query, 0)


def keyed(query: str, frame: DataFrame, windows: Windows) -> DataFrame:
    """The batch query's rows (or rows of its shape) as ``part`` and the view's columns."""
    column = windows.window_column(query)
    columns = [name for name in frame.columns if name != column]
    return frame.select(windows.part_of(query, frame).alias("part"), *columns)


def view_keyed(query: str, frame: DataFrame) -> DataFrame:
    """A view's rows (``SELECT * FROM view``) as ``part`` and its columns."""
    columns = [name for name in frame.columns if name != "PART_TIMESTAMP"]
    if query == "q4":
        frame = frame.where(F.col("PART_TIMESTAMP") == frame.agg(F.max("PART_TIMESTAMP")).collect()[0][0])
    part = F.lit(None).cast("timestamp") if query in UNKEYED else F.col("PART_TIMESTAMP")
    return frame.select(part.alias("part"), *columns)


def closed(query: str, frame: DataFrame, windows: Windows, last_part_start: int) -> DataFrame:
    """Keyed rows of the windows every system has closed (all rows of a query without windows)."""
    if query not in ("q5", "q7", "q8"):
        return frame
    return frame.where(F.unix_seconds("part") <= windows.last_closed_part(query, last_part_start))


def conform(frame: DataFrame, like: DataFrame) -> DataFrame:
    """``frame``'s columns, by position, cast to ``like``'s names and types."""
    return frame.select(*(F.col(f"`{name}`").cast(field.dataType).alias(field.name)
                          for name, field in zip(frame.columns, like.schema.fields)))


def _texts(like: DataFrame) -> StructType:
    """As many STRING columns as ``like`` has."""
    return StructType([StructField(f"c{index}", StringType()) for index in range(len(like.columns))])


def csv_frame(spark: SparkSession, folder: str, like: DataFrame) -> DataFrame:
    """CSV files without a header (Flink's filesystem sink) as a frame of ``like``'s columns and types."""
    return conform(spark.read.schema(_texts(like)).csv(folder), like)


@dataclass(frozen=True)
class Difference:
    """Rows of the expected multiset missing from the actual one, and rows the actual one has extra."""

    missing: int
    extra: int

    @property
    def equal(self) -> bool:
        return self.missing == 0 and self.extra == 0


def difference(expected: DataFrame, actual: DataFrame) -> Difference:
    """The two multisets' difference (``exceptAll`` both ways; ``actual`` conformed to ``expected``)."""
    actual = conform(actual, expected)
    return Difference(expected.exceptAll(actual).count(), actual.exceptAll(expected).count())
